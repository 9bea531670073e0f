"""Stress benchmark: does a two-rank gloo job under ``gradcheck run`` always exit? (issue 22)

Each run starts a small DDP job (a residual conv net on random CIFAR-shaped batches, 3 steps,
many small gradient buckets so that gloo's worker threads are busy until the end) with two ranks
on the CPU, under a launcher, and waits for it with a deadline. Every rank steps without
``zero_grad()``, so the guard has one finding per rank to bring to rank 0. Scenarios, run in
turn:

- ``destroy``:    the script calls ``destroy_process_group()`` at the end;
- ``no-destroy``: it never does (the group is torn down at interpreter exit);
- ``raise``:      rank 1 raises after training, before ``destroy_process_group()``.

Launchers: ``torchrun`` (``torchrun --nproc-per-node 2 -m gradcheck run train.py``, each worker a
``gradcheck run``), ``guarded-torchrun`` (``gradcheck run -m torch.distributed.run ...``: the
launcher guarded, workers inherit the guard) and ``plain`` (``torchrun train.py``, no gradcheck:
torch's own baseline).

A run *hangs* when it outlives ``--deadline``; it *crashes* when a rank dies by a signal
other than the launcher's SIGTERM after another rank's failure; its *status* is wrong when the
job's exit status is not the expected one; its *report* is missing when rank 0 did not print one
report naming both ranks although both finished.

    python bench/exit_stress.py --runs 200                      # the issue's figure
    python bench/exit_stress.py --runs 30 --launcher plain      # torch alone
    python bench/exit_stress.py --runs 30 --pythonpath ../old   # another checkout's gradcheck
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

SCRIPT = '''
import os
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.a, self.norm = nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c)
        self.b = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return F.relu(x + self.b(F.relu(self.norm(self.a(x)))))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    torch.set_num_threads(1)
    net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), *[Block(16) for _ in range(6)],
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
    model = DDP(net, bucket_cap_mb=0.02)  # many buckets: gloo busy until the last moment
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for step in range(3):
        x, y = torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,))
        F.cross_entropy(model(x), y).backward()
        optimizer.step()  # no zero_grad(): stale_gradients on every rank from step 2
    scenario = os.environ["STRESS_SCENARIO"]
    if scenario == "raise" and rank == 1:
        raise RuntimeError("rank 1 fails after training")
    if scenario != "no-destroy":
        dist.destroy_process_group()


main()
'''

SCENARIOS = ("destroy", "no-destroy", "raise")
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]


def command(launcher: str, script: str) -> list[str]:
    if launcher == "torchrun":
        return [*TORCHRUN, "-m", "gradcheck", "run", script]
    if launcher == "guarded-torchrun":
        return [sys.executable, "-m", "gradcheck", "run", "-m", "torch.distributed.run",
                *TORCHRUN[3:], script]
    return [*TORCHRUN, script]


def run_once(launcher: str, scenario: str, script: str, deadline: float,
             environment: dict[str, str]) -> dict:
    started = time.monotonic()
    # NOTE: run from the script's folder: python -m puts the working directory first on
    # sys.path, which would shadow the gradcheck that --pythonpath names
    process = subprocess.Popen(command(launcher, script), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True,
                               cwd=os.path.dirname(script),
                               env={**environment, "STRESS_SCENARIO": scenario})
    try:
        output, _ = process.communicate(timeout=deadline)
        hung = False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        hung = True
    return {"scenario": scenario, "status": process.returncode, "hung": hung, "output": output,
            "seconds": time.monotonic() - started}


def judge(launcher: str, run: dict, tolerate_abort: bool = False) -> list[str]:
    """What is wrong with one run: hang, crash, status, report.

    ``tolerate_abort``: when a rank raised, a SIGABRT of a rank in gloo's teardown at exit is
    torch's (plain torch jobs show it too) and not counted as a crash.
    """
    if run["hung"]:
        return ["hang"]
    output, scenario, problems = run["output"], run["scenario"], []
    deaths = re.findall(r"exitcode\s*:\s*(-\d+)", output)
    failed_first = scenario == "raise"  # the launcher stops the other rank with SIGTERM
    allowed = {"-15", "-6"} if tolerate_abort and failed_first else {"-15"}
    if any(code not in allowed or not failed_first for code in deaths):
        problems.append("crash")
    found = launcher != "plain"  # the guard's finding, or the script's failure: 1 either way
    if run["status"] != (1 if found or scenario == "raise" else 0):
        problems.append("status")
    if launcher != "plain" and scenario != "raise":
        both = re.findall(r"stale_gradients in SGD .* on ranks 0, 1", output)
        if len(both) != 1 or output.count("problem found by the optimizer guard") != 1:
            problems.append("report")
    if launcher == "guarded-torchrun" and scenario != "raise" and "ChildFailedError" in output:
        problems.append("status")  # the workers must end cleanly under a guarded launcher
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="runs in all, scenarios in turn")
    parser.add_argument("--launcher", choices=("torchrun", "guarded-torchrun", "plain"),
                        default="torchrun")
    parser.add_argument("--deadline", type=float, default=120.0, help="seconds before a hang")
    parser.add_argument("--pythonpath", default="", help="put this checkout's gradcheck first")
    parser.add_argument("--keep", default="", help="write the output of bad runs to this folder")
    args = parser.parse_args()

    environment = dict(os.environ, OMP_NUM_THREADS="1")
    if args.pythonpath:
        environment["PYTHONPATH"] = os.path.abspath(args.pythonpath)
    tally: dict[str, collections.Counter] = {s: collections.Counter() for s in SCENARIOS}
    seconds: dict[str, list[float]] = {s: [] for s in SCENARIOS}
    with tempfile.TemporaryDirectory() as folder:
        script = os.path.join(folder, "train_ddp_stress.py")
        with open(script, "w", encoding="utf-8") as handle:
            handle.write(SCRIPT)
        for index in range(args.runs):
            scenario = SCENARIOS[index % len(SCENARIOS)]
            run = run_once(args.launcher, scenario, script, args.deadline, environment)
            problems = judge(args.launcher, run)
            tally[scenario]["runs"] += 1
            tally[scenario].update(problems)
            seconds[scenario].append(run["seconds"])
            print(f"run {index + 1:3d} {scenario:<10} status {run['status']:>4} "
                  f"{run['seconds']:5.1f} s {' '.join(problems) or 'ok'}", flush=True)
            if problems and args.keep:
                os.makedirs(args.keep, exist_ok=True)
                with open(os.path.join(args.keep, f"run{index + 1}.txt"), "w") as kept:
                    kept.write(run["output"])
    print(f"\nlauncher {args.launcher}, {args.runs} runs, deadline {args.deadline:g} s")
    print(f"{'scenario':<11} {'runs':>5} {'hangs':>6} {'crashes':>8} {'status':>7} "
          f"{'report':>7} {'median s':>9}")
    for scenario in SCENARIOS:
        counts = tally[scenario]
        if counts["runs"]:
            print(f"{scenario:<11} {counts['runs']:>5} {counts['hang']:>6} {counts['crash']:>8} "
                  f"{counts['status']:>7} {counts['report']:>7} "
                  f"{statistics.median(seconds[scenario]):>9.1f}")


if __name__ == "__main__":
    main()
