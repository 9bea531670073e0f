"""Benchmark: what the guard's per-step DDP comparison costs, two gloo ranks on the CPU, side by side.

Two processes (``torch.multiprocessing.spawn``, gloo, one torch thread each) train the same
workloads as ``bench/guard.py`` (a small GPT at nanoGPT's CPU settings, a 784-256-10 MLP), each
wrapped in ``DistributedDataParallel``, each rank on its own batch. Variants, in alternating
blocks on the same model (both ranks run the same block at the same time):

- ``plain``: no guard;
- ``gradcheck run, no DDP check``: a guard session as ``gradcheck run`` installs it, told nothing
  of the DDP model, so it never talks to the other rank;
- ``gradcheck run``: the same session with the DDP model, as ``gradcheck run`` sees it: before each
  step, the gradients' digests go through one all-reduce on the guard's own gloo group.

Times are per step on rank 0: wall-clock (what training waits for) and the CPU time of the
whole process, gloo's threads included (what the check takes from other work on a busy
machine). The overhead of a variant is the median over blocks of its time over the plain
block's beside it, minus one; "DDP check" is the last variant over the one before it.

    python bench/guard_ddp.py                       # both workloads, 20 blocks each
    python bench/guard_ddp.py --workload tiny --blocks 40
    python bench/guard_ddp.py --alone 0             # a long run: 8 steps per all-reduce

Each block is a fresh guard session, whose first ``--alone`` steps (16, as in ``gradcheck run``)
each get an all-reduce of their own; ``--alone 0`` measures the steady state of a long run.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import guard as single  # bench/guard.py: the workloads and the statistics

STEPS = {"gpt": 5, "tiny": 200}


def build(torch, workload: str, rank: int):
    """The workload's model in DDP, its optimizer, and one training step through the wrapper."""
    builder = single.WORKLOADS[workload][0]
    model, optimizer, _ = builder(torch)  # the same initial weights on every rank
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    generator = torch.Generator().manual_seed(rank)  # each rank its own batch
    functional = torch.nn.functional
    if workload == "gpt":
        shape = single.GPT
        data = torch.randint(0, shape["vocabulary"], (shape["batch"], shape["context"] + 1),
                             generator=generator)
        x, y = data[:, :-1], data[:, 1:]

        def step():
            logits = ddp(x)
            functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)).backward()
            torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    else:
        x = torch.randn(64, 784, generator=generator)
        y = torch.randint(0, 10, (64,), generator=generator)

        def step():
            optimizer.zero_grad()
            functional.cross_entropy(ddp(x), y).backward()
            optimizer.step()

    return ddp, optimizer, step


@contextlib.contextmanager
def plain(ddp, optimizer):
    yield


def session(with_ddp: bool):
    @contextlib.contextmanager
    def guarded(ddp, optimizer):
        from gradcheck.runtime.session import GuardSession

        guard = GuardSession(action="warn").install()
        for name, param in ddp.module.named_parameters():
            guard.ledger.track(param, name)
        guard.watch(optimizer)
        if with_ddp:
            guard.consistency.add_model(ddp)  # both ranks at once: opens the guard's gloo group
        try:
            yield
        finally:
            problems = guard.tally.render()
            notes = list(guard.consistency.notes)
            guard.finish()
            if problems or notes or guard.consistency.notes:
                raise AssertionError(f"the benchmark's loop is correct, yet: {problems} "
                                     f"{notes + guard.consistency.notes}")

    return guarded


VARIANTS = {"plain": plain, "gradcheck run, no DDP check": session(False),
            "gradcheck run": session(True)}


def time_block(step, steps: int) -> tuple[float, float]:
    """Wall-clock and CPU seconds per step."""
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps, (time.process_time() - cpu) / steps


def measure(torch, workload: str, rank: int, blocks: int, steps: int) -> dict[str, list]:
    """(wall, CPU) seconds per step of each block, by variant."""
    ddp, optimizer, step = build(torch, workload, rank)
    for _ in range(5):  # warm up allocator, kernels and DDP's buckets
        step()
    times: dict[str, list] = {name: [] for name in VARIANTS}
    names = list(VARIANTS)
    for block in range(blocks):
        for name in names[block % len(names):] + names[:block % len(names)]:
            with VARIANTS[name](ddp, optimizer):
                for _ in range(3):  # the first steps under a guard, outside the timing
                    step()
                times[name].append(time_block(step, steps))
    return times


def worker(rank: int, args: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist

    from gradcheck.runtime import channel

    torch.set_num_threads(1)
    channel.ALONE = args.alone
    dist.init_process_group("gloo", rank=rank, world_size=2)
    for workload in args.workloads:
        steps = args.steps or STEPS[workload]
        times = measure(torch, workload, rank, args.blocks, steps)
        if rank == 0:
            report(workload, steps, times)
    dist.barrier()
    dist.destroy_process_group()


def report(workload: str, steps: int, times: dict[str, list]) -> None:
    print(f"{workload}: {steps} steps per block, per step on rank 0", flush=True)
    names = list(times)
    for kind, index in (("wall", 0), ("CPU", 1)):
        series = {name: [block[index] for block in blocks] for name, blocks in times.items()}
        for before, name in zip([None, *names], names):
            line = (f"  {kind:<4} {name:<27} median "
                    f"{statistics.median(series[name]) * 1e3:8.3f} ms")
            if before is not None:
                line += (f"  over plain {single.paired_overhead(series['plain'], series[name]):+6.2f}%"
                         f" (+/- {single.spread(series['plain'], series[name]):.2f})")
            if name == names[-1]:
                cost = statistics.median(g - p for g, p in zip(series[name], series[before]))
                line += (f"; DDP check {cost * 1e6:.0f} us = "
                         f"{single.paired_overhead(series[before], series[name]):+.2f}% "
                         f"(+/- {single.spread(series[before], series[name]):.2f})")
            print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=[*STEPS, "both"], default="both")
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--steps", type=int, default=0, help="steps per block (0: by workload)")
    parser.add_argument("--alone", type=int, default=16,
                        help="steps of a session with an all-reduce each (gradcheck run: 16)")
    args = parser.parse_args()
    args.workloads = list(STEPS) if args.workload == "both" else [args.workload]

    import torch
    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    print(f"torch {torch.__version__}, 2 ranks on gloo, 1 thread each, {args.blocks} blocks, "
          f"the first {args.alone} steps of a session alone", flush=True)
    mp.spawn(worker, args=(args,), nprocs=2)


if __name__ == "__main__":
    main()
