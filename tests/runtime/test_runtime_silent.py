"""Silent gradient errors under ``gradcheck run``: each real script's bug reported once, at the
line its fixture marks ``# gradcheck: <kind>``, and its fixed version (``--fixed``) silent.

The scripts are ``fixtures/runtime/silent/*.py``; the DDP one, which needs two processes, is
``fixtures/runtime/ddp/train_ddp_sync.py``.
"""
from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from gradcheck.runtime.launch import run_script

ROOT = Path(__file__).resolve().parents[2]
SILENT = ROOT / "fixtures" / "runtime" / "silent"


def marked_line(path, kind):
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if f"gradcheck: {kind}" in line)


def run(stem, capsys, *args, accumulation_steps=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        status = run_script(str(SILENT / f"{stem}.py"), list(args),
                            accumulation_steps=accumulation_steps)
    return status, capsys.readouterr().err


def problem_lines(err):
    return [row for row in err.splitlines() if row.startswith("  ")]


@pytest.mark.parametrize("stem, args, kind, call, times", [
    ("frozen_optimizer", ["--mistake", "copy"], "optimizer_without_gradients", "step()", "6 times"),
    ("frozen_optimizer", ["--mistake", "frozen"], "optimizer_without_gradients", "step()",
     "6 times"),
    ("warmup_omission", [], "frozen_by_omission", "step()", "once"),
    ("a3c_alias", [], "aliased_gradients", "step()", "5 times"),
    ("hand_sgd", [], "stale_gradients", "backward()", "4 times"),
    ("amp_clip", [], "unscaled_clipping", "clip_grad_norm_()", "4 times"),
    ("double_step", [], "repeated_step", "step()", "4 times"),
])
def test_each_silent_error_is_reported_once_at_its_line(stem, args, kind, call, times, capsys):
    status, err = run(stem, capsys, *args)
    where = f"fixtures/runtime/silent/{stem}.py:{marked_line(SILENT / f'{stem}.py', kind)}"
    assert status == 1, err
    assert len(problem_lines(err)) == 1, err
    row = problem_lines(err)[0]
    assert row.startswith(f"  {where}: {kind} in "), err
    assert f" at {call}, {times}: " in row, err


@pytest.mark.parametrize("stem, args", [
    ("frozen_optimizer", ["--mistake", "copy"]), ("frozen_optimizer", ["--mistake", "frozen"]),
    ("warmup_omission", []), ("a3c_alias", []), ("hand_sgd", []), ("amp_clip", []),
    ("double_step", []),
])
def test_the_fixed_version_runs_silent(stem, args, capsys):
    assert run(stem, capsys, *args, "--fixed") == (0, "")


@pytest.mark.parametrize("stem", ["gan_two_losses", "actor_critic"])
def test_optimizers_with_their_own_accumulation_run_silent(stem, capsys):
    """The discriminator steps on two passes, the actor on four, the others on one: nothing is
    reported, and nothing is listed as not judged."""
    assert run(stem, capsys) == (0, "")


def test_each_optimizer_takes_its_own_accumulation_steps(capsys):
    script = SILENT / "gan_two_losses.py"
    lines = script.read_text(encoding="utf-8").splitlines()
    opt_d = next(i for i, line in enumerate(lines, 1) if line.strip().startswith("opt_d ="))
    opt_g = next(i for i, line in enumerate(lines, 1) if line.strip().startswith("opt_g ="))
    per_optimizer = f"gan_two_losses.py:{opt_d}=2,gan_two_losses.py:{opt_g}=1"
    assert run("gan_two_losses", capsys, accumulation_steps=per_optimizer) == (0, "")
    status, err = run("gan_two_losses", capsys, accumulation_steps=1)  # 1 for both: D is stale
    assert status == 1 and f"in Adam (fixtures/runtime/silent/gan_two_losses.py:{opt_d})" in err
    assert "beyond accumulation_steps=1" in err


def test_a_run_that_guarded_nothing_says_so(tmp_path, capsys):
    script = tmp_path / "saliency.py"
    script.write_text("import torch\nmodel = torch.nn.Linear(4, 2)\n"
                      "x = torch.randn(3, 4, requires_grad=True)\nmodel(x).sum().backward()\n")
    assert run_script(str(script)) == 0
    assert capsys.readouterr().err == (
        "gradcheck: nothing was guarded: backward() ran, but no torch.optim optimizer stepped "
        "and no parameter changed between backward passes, so no update was checked\n")


def test_plain_tensors_updated_by_hand_are_judged(tmp_path, capsys):
    script = tmp_path / "polynomial.py"
    script.write_text(
        "import torch\n"
        "x, y = torch.linspace(-1, 1, 50), torch.sin(torch.linspace(-1, 1, 50))\n"
        "a = torch.randn((), requires_grad=True)\n"
        "b = torch.randn((), requires_grad=True)\n"
        "for t in range(5):\n"
        "    ((a + b * x - y) ** 2).sum().backward()\n"
        "    with torch.no_grad():\n"
        "        a -= 1e-3 * a.grad\n"
        "        b -= 1e-3 * b.grad\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        status = run_script(str(script))
    rows = problem_lines(capsys.readouterr().err)
    assert status == 1
    assert len(rows) == 1 and ":6: stale_gradients in an update by hand at backward(), 4 times" \
        in rows[0]


@pytest.mark.slow
def test_ddp_ranks_that_stop_averaging_are_reported_at_their_first_step():
    """Two gloo processes; the correct phases (with and without no_sync() accumulation) are
    silent, each broken one is reported at its line from the first step whose gradients differ,
    while the run goes on."""
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available")
    script = ROOT / "fixtures" / "runtime" / "ddp" / "train_ddp_sync.py"
    run = subprocess.run(
        [sys.executable, "-m", "gradcheck", "run", str(script), "--bug",
         "none,accumulate,replaced-layer,bare-call", "--steps", "20"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )
    assert run.returncode == 1, run.stderr
    rows = [row for row in problem_lines(run.stderr) if ": unsynced_gradients in " in row]
    assert len(rows) == 2 and "gradcheck: 2 problems found" in run.stderr, run.stderr
    assert "compared at" not in run.stderr  # every step of every phase was compared
    where = "fixtures/runtime/ddp/train_ddp_sync.py"
    # replaced-layer differs at each of its 20 steps, bare-call at its 10 bare ones, on each rank
    # (past the 16th step of the job, 8 steps share an all-reduce: every one is still judged)
    for row, phase, times, first in zip(rows, ["replaced-layer", "bare-call"], [40, 20], [1, 2]):
        line = marked_line(script, f"unsynced_gradients {phase}")
        assert re.match(rf"  {where}:{line}: unsynced_gradients in SGD \({where}:\d+\) at step\(\)"
                        rf" on ranks 0, 1, {times} times: ", row), run.stderr
        assert f"apply at step {first} differed between ranks 0, 1 (parameter group 0: " in row
