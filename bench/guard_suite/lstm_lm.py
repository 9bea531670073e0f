# An LSTM language model with truncated back-propagation through time: the hidden state is
# detached between segments, gradients clipped. --bug zero-before-step resets the gradients
# between backward() and step().
import argparse

import torch
import torch.nn.functional as F
from torch import nn


class LanguageModel(nn.Module):
    def __init__(self, vocabulary=50, width=32):
        super().__init__()
        self.embed = nn.Embedding(vocabulary, width)
        self.lstm = nn.LSTM(width, width, num_layers=2, batch_first=True)
        self.out = nn.Linear(width, vocabulary)

    def forward(self, tokens, hidden):
        output, hidden = self.lstm(self.embed(tokens), hidden)
        return self.out(output), hidden


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--segments", type=int, default=6)
    parser.add_argument("--bug", default="none", choices=["none", "zero-before-step"])
    args = parser.parse_args()
    torch.manual_seed(0)
    model = LanguageModel()
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    stream = torch.randint(0, 50, (4, 20 * args.segments + 1))
    hidden = None
    for segment in range(args.segments):
        chunk = stream[:, segment * 20: segment * 20 + 21]
        if hidden is not None:
            hidden = tuple(h.detach() for h in hidden)
        model.zero_grad()
        logits, hidden = model(chunk[:, :-1], hidden)
        F.cross_entropy(logits.reshape(-1, 50), chunk[:, 1:].reshape(-1)).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        if args.bug == "zero-before-step":
            optimizer.zero_grad()  # gradcheck: wiped_gradients
        optimizer.step()


if __name__ == "__main__":
    main()
