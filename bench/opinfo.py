"""check_grad against torch.autograd.gradcheck on the samples of torch's own OpInfo database.

Run:  OPENBLAS_NUM_THREADS=1 python bench/opinfo.py [--samples 3] [--every 1] [--json out.json]
      (shards: --every 2 --start 0 / --start 1, then --summarize a.json b.json)

Every op of ``torch.testing._internal.common_methods_invocations.op_db`` that supports
autograd and float64 on CPU contributes its first ``--samples`` sample inputs (float64,
requires_grad=True), wrapped exactly as torch's own gradient tests wrap them (the tensors
that require grad become the checked inputs; the rest stays in the closure). Each sample runs
through torch's gradcheck in slow and fast mode and through ours in full and fast mode, with
default settings, one thread. A run prints one line per disagreement and a summary:

- crash: ours raised (anything but a clear TypeError about an unsupported layout)
- false alarm: ours failed where torch slow passed, without naming a kink
- miss: ours passed where torch slow failed
- inconclusive: ours could not resolve some entries (the reason is printed)
- the median over samples of each checker's CPU time (the smallest of ``--repeat`` runs),
  and the ratios.
"""
from __future__ import annotations

import argparse
import itertools
import json
import signal
import statistics
import time
import warnings
from dataclasses import asdict, dataclass, field

import torch

from gradcheck.checks import check_grad

# per checker and sample, in wall seconds; a check still running then is reported as timeout
TIMEOUT_S = 30
UNSUPPORTED = "unsupported"


@dataclass
class Case:
    op: str
    sample: int
    fn: object = field(repr=False)
    inputs: tuple = field(repr=False)
    nondet_tol: float = 0.0


@dataclass
class Outcome:
    verdict: str  # pass, fail, kink (ours: passed or failed only by naming kinks),
    # inconclusive (ours), error, timeout
    seconds: float
    message: str = ""


def opinfo_ops(every: int = 1, start: int = 0, names: list[str] | None = None):
    """The OpInfos that support autograd and float64 on CPU (every ``every``-th from
    ``start``, or those named)."""
    from torch.testing._internal.common_methods_invocations import op_db

    ops = [op for op in op_db
           if op.supports_autograd and op.supports_dtype(torch.float64, "cpu")]
    if names:
        wanted = set(names)
        return [op for op in ops if op_label(op) in wanted]
    return ops[start::every]


def op_label(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def cases_of(op, samples: int = 3) -> list[Case]:
    """The first ``samples`` sample inputs of ``op`` as gradcheck cases, wrapped as
    torch's TestGradients._check_helper wraps them."""
    torch.manual_seed(0)
    found = []
    variant = op.get_op()
    for n, sample in enumerate(itertools.islice(
            op.sample_inputs("cpu", torch.float64, requires_grad=True), samples)):
        found.append(Case(op_label(op), n, _recomposed(op, variant, sample),
                          _grad_args(sample), op.gradcheck_nondet_tol))
    return found


def _is_tensor_list(x) -> bool:
    return isinstance(x, (list, tuple)) and len(x) > 0 and all(
        isinstance(t, torch.Tensor) for t in x)


def _grad_args(sample) -> tuple:
    parts = [sample.input] if not _is_tensor_list(sample.input) else list(sample.input)
    everything = itertools.chain(parts, sample.args, sample.kwargs.values())
    return tuple(x for x in everything if isinstance(x, torch.Tensor) and x.requires_grad)


def _recomposed(op, variant, sample):
    def take(inputs, value, at):
        if _is_tensor_list(value):
            out = []
            for t in value:
                if t.requires_grad:
                    out.append(inputs[at])
                    at += 1
                else:
                    out.append(t)
            return out, at
        if isinstance(value, torch.Tensor) and value.requires_grad:
            return inputs[at], at + 1
        return value, at

    def fn(*inputs):
        first, at = take(inputs, sample.input, 0)
        args = [first]
        for a in sample.args:
            value, at = take(inputs, a, at)
            args.append(value)
        kwargs = {}
        for key, v in sample.kwargs.items():
            kwargs[key], at = take(inputs, v, at)
        out = op.gradcheck_wrapper(variant, *args, **kwargs)
        return sample.output_process_fn_grad(out) if sample.output_process_fn_grad else out

    return fn


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout


def timed(run, repeat: int = 1) -> Outcome:
    """Run one check under the per-check time limit; its verdict from the first run, its
    time the smallest CPU time (one thread) of ``repeat`` runs.

    NOTE: the limit is a wall-clock alarm (SIGALRM). An ITIMER_PROF alarm would be CPU time,
    but while one is armed the kernel reads process CPU time at its tick (4 ms here), and a
    check of half a millisecond then reads as 0 or 4 ms.
    """
    signal.signal(signal.SIGALRM, _alarm)
    seconds = []
    try:
        for attempt in range(repeat):
            signal.setitimer(signal.ITIMER_REAL, TIMEOUT_S)
            start = time.process_time()
            try:
                found = run()
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            seconds.append(time.process_time() - start)
            if attempt == 0:
                verdict, message = found
    except _Timeout:
        if not seconds:
            return Outcome("timeout", TIMEOUT_S, f"over {TIMEOUT_S} s")
    except Exception as e:  # noqa: BLE001 - every exception is a finding here
        verdict = UNSUPPORTED if _is_unsupported(e) else "error"
        message = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        return Outcome(verdict, time.process_time() - start, message)
    return Outcome(verdict, min(seconds), message)


def _is_unsupported(e: Exception) -> bool:
    # our clear refusals: a sparse (non-strided) input, a Jacobian too large for full mode
    return (isinstance(e, TypeError) and "does not support" in str(e)) or "mode='fast'" in str(e)


def torch_check(case: Case, fast: bool):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ok = torch.autograd.gradcheck(case.fn, case.inputs, fast_mode=fast,
                                      nondet_tol=case.nondet_tol, raise_exception=False)
    return ("pass" if ok else "fail"), ""


def our_check(case: Case, mode: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = check_grad(case.fn, case.inputs, mode=mode, raise_on_failure=False,
                            nondet_tol=case.nondet_tol)
    if result.passed:
        return ("kink" if result.nondifferentiable else "pass"), ""
    if result.verdict == "inconclusive":
        return "inconclusive", result.inconclusive[0][:300]
    if not result.mismatch_counts and not result.problems:
        return "kink", ""
    return "fail", str(result).splitlines()[-1][:300]


CHECKERS = {
    "torch slow": lambda c: torch_check(c, False),
    "torch fast": lambda c: torch_check(c, True),
    "ours full": lambda c: our_check(c, "full"),
    "ours fast": lambda c: our_check(c, "fast"),
}


def run_case(case: Case, checkers=CHECKERS, repeat: int = 1) -> dict[str, Outcome]:
    return {name: timed(lambda run=run: run(case), repeat) for name, run in checkers.items()}


def classify(outcomes: dict[str, Outcome], mode: str) -> str | None:
    """crash, false alarm, miss or None for our ``mode`` against torch slow."""
    ours, torch_slow = outcomes[f"ours {mode}"], outcomes["torch slow"].verdict
    if ours.verdict in ("error", "timeout"):
        return "crash" if torch_slow in ("pass", "fail") else None
    if ours.verdict == "fail" and torch_slow == "pass":
        return "false alarm"
    if ours.verdict in ("pass", "kink") and torch_slow == "fail":
        return "miss" if ours.verdict == "pass" else None
    if ours.verdict == "inconclusive":
        return "inconclusive"
    return None


def summarize(rows: list[dict]) -> str:
    lines = [f"{len(rows)} samples from {len({r['op'] for r in rows})} ops", ""]
    lines.append("| checker | pass | fail | kink | inconclusive | unsupported | error | timeout "
                 "| median CPU (ms) | total CPU (s) |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    medians = {}
    for name in CHECKERS:
        got = [r["outcomes"][name] for r in rows]
        counts = {v: sum(o["verdict"] == v for o in got)
                  for v in ("pass", "fail", "kink", "inconclusive", UNSUPPORTED, "error",
                            "timeout")}
        both = [o["seconds"] for o in got]
        medians[name] = statistics.median(both) if both else float("nan")
        lines.append(f"| {name} | " + " | ".join(str(c) for c in counts.values())
                     + f" | {1e3 * medians[name]:.1f} | {sum(both):.1f} |")
    lines.append("")
    for mode in ("full", "fast"):
        found = [classify_row(r, mode) for r in rows]
        lines.append(f"ours {mode}: " + ", ".join(
            f"{kind} {sum(f == kind for f in found)}"
            for kind in ("crash", "false alarm", "miss", "inconclusive")))
    ratio = lambda a, b: medians[a] / medians[b] if medians[b] else float("nan")  # noqa: E731
    lines.append(f"ratio of medians, ours fast / torch fast: "
                 f"{ratio('ours fast', 'torch fast'):.2f}; "
                 f"ours full / torch slow: {ratio('ours full', 'torch slow'):.2f}")
    lines.append(f"median of per-sample ratios, ours fast / torch fast: "
                 f"{median_ratio(rows, 'ours fast', 'torch fast'):.2f}; ours full / torch slow: "
                 f"{median_ratio(rows, 'ours full', 'torch slow'):.2f}")
    return "\n".join(lines)


def median_ratio(rows: list[dict], ours: str, theirs: str) -> float:
    """Median over samples of our CPU time over theirs (samples where both finished)."""
    done = ("pass", "fail", "kink", "inconclusive")
    ratios = [r["outcomes"][ours]["seconds"] / r["outcomes"][theirs]["seconds"] for r in rows
              if r["outcomes"][ours]["verdict"] in done and r["outcomes"][theirs]["verdict"]
              in done and r["outcomes"][theirs]["seconds"] > 0]
    return statistics.median(ratios) if ratios else float("nan")


def classify_row(row: dict, mode: str) -> str | None:
    return classify({k: Outcome(**v) for k, v in row["outcomes"].items()}, mode)


def main() -> None:
    global TIMEOUT_S
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--every", type=int, default=1, help="every n-th op only")
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--ops", nargs="*", help="only these ops (name or name.variant)")
    parser.add_argument("--json", help="write every outcome to this file")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S,
                        help="wall-clock seconds per check")
    parser.add_argument("--repeat", type=int, default=3,
                        help="time each check this many times and keep the smallest")
    parser.add_argument("--summarize", nargs="*", help="only summarize these --json files")
    args = parser.parse_args()
    if args.summarize:
        rows = [row for path in args.summarize for row in json.load(open(path))]
        print(summarize(rows))
        return
    TIMEOUT_S = args.timeout
    torch.set_num_threads(1)
    rows = []
    for op in opinfo_ops(args.every, args.start, args.ops):
        try:
            cases = cases_of(op, args.samples)
        except Exception as e:  # noqa: BLE001 - a sample generator torch itself cannot run
            print(f"{op_label(op)}: no samples ({type(e).__name__}: {e})", flush=True)
            continue
        for case in cases:
            outcomes = run_case(case, repeat=args.repeat)
            row = {"op": case.op, "sample": case.sample,
                   "outcomes": {k: asdict(v) for k, v in outcomes.items()}}
            rows.append(row)
            for mode in ("full", "fast"):
                kind = classify(outcomes, mode)
                if kind:
                    o = outcomes[f"ours {mode}"]
                    print(f"{case.op}[{case.sample}] {mode}: {kind}: {o.verdict} {o.message}",
                          flush=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)
    print()
    print(summarize(rows))


if __name__ == "__main__":
    main()
