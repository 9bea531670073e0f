# Full-batch regression with LBFGS: the closure resets, computes the loss and runs backward(), and
# LBFGS evaluates it several times per step. --bug no-reset forgets the reset in the closure.
import argparse

import torch
from torch import nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--bug", default="none", choices=["none", "no-reset"])
    args = parser.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 1))
    x = torch.randn(64, 3)
    y = x.sum(dim=1, keepdim=True).sin()
    optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=5)

    def closure():
        if args.bug != "no-reset":
            optimizer.zero_grad()
        loss = (model(x) - y).pow(2).mean()
        loss.backward()
        return loss

    for _ in range(args.steps):
        optimizer.step(closure)  # gradcheck: stale_gradients


if __name__ == "__main__":
    main()
