"""Real custom autograd.Functions from public repositories, through our checker and torch's.

Run:  OPENBLAS_NUM_THREADS=1 python bench/functions.py --mirror DIR [--seeds 3] [--repeat 3]
      [--only NAME ...] [--json out.json]

``DIR`` holds fetched git directories laid out as ``owner+name/repo`` (what the search tool's
``fetch`` leaves). Each Function is loaded at run time from the commit pinned in
``bench/functions.csv`` (extracted into a temporary directory and imported from there); no
public code is committed here. Each row is run as its authors wrote it (the correct run) and
with 2-4 planted backward bugs (a subclass whose backward transforms the original's
result), through check_grad in full and fast mode at every seed and through
torch.autograd.gradcheck in slow and fast mode (torch's fast mode at the same seeds), each
on the same float64 inputs, one thread. A run prints one line per Function and variant and
a summary: false alarms (a correct run that fails), catches, inconclusives, and the median
over Functions of our time over torch's (CPU time, the smallest of ``--repeat`` runs).
"""
from __future__ import annotations

import argparse
import csv
import importlib
import importlib.util
import inspect
import json
import statistics
import subprocess
import sys
import tempfile
import time
import types
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import torch

from gradcheck.checks import GradcheckError, check_grad

MANIFEST = Path(__file__).with_name("functions.csv")


# -- loading pinned code from snapshots ------------------------------------------------------
@dataclass
class Row:
    name: str
    repo: str
    commit: str
    path: str  # a file, or a directory to extract (a package)
    module: str  # import name when path is a package directory, else ""
    symbol: str  # attribute of the module: the autograd.Function
    stubs: str  # modules to stub (compiled extensions the Function does not use)
    kind: str  # the harness in CASES that builds inputs for it
    finding: str  # a real bug in the correct run, found by this benchmark, or ""


def read_manifest(path: Path = MANIFEST) -> list[Row]:
    with open(path, newline="") as handle:
        return [Row(**{k: v or "" for k, v in r.items()}) for r in csv.DictReader(handle)]


def load(row: Row, mirror: Path, cache: Path):
    """The autograd.Function of ``row``, imported from its pinned commit."""
    git_dir = mirror / row.repo.replace("/", "+") / "repo"
    target = cache / row.repo.replace("/", "+") / row.commit
    if not (target / row.path).exists():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", row.commit,
                                  row.path], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    for name in row.stubs.split():
        sys.modules.setdefault(name, types.ModuleType(name))
    if row.module:
        root = str(target / row.path).rsplit("/" + row.module.split(".")[0], 1)[0]
        if root not in sys.path:
            sys.path.insert(0, root)
        module = importlib.import_module(row.module)
    else:
        unique = f"bench_functions_{row.repo.replace('/', '_').replace('-', '_')}_{row.name}"
        spec = importlib.util.spec_from_file_location(unique, target / row.path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[unique] = module
        spec.loader.exec_module(module)
    found = module
    for part in row.symbol.split("."):
        found = getattr(found, part)
    if not (isinstance(found, type) and issubclass(found, torch.autograd.Function)):
        found = found()  # a factory of Functions (qpth's QPFunction), with its defaults
        found = getattr(found, "__self__", found)  # it may return the Function's apply
    return found


# -- planted bugs: a subclass whose backward transforms the original's result ----------------
def planted(function: type, bug) -> type:
    """``function`` with ``bug(call, grad_outputs, ctx)`` as its backward, where ``call`` runs
    the original backward on the grad_outputs it is given."""
    original = inspect.getattr_static(function, "backward")
    if isinstance(original, classmethod):
        def backward(cls, ctx, *grads):
            return bug(lambda gs: function.backward.__func__(cls, ctx, *gs), grads, ctx)
        body = {"backward": classmethod(backward)}
    else:
        def backward(ctx, *grads):
            return bug(lambda gs: function.backward(ctx, *gs), grads, ctx)
        body = {"backward": staticmethod(backward)}
    return type(function.__name__ + "Planted", (function,), body)


def _first(result, ctx, change):
    """Apply ``change`` to the gradient of the first input that needs one."""
    items = list(result) if isinstance(result, tuple) else [result]
    at = next(i for i, g in enumerate(items) if g is not None and ctx.needs_input_grad[i])
    items[at] = change(items[at])
    return tuple(items) if isinstance(result, tuple) else items[0]


def _scaled(factor):
    return lambda call, grads, ctx: _first(call(grads), ctx, lambda g: g * factor)


def _one_entry(call, grads, ctx):
    def change(g):
        g = g.clone()
        g.view(-1)[g.numel() // 2] *= 1.1
        return g
    return _first(call(grads), ctx, change)


def _rolled(call, grads, ctx):
    return _first(call(grads), ctx, lambda g: torch.roll(g, 1, dims=-1))


def _ignores_grad_output(call, grads, ctx):
    return call([None if g is None else torch.ones_like(g) for g in grads])


BUGS = {
    "ignores grad_output": _ignores_grad_output,
    "1% off": _scaled(1.01),
    "one entry 10% off": _one_entry,
    "rolled by one": _rolled,
}


# -- how each Function is called ---------------------------------------------------------------
def _randn(gen, *shape, scale=1.0, grad=True):
    x = torch.randn(*shape, generator=gen, dtype=torch.float64) * scale
    return x.requires_grad_(grad)


def _elementwise(f, gen):
    return f.apply, (_randn(gen, 4, 6, scale=2.0),)


def _labels(gen, n, classes):
    return torch.randint(0, classes, (n,), generator=gen)


def _focal(f, gen):
    label = (torch.rand(4, 6, generator=gen) > 0.5).double()
    return (lambda x: f.apply(x, label, 0.25, 2.0)), (_randn(gen, 4, 6),)


def _label_smooth(f, gen):
    label = _labels(gen, 4, 5)
    return (lambda x: f.apply(x, label, 0.1, -100)), (_randn(gen, 4, 5),)


def _large_margin(f, gen):
    label = _labels(gen, 4, 5)
    return (lambda x: f.apply(x, label, 0.3)), (_randn(gen, 4, 5),)


def _layer_norm(f, gen):
    return (lambda x: f.apply(x, 1e-5)), (_randn(gen, 2, 5, 3),)


def _soft_dice(f, gen):  # as its module calls it: one row of every pixel
    label = (torch.rand(1, 8, generator=gen) > 0.5).double()
    return (lambda x: f.apply(x, label, 1, 1.0)), (_randn(gen, 1, 8),)


def _pc_softmax(f, gen):
    label = _labels(gen, 4, 5)
    return (lambda x: f.apply(x, label, [0.1, 0.3, 0.2, 0.25, 0.15], "mean", -100)), (
        _randn(gen, 4, 5),)


def _rows(f, gen):  # sparsemax and entmax along the last dimension
    return (lambda x: f.apply(x, -1)), (_randn(gen, 3, 5),)


def _tangent(f, gen):  # so(3) / se(3) tangent vectors, batch of 4
    return f.apply, (_randn(gen, 4, f.__dict__.get("_bench_size", 3), scale=0.7),)


def _tangent6(f, gen):
    return f.apply, (_randn(gen, 4, 6, scale=0.7),)


def _matrix3(f, gen):
    return f.apply, (_randn(gen, 4, 3, 3),)


def _matrix44(f, gen):
    return f.apply, (_randn(gen, 4, 4, 4),)


def _quaternion(f, gen):  # unit quaternions: the function's domain
    q = torch.randn(4, 4, generator=gen, dtype=torch.float64)
    return f.apply, ((q / q.norm(dim=-1, keepdim=True)).requires_grad_(),)


def _matrix34(f, gen):
    return f.apply, (_randn(gen, 4, 3, 4),)


def _sparse_mv(f, gen):
    rows, cols = 4, 5
    pattern = [[0, 2], [1, 3, 4], [0], [2, 4]]
    row_ptr = torch.tensor([0] + list(torch.cumsum(torch.tensor([len(p) for p in pattern]),
                                                   0)), dtype=torch.int64)
    col_ind = torch.tensor([c for p in pattern for c in p], dtype=torch.int64)
    values = _randn(gen, 2, len(col_ind))
    v = _randn(gen, 2, cols if "Mv" in f.__name__ and "Mtv" not in f.__name__ else rows)
    return (lambda a, x: f.apply(cols, row_ptr, col_ind, a, x)), (values, v)


def _spmm(f, gen):
    indices = torch.tensor([[0, 0, 1, 2, 3, 3], [1, 3, 2, 0, 0, 2]])
    return (lambda values, b: f.apply(indices, values, torch.Size([4, 4]), b)), (
        _randn(gen, 6), _randn(gen, 4, 3))


def _coupling(f, gen, affine=False):
    torch.manual_seed(int(torch.randint(0, 2**31, (1,), generator=gen)))
    size = 2

    class Half(torch.nn.Module):  # Fm, Gm: (n, c/2) -> (n, c/2), or (log s, t) for affine
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(size, size).double()

        def forward(self, x):
            y = torch.tanh(self.layer(x))
            return (0.1 * y, y) if affine else y

    fm, gm = Half(), Half()
    weights = [p.detach() for p in list(fm.parameters()) + list(gm.parameters())]
    return (lambda x: f.apply(x, fm, gm, *weights)), (_randn(gen, 3, 2 * size),)


def _qp(f, gen):
    nz, nineq = 3, 2
    m = torch.randn(nz, nz, generator=gen, dtype=torch.float64)
    q = m @ m.T + nz * torch.eye(nz, dtype=torch.float64)
    g = torch.randn(nineq, nz, generator=gen, dtype=torch.float64)
    h = torch.ones(nineq, dtype=torch.float64)  # z = 0 is feasible
    empty = torch.empty(0, dtype=torch.float64)
    return (lambda p: f.apply(q, p, g, h, empty, empty)), (_randn(gen, nz),)


def _shift(f, gen):
    return (lambda x: f.apply(x.clone(), 1)), (_randn(gen, 1, 3, 4, 2, 2),)


def _spd(f, gen):
    a = torch.randn(2, 4, 4, generator=gen, dtype=torch.float64)
    m = a @ a.transpose(1, 2) / 4 + torch.eye(4, dtype=torch.float64)
    return f.apply, (m.requires_grad_(),)


CASES = {
    "elementwise": _elementwise, "focal": _focal, "label smooth": _label_smooth,
    "large margin": _large_margin, "layer norm": _layer_norm, "soft dice": _soft_dice,
    "pc softmax": _pc_softmax, "rows": _rows, "tangent": _tangent, "tangent6": _tangent6,
    "matrix3": _matrix3, "matrix34": _matrix34, "matrix44": _matrix44,
    "quaternion": _quaternion, "sparse mv": _sparse_mv, "spmm": _spmm,
    "coupling": _coupling, "affine coupling": lambda f, g: _coupling(f, g, affine=True),
    "qp": _qp, "shift": _shift, "spd": _spd,
}


# -- running -----------------------------------------------------------------------------------
@dataclass
class Outcome:
    verdict: str  # pass, fail, inconclusive, kink, error
    seconds: float
    message: str = ""


@dataclass
class Result:
    name: str
    variant: str  # "correct" or the planted bug
    outcomes: dict[str, list[Outcome]] = field(default_factory=dict)  # checker -> per seed


def ours(fn, inputs, mode: str, seed: int) -> tuple[str, str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = check_grad(fn, inputs, mode=mode, seed=seed, raise_on_failure=False)
    except GradcheckError as e:
        return "error", str(e).splitlines()[0][:200]
    if r.verdict == "passed":
        return ("kink" if r.nondifferentiable else "pass"), ""
    if r.verdict == "inconclusive":
        return "inconclusive", r.inconclusive[0][:200]
    return "fail", (r.problems[0] if r.problems else str(r).splitlines()[-1])[:200]


def theirs(fn, inputs, fast: bool, seed: int) -> tuple[str, str]:
    torch.manual_seed(seed)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ok = torch.autograd.gradcheck(fn, inputs, fast_mode=fast, raise_exception=True)
    except Exception as e:  # noqa: BLE001 - a failed check raises; the message is the finding
        failed = type(e).__name__ == "GradcheckError"  # torch's: a mismatch, in its words
        return ("fail" if failed else "error"), str(e).splitlines()[0][:200]
    return ("pass" if ok else "fail"), ""


CHECKERS = {
    "ours full": lambda fn, x, s: ours(fn, x, "full", s),
    "ours fast": lambda fn, x, s: ours(fn, x, "fast", s),
    "torch slow": lambda fn, x, s: theirs(fn, x, False, s),
    "torch fast": lambda fn, x, s: theirs(fn, x, True, s),
}
SEEDED = {"ours full", "ours fast", "torch fast"}  # torch slow has no randomness


def timed(build, run, repeat: int) -> Outcome:
    """The verdict of the first run; the smallest CPU time of ``repeat`` runs, each on fresh
    inputs from ``build()`` (a Function may change its inputs in place)."""
    seconds, first = [], None
    for _ in range(repeat):
        fn, inputs = build()
        start = time.process_time()
        found = run(fn, inputs)
        seconds.append(time.process_time() - start)
        first = first or found
    return Outcome(first[0], min(seconds), first[1])


def run_row(row: Row, function: type, seeds: int, repeat: int) -> list[Result]:
    results = []
    for variant in ["correct"] + BUGS_OF.get(row.kind, DEFAULT_BUGS):
        tested = function if variant == "correct" else planted(function, BUGS[variant])
        result = Result(row.name, variant)
        for checker, run in CHECKERS.items():
            per_seed = []
            for seed in range(seeds if checker in SEEDED else 1):
                build = lambda seed=seed: CASES[row.kind](  # noqa: E731
                    tested, torch.Generator().manual_seed(seed))
                per_seed.append(timed(build, lambda fn, x, seed=seed: run(fn, x, seed), repeat))
            result.outcomes[checker] = per_seed
        results.append(result)
    return results


DEFAULT_BUGS = ["ignores grad_output", "1% off", "rolled by one"]
BUGS_OF: dict[str, list[str]] = {}


# -- the summary -------------------------------------------------------------------------------
def verdicts(result: Result, checker: str) -> set[str]:
    return {o.verdict for o in result.outcomes[checker]}


def summarize(results: list[Result]) -> str:
    """Verdict counts per checker, on the Functions without a finding (the others are
    counted apart: their correct runs fail for a real reason, and so do their planted bugs),
    and the median time ratios over the correct runs of those Functions."""
    found = {r.name for r in read_manifest() if r.finding} & {r.name for r in results}
    clean = [r for r in results if r.name not in found]
    correct = [r for r in clean if r.variant == "correct"]
    bugs = [r for r in clean if r.variant != "correct"]
    lines = [f"{len(correct) + len(found)} Functions: {len(correct)} without a finding "
             f"({len(bugs)} planted bugs), {len(found)} with a real bug (bench/functions.csv)",
             "",
             "| checker | false alarms | inconclusive (correct) | bugs caught at every seed "
             "| bugs inconclusive | bugs missed | errors |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for checker in CHECKERS:
        alarms = sum("fail" in verdicts(r, checker) for r in correct)
        unsure = sum("inconclusive" in verdicts(r, checker) for r in correct)
        caught = sum(verdicts(r, checker) == {"fail"} for r in bugs)
        unsure_bugs = sum("inconclusive" in verdicts(r, checker) and not
                          verdicts(r, checker) & {"pass", "kink"} for r in bugs)
        missed = sum(bool(verdicts(r, checker) & {"pass", "kink"}) for r in bugs)
        errors = sum("error" in verdicts(r, checker) for r in clean)
        lines.append(f"| {checker} | {alarms} | {unsure} | {caught} | {unsure_bugs} | "
                     f"{missed} | {errors} |")
    lines.append("")
    for ours_name, torch_name in (("ours fast", "torch fast"), ("ours full", "torch slow")):
        ratios = [_median_time(r, ours_name) / _median_time(r, torch_name) for r in correct
                  if _median_time(r, torch_name) > 0]
        times = [_median_time(r, ours_name) for r in correct]
        peer = [_median_time(r, torch_name) for r in correct]
        lines.append(f"{ours_name} / {torch_name}: median ratio over correct runs "
                     f"{statistics.median(ratios):.2f} (range {min(ratios):.2f}-"
                     f"{max(ratios):.2f}); median CPU {1e3 * statistics.median(times):.2f} ms "
                     f"vs {1e3 * statistics.median(peer):.2f} ms")
    return "\n".join(lines)


def _median_time(result: Result, checker: str) -> float:
    return statistics.median(o.seconds for o in result.outcomes[checker])


def load_results(path: str) -> list[Result]:
    found = []
    for row in json.load(open(path)):
        result = Result(row["name"], row["variant"])
        result.outcomes = {c: [Outcome(**o) for o in os] for c, os in row["outcomes"].items()}
        found.append(result)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path,
                        help="directory of fetched git dirs (owner+name/repo)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", nargs="*", help="only these rows (by name)")
    parser.add_argument("--json", help="write every outcome to this file")
    parser.add_argument("--summarize", help="only summarize this --json file")
    args = parser.parse_args()
    if args.summarize:
        print(summarize(load_results(args.summarize)))
        return
    torch.set_num_threads(1)
    rows = [r for r in read_manifest() if not args.only or r.name in args.only]
    results = []
    with tempfile.TemporaryDirectory() as cache:
        for row in rows:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecations in code we do not own
                function = load(row, args.mirror, Path(cache))
            for result in run_row(row, function, args.seeds, args.repeat):
                results.append(result)
                print(f"{result.name:28s} {result.variant:20s} " + "  ".join(
                    f"{c}: {','.join(sorted(verdicts(result, c)))} "
                    f"{1e3 * _median_time(result, c):.1f}ms" for c in CHECKERS), flush=True)
                for c in CHECKERS:
                    notes = {o.message for o in result.outcomes[c] if o.message and
                             o.verdict in ("error", "inconclusive")}
                    for note in notes:
                        print(f"    {c}: {note}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump([{"name": r.name, "variant": r.variant, "outcomes": {
                c: [vars(o) for o in os] for c, os in r.outcomes.items()}} for r in results],
                out, indent=1)
    print()
    print(summarize(results))


if __name__ == "__main__":
    main()
