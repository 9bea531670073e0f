# accelerate's documented accumulation loop (gradient_accumulation_steps=4). --bug
# zero-before-backward resets through the inner optimizer before each backward: accelerate gates
# its wrapper's zero_grad() while it accumulates, not this one, so every micro-batch but the last
# of each window is thrown away.
import argparse

import accelerate
import torch
import torch.nn.functional as F


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bug", default="none", choices=["none", "zero-before-backward"])
    args = parser.parse_args()
    torch.manual_seed(0)
    accelerator = accelerate.Accelerator(cpu=True, gradient_accumulation_steps=4)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.utils.data.TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    model, optimizer, loader = accelerator.prepare(
        model, optimizer, torch.utils.data.DataLoader(data, batch_size=2))
    for x, y in loader:
        with accelerator.accumulate(model):
            if args.bug != "none":
                optimizer.optimizer.zero_grad()  # gradcheck: discarded_accumulation
            accelerator.backward(F.mse_loss(model(x), y))
            optimizer.step()
            optimizer.zero_grad()


if __name__ == "__main__":
    main()
