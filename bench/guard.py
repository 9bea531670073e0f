"""Benchmark: what the run-time guard costs a real training step, side by side in one process.

Workloads (torch on the CPU, float32):

- ``gpt``: a small GPT at nanoGPT's CPU settings for Shakespeare characters (4 layers, 4 heads,
  128 wide, context 64, batch 12, vocabulary 65, no dropout): AdamW, clip_grad_norm_(1.0),
  zero_grad(set_to_none=True). Target: at most 2% over the plain step.
- ``tiny``: a 784-256-10 ReLU MLP on a batch of 64 with SGD. Target: at most 5%.

Variants, run in alternating blocks on the same model so that drift on a shared machine hits
all alike: ``plain``; ``guard`` (``gradcheck.guard`` on the optimizer); ``gradcheck run`` (a
guard session as ``gradcheck run`` installs it: every parameter in the ledger, torch's entry
points wrapped, accumulation steps unknown). The overhead of a variant is the median over blocks
of its time over the plain block's beside it, minus one. Times are CPU time of this process (on
a shared machine, other processes' time slices would otherwise land in whichever block they
interrupt).

    python bench/guard.py                          # both workloads, 20 blocks each
    python bench/guard.py --workload tiny --blocks 40
    python bench/guard.py --threads 1              # single-threaded torch
"""
from __future__ import annotations

import argparse
import contextlib
import math
import statistics
import time

GPT = {"layers": 4, "heads": 4, "width": 128, "context": 64, "batch": 12, "vocabulary": 65}
GPT_SKELETON = {**GPT, "width": 8, "context": 2, "batch": 1, "vocabulary": 3}


def build_gpt(torch, shape=GPT):
    """nanoGPT's model, written out small: pre-norm blocks, causal attention, tied embeddings."""
    nn, functional = torch.nn, torch.nn.functional
    width, heads, context = shape["width"], shape["heads"], shape["context"]

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv, self.project = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                     nn.Linear(4 * width, width))

        def forward(self, x):
            batch, length, _ = x.shape
            q, k, v = self.qkv(self.norm1(x)).split(width, dim=2)
            q, k, v = (t.view(batch, length, heads, width // heads).transpose(1, 2)
                       for t in (q, k, v))
            attended = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.project(attended.transpose(1, 2).reshape(batch, length, width))
            return x + self.mlp(self.norm2(x))

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens = nn.Embedding(shape["vocabulary"], width)
            self.positions = nn.Embedding(context, width)
            self.blocks = nn.Sequential(*[Block() for _ in range(shape["layers"])])
            self.norm = nn.LayerNorm(width)
            self.head = nn.Linear(width, shape["vocabulary"], bias=False)
            self.head.weight = self.tokens.weight  # tied, as in nanoGPT

        def forward(self, index):
            positions = torch.arange(index.shape[1])
            x = self.blocks(self.tokens(index) + self.positions(positions))
            return self.head(self.norm(x))

    torch.manual_seed(0)
    model = Gpt()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99),
                                  weight_decay=0.1)
    data = torch.randint(0, shape["vocabulary"], (shape["batch"], context + 1))
    x, y = data[:, :-1], data[:, 1:]

    def step():
        logits = model(x)
        loss = functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return model, optimizer, step


def build_tiny(torch, sizes=(784, 256, 10, 64)):
    torch.manual_seed(0)
    inputs, hidden, classes, batch = sizes
    model = torch.nn.Sequential(torch.nn.Linear(inputs, hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, classes))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(batch, inputs), torch.randint(0, classes, (batch,))

    def step():
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    return model, optimizer, step


# builder, target in percent, and the same parameter tensors at tiny sizes: there torch's own
# work is small, so the difference a guard makes is its bookkeeping alone, a steadier figure
WORKLOADS = {
    "gpt": (build_gpt, 2.0, lambda torch: build_gpt(torch, GPT_SKELETON)),
    "tiny": (build_tiny, 5.0, lambda torch: build_tiny(torch, (2, 2, 2, 1))),
}


@contextlib.contextmanager
def plain(model, optimizer):
    yield


@contextlib.contextmanager
def standalone_guard(model, optimizer):
    from gradcheck import guard

    with guard(optimizer, accumulation_steps=1):
        yield


@contextlib.contextmanager
def session_guard(model, optimizer):
    """The optimizer and every parameter guarded as under ``gradcheck run``."""
    from gradcheck.runtime.session import GuardSession

    session = GuardSession(action="warn").install()
    for name, param in model.named_parameters():
        session.ledger.track(param, name)
    session.watch(optimizer)
    try:
        yield
    finally:
        if len(session.tally):
            raise AssertionError(f"the benchmark's loop is correct, yet: {session.tally.render()}")
        session.finish()


VARIANTS = {"plain": plain, "guard": standalone_guard, "gradcheck run": session_guard}


def time_block(step, steps: int) -> float:
    start = time.process_time()
    for _ in range(steps):
        step()
    return (time.process_time() - start) / steps


def measure(build, torch, blocks: int, steps: int) -> dict[str, list[float]]:
    model, optimizer, step = build(torch)
    for _ in range(5):  # warm up allocator and kernels
        step()
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    names = list(VARIANTS)
    for block in range(blocks):
        # NOTE: a different variant goes first in each block, so that no variant always runs
        # right after a context switch, or always last
        for name in names[block % len(names):] + names[:block % len(names)]:
            with VARIANTS[name](model, optimizer):
                for _ in range(3):  # the first steps under a guard, outside the timing
                    step()
                times[name].append(time_block(step, steps))
    return times


def paired_overhead(plain_times: list[float], other: list[float]) -> float:
    """Median over blocks of other/plain - 1, in percent (adjacent blocks are paired)."""
    return 100 * (statistics.median(o / p for o, p in zip(other, plain_times)) - 1)


def spread(plain_times: list[float], other: list[float]) -> float:
    """Half the interquartile range of the paired ratios, in percent: the noise of the median."""
    ratios = sorted(o / p for o, p in zip(other, plain_times))
    q1, q3 = statistics.quantiles(ratios, n=4)[0], statistics.quantiles(ratios, n=4)[2]
    return 100 * (q3 - q1) / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=[*WORKLOADS, "both"], default="both")
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--steps", type=int, default=0, help="steps per block (0: by workload)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    args = parser.parse_args()

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, {args.blocks} blocks, "
          "CPU time per step")
    for workload in WORKLOADS if args.workload == "both" else [args.workload]:
        steps = args.steps or (5 if workload == "gpt" else 200)
        build, target, skeleton = WORKLOADS[workload]
        times = measure(build, torch, args.blocks, steps)
        bare = measure(skeleton, torch, args.blocks, 200)
        print(f"{workload}: {steps} steps per block, target <= {target:g}%")
        for name, values in times.items():
            line = f"  {name:<14} median {statistics.median(values) * 1e3:8.3f} ms/step"
            if name != "plain":
                overhead = paired_overhead(times["plain"], values)
                verdict = "met" if overhead <= target else "MISSED"
                line += (f"  overhead {overhead:+6.2f}% (+/- {spread(times['plain'], values):.2f})"
                         f"  {verdict}")
                cost = statistics.median(g - p for g, p in zip(bare[name], bare["plain"]))
                line += (f"; bookkeeping {cost * 1e6:.1f} us/step = "
                         f"{100 * cost / statistics.median(times['plain']):.2f}%")
            print(line)
        if not math.isfinite(statistics.median(times["plain"])):
            raise SystemExit("no time measured")


if __name__ == "__main__":
    main()
