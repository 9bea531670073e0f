"""Our full and fast modes against torch.autograd.gradcheck (slow and fast), side by side.

Run:  OPENBLAS_NUM_THREADS=1 python bench/checker.py [--repeat 5]

For each function it prints the median CPU time and the median wall time of ``--repeat``
runs (after one warm-up), the forward and backward evaluation counts, and the verdict. Our
counts are calls, then the points evaluated inside batched calls after the slash; torch's
are calls. Both checkers run single-threaded (torch.set_num_threads(1)) on float64 inputs.
"ours full two-sided" is full mode with the screen of earlier versions (screen="two-sided").
"""
from __future__ import annotations

import argparse
import statistics
import time
import warnings

import torch

from gradcheck.checks import check_grad
from gradcheck.checks.planted import ROWS, torch_op


def cases():
    gen = torch.Generator().manual_seed(0)

    def randn(*shape, grad=True):
        return torch.randn(*shape, generator=gen, dtype=torch.float64, requires_grad=grad)

    weight = randn(16, 3072, grad=False)
    w1, w2 = randn(32, 64) * 0.2, randn(64, 10) * 0.2
    w1, w2 = w1.detach().requires_grad_(), w2.detach().requires_grad_()
    return [
        ("linear map 3072 -> 16", lambda x: weight @ x, (randn(3072),)),
        ("elementwise mish, n=1000",
         lambda x: x * torch.tanh(torch.nn.functional.softplus(x)), (randn(1000),)),
        ("MLP 8x32 -> 64 -> 10 (x, W1, W2)",
         lambda x, a, b: torch.tanh(x @ a) @ b, (randn(8, 32), w1, w2)),
        ("small: softmax(x @ W), x 4x8, W 8x8", lambda x, a: torch.softmax(x @ a, -1),
         (randn(4, 8), randn(8, 8))),
        ("small: elementwise mish, n=64",
         lambda x: x * torch.tanh(torch.nn.functional.softplus(x)), (randn(64),)),
        ("planted bug: 1 entry 25% off, n=1000",
         torch_op(ROWS["one entry of 1000 25% off"], buggy=True), (randn(1000),)),
    ]


class Counter:
    """Counts forward calls of fn and calls of torch.autograd.grad (torch's backward passes)."""

    def __init__(self, fn):
        self.fn, self.forward, self.backward = fn, 0, 0

    def __call__(self, *args):
        self.forward += 1
        return self.fn(*args)

    def run_torch(self, inputs, fast: bool) -> bool:
        original = torch.autograd.grad

        def counted(*args, **kwargs):
            self.backward += 1
            return original(*args, **kwargs)

        torch.autograd.grad = counted
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return torch.autograd.gradcheck(self, inputs, fast_mode=fast,
                                                raise_exception=False)
        finally:
            torch.autograd.grad = original


def run_ours(fn, inputs, mode, **options):
    result = check_grad(fn, inputs, mode=mode, raise_on_failure=False, taylor=False, **options)
    ev = result.evaluations
    return (result.verdict, f"{ev['forward']}/{ev['forward_points']}",
            f"{ev['backward']}/{ev['backward_points']}")


def run_torch(fn, inputs, fast):
    counter = Counter(fn)
    verdict = "passed" if counter.run_torch(inputs, fast) else "failed"
    return verdict, str(counter.forward), counter.backward


def median_times(run, repeat):
    """Median CPU and wall time of ``repeat`` runs. On a shared machine wall time also
    measures the neighbours; with one torch thread, CPU time is the work this checker did."""
    run()  # warm-up: imports, vmap tracing caches, allocator
    cpu, wall, out = [], [], None
    for _ in range(repeat):
        start, start_wall = time.process_time(), time.perf_counter()
        out = run()
        cpu.append(time.process_time() - start)
        wall.append(time.perf_counter() - start_wall)
    return statistics.median(cpu), statistics.median(wall), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    checkers = [
        ("ours full", lambda f, x: run_ours(f, x, "full")),
        ("ours full two-sided", lambda f, x: run_ours(f, x, "full", screen="two-sided")),
        ("ours fast", lambda f, x: run_ours(f, x, "fast")),
        ("torch slow", lambda f, x: run_torch(f, x, False)),
        ("torch fast", lambda f, x: run_torch(f, x, True)),
    ]
    print(f"torch {torch.__version__}, 1 thread, medians of {args.repeat} runs\n")
    print("| function | checker | CPU (s) | wall (s) | forward calls/points "
          "| backward calls/points | verdict |")
    print("|---|---|---:|---:|---:|---:|---|")
    for name, fn, inputs in cases():
        timings = {}
        for label, run in checkers:
            cpu, wall, (verdict, forward, backward) = median_times(
                lambda run=run, fn=fn, inputs=inputs: run(fn, inputs), args.repeat)
            timings[label] = cpu, wall
            print(f"| {name} | {label} | {cpu:.4f} | {wall:.4f} | {forward} | {backward} "
                  f"| {verdict} |")
        slow, ours = timings["torch slow"], timings["ours full"]
        print(f"| {name} | torch slow / ours full | {slow[0] / ours[0]:.1f}x "
              f"| {slow[1] / ours[1]:.1f}x | | | |")


if __name__ == "__main__":
    main()
