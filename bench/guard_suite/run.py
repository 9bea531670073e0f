"""Benchmark: ``gradcheck run`` on correct pipelines and silent-error reproductions (issue 19).

Every row of ``manifest.csv`` is a training script (ours: this folder and ``fixtures/runtime``),
its arguments, an ``--accumulation-steps`` value if any, what the guard must say (``correct``:
nothing; else the kind of the planted bug, reported at the line the script marks
``# gradcheck: <kind>`` or ``# marker: <kind>``), and how it is launched:

- ``run``: ``gradcheck run script.py``;
- ``env``: ``GRADCHECK_GUARD=1 python script.py``;
- ``env-accelerate``: ``GRADCHECK_GUARD=1 accelerate launch script.py`` (one CPU process);
- ``torchrun``: ``torchrun --nproc-per-node 2 -m gradcheck run script.py``;
- ``env-torchrun``: ``GRADCHECK_GUARD=1 torchrun --nproc-per-node 2 script.py``.

(``GRADCHECK_GUARD`` reaches an editable install's processes through ``PYTHONPATH``; a wheel
install's ``.pth`` does the same.) Each script also runs without gradcheck, for the timing.

A *false alarm* is any finding on a correct script, or a non-zero status; a *detection* is the
expected kind at the marked line with a non-zero status, and no rank killed by a signal; an
*extra* is any other finding on a buggy script. Wall times
include starting Python and importing torch (and Lightning, transformers), so their ratio is an
upper bound of what the guard adds to such short runs; ``bench/guard.py`` measures the guard's
cost per training step.

    python bench/guard_suite/run.py                 # every row
    python bench/guard_suite/run.py --only lightning --markdown
"""
from __future__ import annotations

import argparse
import csv
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = Path(__file__).with_name("manifest.csv")
PROBLEM = re.compile(r"^  (?P<where>\S+:\d+): (?P<kind>\w+) in ")


def marked_line(script: Path, expect: str) -> str:
    """``path:line`` of the comment that marks where the expected finding belongs."""
    for number, text in enumerate(script.read_text(encoding="utf-8").splitlines(), 1):
        if re.search(rf"(gradcheck|marker): {re.escape(expect)}(\s|$)", text):
            return f"{script.relative_to(ROOT).as_posix()}:{number}"
    raise SystemExit(f"{script}: no '# gradcheck: {expect}' marker")


def timed(command: list[str], timeout: float, guard: bool = False,
          steps: str = "") -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    environment = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    if guard:
        from gradcheck.runtime import autostart

        environment.update(GRADCHECK_GUARD="1", GRADCHECK_ACCUMULATION_STEPS=steps,
                           PYTHONPATH=autostart.PATH)
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                            env=environment, check=False)
    return result, time.monotonic() - started


TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
ACCELERATE = [sys.executable, "-m", "accelerate.commands.launch", "--cpu", "--num_processes", "1",
              "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]


def commands(row: dict[str, str]) -> tuple[list[str], list[str], bool]:
    """The plain command, the guarded one, and whether the guard comes from the environment."""
    script, args = str(ROOT / row["script"]), shlex.split(row["args"])
    options = ["--accumulation-steps", row["accumulation"]] if row["accumulation"] else []
    launcher = row["launcher"]
    if launcher == "run":
        return ([sys.executable, script, *args],
                [sys.executable, "-m", "gradcheck", "run", *options, script, *args], False)
    if launcher == "torchrun":
        return ([*TORCHRUN, script, *args],
                [*TORCHRUN, "-m", "gradcheck", "run", *options, script, *args], False)
    prefix = {"env": [sys.executable], "env-accelerate": ACCELERATE, "env-torchrun": TORCHRUN}
    plain = [*prefix[launcher], script, *args]
    return plain, plain, True


def run_row(row: dict[str, str], timeout: float) -> dict:
    script = ROOT / row["script"]
    plain_command, guarded_command, by_environment = commands(row)
    _, plain_seconds = timed(plain_command, timeout)
    guarded, guarded_seconds = timed(guarded_command, timeout, by_environment,
                                     row["accumulation"])
    found = [(m["where"], m["kind"]) for line in guarded.stderr.splitlines()
             if (m := PROBLEM.match(line))]
    killed = re.search(r"exitcode\s*:\s*-\d+", guarded.stderr) is not None
    expect = row["expect"]
    verdict, extra = "", 0
    if expect == "correct":
        clean = not found and guarded.returncode == 0 and not killed
        verdict = "silent" if clean else "FALSE ALARM"
    else:
        kind = expect.split()[0]
        target = (marked_line(script, expect), kind)
        caught = target in found and guarded.returncode != 0 and not killed
        verdict = "detected" if caught else "MISSED"
        extra = len([f for f in found if f != target])
    return {"row": row, "verdict": verdict, "extra": extra, "found": found,
            "status": guarded.returncode, "ratio": guarded_seconds / plain_seconds,
            "seconds": guarded_seconds, "stderr": guarded.stderr,
            "child_failed": "ChildFailedError" in guarded.stderr}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="rows whose script path contains this")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--markdown", action="store_true", help="print a table for the docs")
    args = parser.parse_args()
    with MANIFEST.open(encoding="utf-8") as handle:
        rows = [r for r in csv.DictReader(handle) if args.only in r["script"]]
    results = []
    for row in rows:
        result = run_row(row, args.timeout)
        results.append(result)
        print(f"{result['verdict']:<12} extra {result['extra']}  status {result['status']}  "
              f"x{result['ratio']:.2f}  {row['launcher']:<14} {row['script']} {row['args']}"
              .rstrip(), flush=True)
        if result["verdict"] in ("FALSE ALARM", "MISSED") or result["extra"]:
            print(result["stderr"][-2000:], flush=True)
    correct = [r for r in results if r["row"]["expect"] == "correct"]
    buggy = [r for r in results if r["row"]["expect"] != "correct"]
    print(f"\ncorrect pipelines: {len(correct)}, false alarms: "
          f"{sum(r['verdict'] != 'silent' for r in correct)}")
    print(f"silent-error reproductions: {len(buggy)}, detected at the marked line: "
          f"{sum(r['verdict'] == 'detected' for r in buggy)}, extra findings: "
          f"{sum(r['extra'] for r in buggy)}")
    launched = [r for r in results if r["row"]["launcher"] == "env-torchrun"]
    print(f"GRADCHECK_GUARD=1 torchrun jobs ending in ChildFailedError: "
          f"{sum(r['child_failed'] for r in launched)} of {len(launched)}")
    print(f"wall time under gradcheck run / python: median x"
          f"{statistics.median(r['ratio'] for r in results):.2f}")
    if args.markdown:
        print("\n| launcher | script | args | expected | verdict | status | wall-time ratio |\n"
              "|---|---|---|---|---|---:|---:|")
        for r in results:
            row = r["row"]
            print(f"| {row['launcher']} | `{row['script']}` | `{row['args']}` | {row['expect']} | "
                  f"{r['verdict']}{' +' + str(r['extra']) if r['extra'] else ''} | {r['status']} "
                  f"| {r['ratio']:.2f} |")


if __name__ == "__main__":
    main()
