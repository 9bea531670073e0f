# A DDP script written for torchrun (the process group from the environment), gloo on the CPU.
# --bug no-zero-grad drops the reset; --bug bare-call calls model.module(x) every other step, so
# those steps' gradients are never averaged across ranks.
import argparse

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--bug", default="none", choices=["none", "no-zero-grad", "bare-call"])
    args = parser.parse_args()
    dist.init_process_group("gloo")
    torch.manual_seed(dist.get_rank())
    torch.set_num_threads(1)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(args.steps):
        x, y = torch.randn(4, 8), torch.randn(4, 1)
        forward = model.module if args.bug == "bare-call" and step % 2 else model
        F.mse_loss(forward(x), y).backward()
        optimizer.step()  # gradcheck: stale_gradients gradcheck: unsynced_gradients
        if args.bug != "no-zero-grad":
            optimizer.zero_grad()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
