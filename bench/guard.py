"""Benchmark: the overhead of gradcheck.guard on a real training step (target < 2%).

The step is a 784-256-10 MLP (ReLU) on a batch of 64 in float32 on torch CPU: zero_grad,
forward, cross-entropy, backward, SGD step. Plain and guarded steps run in alternating blocks
on the same model, so drift on a shared machine hits both alike; the in-situ overhead is the
median over blocks of guarded/plain. A third column times the bare hook machinery (a no-op
tensor hook per parameter plus no-op step hooks), torch's cost of having hooks at all. A fourth
times the optimizer as ``gradcheck run`` guards it: a session with accumulation_steps unknown,
findings tallied, and ``Module.zero_grad`` watched.

On a busy machine the in-situ figure is noisy, so the guard's own cost is also measured in
absolute terms on a tiny model with the same 4 parameters, where the guard's Python is most of
the step; that cost divided by the MLP's median step time is the second estimate of the overhead.

    python bench/guard.py                 # 30 blocks of 50 steps
    python bench/guard.py --blocks 10     # quicker
    python bench/guard.py --threads 1     # single-threaded torch
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import time

SIZES = (784, 256, 10)
BATCH = 64


def build(torch):
    """A model, an optimizer and one step function; the step closes over a fixed batch."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(SIZES[0], SIZES[1]), torch.nn.ReLU(),
                                torch.nn.Linear(SIZES[1], SIZES[2]))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(BATCH, SIZES[0])
    y = torch.randint(0, SIZES[-1], (BATCH,))
    criterion = torch.nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()

    return model, optimizer, step


def time_block(step, steps: int) -> float:
    # NOTE: CPU time of this process, not wall time: on a shared machine other processes'
    # time slices would otherwise land in whichever block they happen to interrupt.
    start = time.process_time()
    for _ in range(steps):
        step()
    return (time.process_time() - start) / steps


def bare_hooks(model, optimizer):
    """No-op hooks of the same number and kind as the guard's; returns their handles."""
    handles = [p.register_hook(lambda grad: None) for p in model.parameters()]
    handles.append(optimizer.register_step_pre_hook(lambda opt, args, kwargs: None))
    handles.append(optimizer.register_step_post_hook(lambda opt, args, kwargs: None))
    return handles


def paired_overhead(plain: list[float], other: list[float]) -> float:
    """Median over blocks of other/plain - 1, in percent (adjacent blocks are paired)."""
    return 100 * (statistics.median(o / p for o, p in zip(other, plain)) - 1)


@contextlib.contextmanager
def session_guard(optimizer):
    """The optimizer guarded the way `gradcheck run` guards it."""
    from gradcheck.runtime.session import GuardSession

    session = GuardSession(action="warn")
    session.watch(optimizer)
    session.see_module_resets()
    try:
        yield session
    finally:
        session.finish()


def absolute_guard_cost(torch, wrap, steps: int) -> float:
    """Seconds ``wrap`` (a guard) adds to one step, measured where torch's own work is tiny."""
    optimizer, step = build_tiny(torch)
    plain, guarded = [], []
    for _ in range(31):
        plain.append(time_block(step, steps))
        with wrap(optimizer):
            guarded.append(time_block(step, steps))
    return statistics.median(g - p for g, p in zip(guarded, plain))


def build_tiny(torch):
    # as many parameters as the MLP (4), so the guard does the same bookkeeping
    model = torch.nn.Sequential(torch.nn.Linear(1, 1), torch.nn.Linear(1, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.ones(1, 1)

    def step():
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()

    return optimizer, step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=30)
    parser.add_argument("--steps", type=int, default=50, help="steps per block")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    args = parser.parse_args()

    import torch

    from gradcheck import guard

    if args.threads:
        torch.set_num_threads(args.threads)
    model, optimizer, step = build(torch)
    for _ in range(20):  # warm up allocator and kernels
        step()
    plain, guarded, hooked, session = [], [], [], []
    for _ in range(args.blocks):
        plain.append(time_block(step, args.steps))
        with guard(optimizer):
            guarded.append(time_block(step, args.steps))
        handles = bare_hooks(model, optimizer)
        hooked.append(time_block(step, args.steps))
        for handle in handles:
            handle.remove()
        with session_guard(optimizer):
            session.append(time_block(step, args.steps))
    base = statistics.median(plain)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"{args.blocks} blocks x {args.steps} steps, MLP {SIZES}, batch {BATCH}, float32")
    rows = (("plain", plain), ("guard", guarded), ("no-op hooks", hooked),
            ("gradcheck run", session))
    for name, times in rows:
        print(f"  {name:<12} median {statistics.median(times) * 1e6:8.1f} us/step  "
              f"in-situ overhead {paired_overhead(plain, times):+6.2f}%")
    for name, wrap in (("guard", guard), ("gradcheck run", session_guard)):
        cost = absolute_guard_cost(torch, wrap, steps=300)
        print(f"  {name} bookkeeping {cost * 1e6:.1f} us/step (tiny 4-parameter model) = "
              f"{100 * cost / base:.2f}% of the MLP step")


if __name__ == "__main__":
    main()
