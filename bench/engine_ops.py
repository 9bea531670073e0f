"""Per-op overhead on tiny tensors: the reference engine next to torch CPU eager.

Run: python bench/engine_ops.py [--repeats 7] [--number 2000]; `python bench/engine.py` runs
it too, after the MLP step. Results: docs/bench-engine.md.
Prints a markdown table of median microseconds per call and the engine/torch ratio.
"""
from __future__ import annotations

import argparse
import statistics
import time

import gradcheck.ref as ref


def _cases(m):
    a, b = m.randn(4, 4), m.randn(4, 4)
    w = m.randn(4, 4, requires_grad=True)
    x = m.randn(4, 4)

    def chain():
        loss = ((x @ w).relu() * 2 + 1).sum()
        loss.backward()
        w.grad = None

    return {
        "add 4x4": lambda: a + b,
        "mul 4x4": lambda: a * b,
        "mul by scalar": lambda: a * 2.0,
        "matmul 4x4": lambda: a @ b,
        "sum 4x4": lambda: a.sum(),
        "relu 4x4": lambda: a.relu(),
        "mul 4x4 (records graph)": lambda: w * b,
        "add_ in place (no_grad)": lambda: a.add_(b, alpha=0.0),
        "forward+backward chain (5 ops)": chain,
    }


def _per_call_us(fn, number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number * 1e6


def _side_by_side(ours, theirs, number: int, repeats: int) -> tuple[float, float]:
    """Medians per call; the two engines alternate so load changes hit both alike."""
    ours(), theirs()  # warm up caches and lazy imports
    mine, torch_s = [], []
    for _ in range(repeats):
        mine.append(_per_call_us(ours, number))
        torch_s.append(_per_call_us(theirs, number))
    return statistics.median(mine), statistics.median(torch_s)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--number", type=int, default=2000)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    ours, theirs = _cases(ref), _cases(torch)
    print(f"torch {torch.__version__}, medians of {args.repeats} x {args.number} calls\n")
    print("| op | engine (us) | torch (us) | engine / torch |")
    print("|---|---:|---:|---:|")
    for name in ours:
        e, t = _side_by_side(ours[name], theirs[name], args.number, args.repeats)
        print(f"| {name} | {e:.2f} | {t:.2f} | {e / t:.2f}x |")


if __name__ == "__main__":
    main()
