"""DistributedDataParallel on gloo with two CPU processes: ``gradcheck run`` guards every rank and
prints one report with ranks; ``check_training_step`` works inside each rank."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

from gradcheck.runtime import check_training_step

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "fixtures" / "runtime" / "ddp" / "train_ddp.py"


def marker_line(kind):
    lines = SCRIPT.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if f"marker: {kind}" in line)


def test_gradcheck_run_prints_one_report_with_ranks_for_a_two_process_job():
    """The ranks are processes that ``torch.multiprocessing.spawn`` starts afresh: they are
    guarded through ``GRADCHECK_GUARD`` and the ``sitecustomize`` on ``PYTHONPATH``, as a
    launcher's workers would be."""
    phases = "none,no-zero-grad,zero-between,zero-in-window"
    run = subprocess.run(
        [sys.executable, "-m", "gradcheck", "run", "--accumulation-steps", "4", str(SCRIPT),
         "--bug", phases, "--steps", "3"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )
    assert run.returncode == 1, run.stderr
    assert run.stderr.count("gradcheck: 3 problems found") == 1, run.stderr  # one job, one report
    script = "fixtures/runtime/ddp/train_ddp.py"
    expected = {  # phase "none" adds nothing: the counts are exactly the planted phases'
        "stale_gradients": ("step()", "ranks 0, 1", 4),  # steps 2 and 3 on both ranks
        "wiped_gradients": ("zero_grad()", "ranks 0, 1", 6),
        "discarded_accumulation": ("zero_grad()", "rank 1", 3),  # only rank 1 zeroes in the window
    }
    for kind, (call, ranks, times) in expected.items():
        line = rf"  {script}:{marker_line(kind)}: {kind} in SGD \({script}:\d+\) at " \
               rf"{re.escape(call)} on {ranks}, {times} times: "
        assert re.search(line, run.stderr), (kind, run.stderr)


def _check_in_rank(rank, world_size, port, results):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(rank)  # each rank its own data; DDP broadcasts rank 0's parameters
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = [(torch.randn(2, 3), torch.randn(2, 1)) for _ in range(8)]
    counter = [0]

    def step(batch, zero_in_window):
        x, y = batch
        counter[0] += 1
        last = counter[0] % 4 == 0
        with model.no_sync() if not last else torch.enable_grad():
            (torch.nn.functional.mse_loss(model(x), y) / 4).backward()
        if zero_in_window and rank == 1 and counter[0] % 4 == 2:
            optimizer.zero_grad()
        if last:
            optimizer.step()
            optimizer.zero_grad()

    for zero_in_window in (False, True):
        counter[0] = 0
        report = check_training_step(lambda b, z=zero_in_window: step(b, z), model, optimizer,
                                     batches, accumulation_steps=4, raise_on_failure=False)
        results.put((rank, zero_in_window, sorted(report.kinds), report.replays,
                     report.replay_skips))
    dist.barrier()  # leave together: a rank exiting while gloo still talks to it aborts the other
    dist.destroy_process_group()


def test_check_training_step_in_every_rank():
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # NOTE: not fork: this process (a pytest-xdist worker) runs threads of its own, and a
    # child forked while one of them holds a lock (output, logging) can hang on it forever.
    context = mp.get_context("spawn")
    results = context.SimpleQueue()
    processes = [context.Process(target=_check_in_rank, args=(rank, 2, port, results))
                 for rank in range(2)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(120)
    # NOTE: torch 2.13's gloo teardown sometimes aborts a rank after its work is done
    # ("terminate called without an active exception", SIGABRT): 11 of 60 runs of plain
    # torchrun jobs in bench/exit_stress.py --launcher plain. The results below were all sent
    # before it; any other exit status fails.
    assert all(p.exitcode in (0, -signal.SIGABRT) for p in processes), \
        [p.exitcode for p in processes]
    found = {}
    while not results.empty():
        rank, zero_in_window, *outcome = results.get()
        found[rank, zero_in_window] = outcome
    assert found[0, False][0] == [] and found[1, False][0] == []  # no_sync accumulation is right
    assert found[0, True][0] == []
    assert found[1, True][0] == ["discarded_accumulation"]
    assert found[0, False][1] == found[1, False][1] == 2  # replayed on the ranks' mean



SYNC_SCRIPT = ROOT / "fixtures" / "runtime" / "ddp" / "train_ddp_sync.py"


def _run_sync(options, phases):
    """``gradcheck run OPTIONS train_ddp_sync.py --bug PHASES``: two gloo ranks, 4 steps."""
    return subprocess.run(
        [sys.executable, "-m", "gradcheck", "run", *options, str(SYNC_SCRIPT), "--bug", phases,
         "--steps", "4"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


def test_action_raise_stops_every_rank_at_the_first_unsynchronised_step():
    run = _run_sync(["--action", "raise"], "replaced-layer")
    assert run.returncode != 0
    lines = SYNC_SCRIPT.read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "unsynced_gradients replaced-layer" in text)
    raised = re.findall(r"GradGuardError: (\S+): step\(\): the gradients SGD \(\S+\)\.step\(\) was "
                        r"about to apply at step (\d+) differed between ranks 0, 1", run.stderr)
    # NOTE: spawn's children end without exit handlers, so the raise is what each rank says
    assert raised == [(f"fixtures/runtime/ddp/train_ddp_sync.py:{line}", "1")], run.stderr


def test_a_rank_that_skips_a_step_hangs_nobody_and_the_report_says_what_was_not_compared():
    """Rank 1 skips its second step(): the ranks' all-reduces no longer pair step with step, so
    comparing stops there (no verdict on steps that are not each other's), and the run ends."""
    run = _run_sync([], "skip-step")
    assert run.returncode == 0, run.stderr
    assert "unsynced_gradients" not in run.stderr
    note = ("gradcheck: DDP gradients of ranks 0, 1 were compared at 1 step(s), then no more: at "
            "step 2 of SGD (fixtures/runtime/ddp/train_ddp_sync.py:")
    assert run.stderr.count(note) == 1, run.stderr  # one note for the job, from rank 0
    assert "the ranks were at different iterations (a rank skipped a step()" in run.stderr


def test_a_rank_that_runs_out_of_data_under_join_hangs_nobody():
    """Under Join, rank 1 stops after one step while rank 0 takes 7 more: rank 0's all-reduces
    go unanswered, and after a few the comparison stops, said in the report; the job ends."""
    run = _run_sync([], "uneven")
    assert run.returncode == 0, run.stderr
    assert "unsynced_gradients" not in run.stderr
    assert ("gradcheck: DDP gradients of ranks 0, 1 were compared at 1 step(s), then no more: "
            "the other ranks stopped answering for 4 steps (a rank that stopped stepping, e.g. "
            "uneven inputs under Join)") in run.stderr, run.stderr
