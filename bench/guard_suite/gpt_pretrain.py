# A small GPT pre-trained on random characters at CPU settings (4 layers, 4 heads, 128 wide,
# context 64), AdamW, gradient clipping, --accumulation micro-batches per step. --bug plants one
# mistake; without it the loop is correct.
import argparse

import torch
import torch.nn.functional as F
from torch import nn


class Gpt(nn.Module):
    def __init__(self, vocabulary=65, width=128, layers=4, heads=4, context=64):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocabulary, width), nn.Embedding(context, width)
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, vocabulary)

    def forward(self, index):
        length = index.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(length)
        x = self.tokens(index) + self.positions(torch.arange(length))
        return self.head(self.blocks(x, mask=mask, is_causal=True))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--accumulation", type=int, default=2)
    parser.add_argument("--bug", default="none",
                        choices=["none", "no-zero-grad", "zero-every-micro-batch", "double-step"])
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Gpt()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    for _ in range(args.steps):
        for _ in range(args.accumulation):
            data = torch.randint(0, 65, (12, 65))
            if args.bug == "zero-every-micro-batch":
                optimizer.zero_grad(set_to_none=True)  # gradcheck: discarded_accumulation
            logits = model(data[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, 65), data[:, 1:].reshape(-1))
            (loss / args.accumulation).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()  # gradcheck: stale_gradients
        if args.bug == "double-step":
            optimizer.step()  # gradcheck: repeated_step
        if args.bug != "no-zero-grad":
            optimizer.zero_grad(set_to_none=True)


if __name__ == "__main__":
    main()
