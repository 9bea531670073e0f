"""Real models, unchanged, trained on torch and on the engine from the same weights and batches.

Each row of ``bench/engine_models.csv`` names a repository, a pinned commit, the file holding
the model and a recipe (in ``bench/engine_models_recipes.py``) saying how to configure and
train it, as the repository's own script would. The repository's files are read at run time
from a local git snapshot (``--mirrors DIR`` holds ``owner+name/`` git directories); nothing
fetched is stored here. The model file is imported twice, once with ``torch`` bound to PyTorch
and once (under ``as_torch()``) to ``gradcheck.ref``, without editing a line of it.

Both copies run in float64 from torch's initial weights (copied by name) on the same batches.
For each model the run records whether the engine trained it unchanged, the largest
relative difference of the losses and of the parameters after training, and the time of a
training step: steps alternate torch/engine in one single-threaded process (BLAS thread
variables set to 1 before numpy and torch load, ``torch.set_num_threads(1)``), and the
ratio is of the medians.

    python bench/engine_models.py --mirrors PATH/TO/mirrors [--steps 5] [--timed 7]
    python bench/engine_models.py --mirrors PATH --only nanogpt_gpt --show-errors
    python bench/engine_models.py --mirrors PATH --markdown     # the table in the docs
    python bench/engine_models.py --mirrors PATH --only wlm_lstm --profile DIR   # cProfile
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import types
from pathlib import Path

MANIFEST = Path(__file__).with_suffix(".csv")
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


# ----------------------------------------------------------------------------- snapshots
def git_dir(folder: Path) -> Path:
    """A snapshot folder is a git directory or holds one (``repo/`` or ``repo/.git``)."""
    for candidate in (folder, folder / "repo", folder / "repo" / ".git", folder / ".git"):
        if (candidate / "HEAD").exists():
            return candidate
    raise SystemExit(f"{folder} holds no git snapshot; fetch the repository first")


def checkout_python(mirror: Path, commit: str, into: Path) -> None:
    """Write the repository's .py files at ``commit`` under ``into`` (git archive)."""
    archive = subprocess.run(["git", f"--git-dir={mirror}", "archive", commit, "--", "*.py"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def require_installed(requirement: str) -> None:
    """A ``pypi:name==version`` row uses the installed package, which must be that version."""
    from importlib import metadata

    name, _, version = requirement.partition("==")
    installed = metadata.version(name)
    if version and installed != version:
        raise RuntimeError(f"{name} {installed} is installed; the manifest pins {version}")
    stub_missing_torchvision()


def stub_missing_torchvision() -> None:
    """torchvision has no build for this torch here; packages that import it for data
    transforms get a stub of its names (the same for both libraries)."""
    import importlib.abc
    import importlib.machinery

    try:
        import torchvision  # noqa: F401
        return
    except Exception:  # noqa: BLE001 - absent, or broken against this torch
        for name in [n for n in sys.modules if n.split(".")[0] == "torchvision"]:
            del sys.modules[name]

    class Anything(type):
        def __getattr__(cls, name: str):
            if name.startswith("__"):
                raise AttributeError(name)
            return Anything(name, (), {"__init__": lambda self, *a, **k: None})

    class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] == "torchvision":
                return importlib.machinery.ModuleSpec(name, self, is_package=True)
            return None

        def create_module(self, spec):
            module = types.ModuleType(spec.name)
            module.__path__ = []
            module.__getattr__ = lambda name: Anything.__getattr__(Anything, name)
            return module

        def exec_module(self, module) -> None:
            """Nothing to run: every name is made on demand."""

    sys.meta_path.insert(0, Finder())


# ----------------------------------------------------------------------------- importing
class Importer:
    """Import a repository's module twice: with real torch, then bound to the engine."""

    def __init__(self, root: Path) -> None:
        self.root = root

    # installed packages whose classes subclass torch's: re-imported for each library
    PACKAGES = ("einops.layers.torch", "einops._torch_specific", "timm", "safetensors.torch")

    def _local_modules(self) -> list[str]:
        """Modules loaded from the checkout, and the packages above."""
        names = []
        for name, module in list(sys.modules.items()):
            path = getattr(module, "__file__", None) or ""
            if path.startswith(str(self.root)) or any(
                    name == p or name.startswith(p + ".") for p in self.PACKAGES):
                names.append(name)
        return names

    def load(self, relative_dir: str, module: str, engine: bool, defs: dict | None = None):
        for name in self._local_modules():
            del sys.modules[name]
        folder = str(self.root / relative_dir)
        sys.path.insert(0, folder)
        sys.path.insert(0, str(self.root))
        try:
            with engine_context(engine):
                if defs is not None:
                    return load_definitions(Path(folder) / f"{module}.py", **defs)
                return importlib.import_module(module)
        finally:
            sys.path.remove(folder)
            sys.path.remove(str(self.root))


def load_definitions(path: Path, globals: dict, keep: tuple = ()) -> types.ModuleType:
    """A training *script* as a module of its definitions: its imports, classes, functions
    and the top-level assignments named in ``keep``, run unchanged in a namespace holding
    ``globals`` (what its argument parser would have produced). Its data loading, training
    loop and argument parsing are left out; imports of packages that are not installed
    (torchvision) are skipped."""
    import ast

    tree = ast.parse(path.read_text(), str(path))
    module = types.ModuleType(path.stem)
    module.__file__ = str(path)
    module.__dict__.update(globals)
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            try:
                exec(compile(ast.Module([node], []), str(path), "exec"), module.__dict__)
            except ImportError:
                continue
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) or (
                isinstance(node, ast.Assign) and all(
                    isinstance(t, ast.Name) and t.id in keep for t in node.targets)):
            exec(compile(ast.Module([node], []), str(path), "exec"), module.__dict__)
    return module


@contextlib.contextmanager
def engine_context(engine: bool):
    """``import torch`` inside the model's code resolves to the engine while it runs."""
    if not engine:
        yield
        return
    from gradcheck.ref.alias import as_torch

    with as_torch():
        yield


# ----------------------------------------------------------------------------- randomness
_streams: dict = {}


def seed_step(step: int, engine: bool) -> None:
    """Before each step, the same seeds for both libraries: numpy's and Python's global
    streams (scripts draw noise from them) and each library's shared stream."""
    import random

    import numpy as np

    np.random.seed(10_000 + step)
    random.seed(10_000 + step)
    _streams[engine] = np.random.default_rng(20_000 + step)


def share_random(lib) -> None:
    """Dropout masks and in-place uniform/normal fills (the initialisers of layers a model
    creates inside ``forward``) from a numpy stream seeded per step, the same for both
    libraries: their own generators differ by design."""
    import numpy as np

    engine = lib.__name__.startswith("gradcheck")

    def stream():
        return _streams.setdefault(engine, np.random.default_rng(0))

    def dropout(input, p=0.5, training=True, inplace=False):
        if not training or p == 0:
            return input
        keep = (stream().random(tuple(input.shape)) >= p) / (1 - p)
        out = input * lib.tensor(keep, dtype=input.dtype)
        return input.copy_(out) if inplace else out

    def uniform_(self, a=0.0, b=1.0, *, generator=None):
        with lib.no_grad():
            return self.copy_(lib.tensor(stream().uniform(a, b, tuple(self.shape))))

    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        with lib.no_grad():
            return self.copy_(lib.tensor(stream().normal(mean, std, tuple(self.shape))))

    lib.nn.functional.dropout = dropout
    lib.Tensor.uniform_, lib.Tensor.normal_ = uniform_, normal_


# ----------------------------------------------------------------------------- one model
def sync_weights(theirs, ours) -> None:
    """Copy torch's parameters and buffers into the engine model, by name."""
    import gradcheck.ref as engine

    state = theirs.state_dict()
    mine = ours.state_dict(keep_vars=True)
    missing = sorted(set(state) ^ set(mine))
    if missing:
        raise RuntimeError(f"state names differ between torch and engine: {missing[:5]}")
    with engine.no_grad():
        for key, value in state.items():
            mine[key].copy_(engine.tensor(value.detach().cpu().numpy(), dtype=mine[key].dtype))


def max_relative(a, b) -> float:
    import numpy as np

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return float("inf")
    scale = np.maximum(np.abs(b), 1e-12 + 1e-6 * np.abs(b).max(initial=0.0))
    return float(np.max(np.abs(a - b) / scale, initial=0.0))


def record_gradients(model, largest: dict) -> None:
    """The largest |gradient| each parameter has had (torch's side)."""
    for name, param in model.named_parameters():
        if param.grad is not None:
            value = float(param.grad.detach().abs().max()) if param.grad.numel() else 0.0
            largest[name] = max(largest.get(name, 0.0), value)


def tensor_relative(a, b) -> float:
    """max |a - b| over the tensor's own scale (max |b|): parameters near zero would make an
    elementwise ratio measure rounding noise, not disagreement."""
    import numpy as np

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return float("inf")
    if not a.size:
        return 0.0
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def run_model(row: dict, mirrors: Path, steps: int, timed: int,
              profile: Path | None = None) -> dict:
    """Train one model on both libraries; returns the row of the report."""
    import numpy as np
    import torch

    import gradcheck.ref as engine
    import engine_models_recipes as recipes

    torch.set_num_threads(1)
    result = {"name": row["name"], "repository": row["repository"], "unchanged": False}
    recipe = getattr(recipes, row["recipe"])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if row["repository"].startswith("pypi:"):
            require_installed(row["repository"][len("pypi:"):])
        else:
            checkout_python(git_dir(mirrors / row["repository"].replace("/", "+")),
                            row["commit"], root)
        importer = Importer(root)
        folder, _, module = row["path"].rpartition("/")
        module = module[:-3] if module.endswith(".py") else module
        runs = {}
        defs = getattr(recipes, "DEFINITIONS", {}).get(row["recipe"])
        for lib, is_engine in ((torch, False), (engine, True)):
            share_random(lib)
            lib.set_default_dtype(lib.float64)
            source = importer.load(folder, module, is_engine, defs)
            lib.manual_seed(0)
            lib.set_default_dtype(lib.float64)
            try:
                with engine_context(is_engine):
                    runs[is_engine] = recipe(lib, source, np.random.default_rng(0))
            except Exception as exc:  # noqa: BLE001 - report what stopped the model
                if not is_engine:
                    raise
                result["error"] = f"{type(exc).__name__}: {exc}"
                result["traceback"] = traceback.format_exc()
                return result
        theirs, ours = runs[False], runs[True]
        try:
            with engine_context(True):
                sync_weights(theirs.model, ours.model)
            losses = {False: [], True: []}
            times = {False: [], True: []}
            largest_grad: dict = {}
            for step in range(steps + timed):
                for is_engine, run in ((False, theirs), (True, ours)):
                    seed_step(step, is_engine)
                    with engine_context(is_engine):
                        start = time.perf_counter()
                        loss = run.step(step)
                        elapsed = time.perf_counter() - start
                    losses[is_engine].append(float(loss))
                    if step >= steps:
                        times[is_engine].append(elapsed)
                    if not is_engine:
                        record_gradients(run.model, largest_grad)
        except Exception as exc:  # noqa: BLE001
            if "site-packages/torch/" in traceback.format_exc().splitlines()[-3]:
                raise  # the torch side failed: a harness or recipe problem, not the engine's
            result["error"] = f"{type(exc).__name__}: {exc}"
            result["traceback"] = traceback.format_exc()
            return result
    result["unchanged"] = True
    result["steps"] = steps + timed
    result["loss_rel"] = max_relative(losses[True], losses[False])
    t_params = {k: v.detach().numpy() for k, v in theirs.model.state_dict().items()}
    o_params = {k: v.detach().numpy() for k, v in ours.model.state_dict().items()}
    # NOTE: a parameter whose gradient is zero in exact arithmetic (a bias cancelled by the
    # normalisation after it) gets rounding noise as its gradient, and Adam turns noise into
    # steps of size lr: such parameters are listed apart, not compared.
    top = max(largest_grad.values(), default=0.0)
    noise = sorted(k for k, g in largest_grad.items() if g <= 1e-10 * top)
    diffs = {k: tensor_relative(o_params[k], t_params[k]) for k in t_params if k not in noise}
    result["noise_params"] = noise
    result["worst_param"] = max(diffs, key=diffs.get)
    result["param_rel"] = diffs[result["worst_param"]]
    result["torch_ms"] = 1000 * statistics.median(times[False])
    result["engine_ms"] = 1000 * statistics.median(times[True])
    result["ratio"] = result["engine_ms"] / result["torch_ms"]
    result["losses"] = [losses[False], losses[True]]
    if profile:
        profile_engine(ours, steps + timed, profile / f"{row['name']}.prof")
    return result


def profile_engine(run, first_step: int, target: Path, count: int = 20) -> None:
    """cProfile ``count`` more engine steps into ``target`` (read it with pstats)."""
    import cProfile

    profiler = cProfile.Profile()
    with engine_context(True):
        for step in range(first_step, first_step + count):
            seed_step(step, True)
            profiler.enable()
            run.step(step)
            profiler.disable()
    target.parent.mkdir(parents=True, exist_ok=True)
    profiler.dump_stats(str(target))


# ----------------------------------------------------------------------------- driver
def _child(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    rows = {r["name"]: r for r in read_manifest()}
    result = run_model(rows[args.child], args.mirrors, args.steps, args.timed, args.profile)
    print("RESULT " + json.dumps(result))


def read_manifest() -> list[dict]:
    with MANIFEST.open() as handle:
        return list(csv.DictReader(handle))


def _run_child(name: str, args: argparse.Namespace) -> dict:
    env = dict(os.environ, **{v: "1" for v in THREAD_VARIABLES})
    command = [sys.executable, __file__, "--child", name, "--mirrors", str(args.mirrors),
               "--steps", str(args.steps), "--timed", str(args.timed)]
    if args.profile:
        command += ["--profile", str(args.profile)]
    done = subprocess.run(command, capture_output=True, text=True, env=env,
                          timeout=args.timeout)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    return {"name": name, "unchanged": False,
            "error": f"harness failure (exit {done.returncode}): {done.stderr[-600:]}"}


def report(results: list[dict], markdown: bool) -> str:
    header = ("model", "repository", "unchanged", "max loss rel diff", "max param rel diff",
              "torch ms", "engine ms", "ratio")
    lines = []
    if markdown:
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in results:
        if r.get("unchanged"):
            cells = (r["name"], r["repository"], "yes", f"{r['loss_rel']:.1e}",
                     f"{r['param_rel']:.1e}", f"{r['torch_ms']:.1f}", f"{r['engine_ms']:.1f}",
                     f"{r['ratio']:.2f}x")
        else:
            cells = (r["name"], r.get("repository", ""), "no: " + r.get("error", "")[:70],
                     "", "", "", "", "")
        lines.append("| " + " | ".join(cells) + " |" if markdown else "  ".join(cells))
    ran = [r for r in results if r.get("unchanged")]
    repos = {r["repository"] for r in ran}
    for r in ran:
        if r.get("noise_params"):
            lines.append(f"{r['name']}: not compared (zero gradient in exact arithmetic, "
                         f"Adam steps on rounding noise): {', '.join(r['noise_params'])}")
    ratios = sorted(r["ratio"] for r in ran)
    worst_loss = max((r["loss_rel"] for r in ran), default=float("nan"))
    worst_param = max((r["param_rel"] for r in ran), default=float("nan"))
    lines.append(
        f"\n{len(ran)}/{len(results)} models ran unchanged ({len(repos)} repositories); "
        f"max loss rel diff {worst_loss:.1e}, max param rel diff {worst_param:.1e}; step "
        f"ratio engine/torch median {statistics.median(ratios) if ratios else float('nan'):.2f}x"
        f" (min {ratios[0] if ratios else float('nan'):.2f}x, max "
        f"{ratios[-1] if ratios else float('nan'):.2f}x)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, required=True,
                        help="folder of owner+name/ git snapshots")
    parser.add_argument("--steps", type=int, default=5, help="untimed training steps")
    parser.add_argument("--timed", type=int, default=7, help="timed steps after those")
    parser.add_argument("--only", nargs="*", help="model names to run")
    parser.add_argument("--timeout", type=int, default=900)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--show-errors", action="store_true")
    parser.add_argument("--json", type=Path, help="write every result here")
    parser.add_argument("--profile", type=Path,
                        help="also cProfile 20 engine steps of each model into DIR/NAME.prof")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args)
        return 0
    names = [r["name"] for r in read_manifest() if not args.only or r["name"] in args.only]
    results = []
    for name in names:
        result = _run_child(name, args)
        results.append(result)
        status = "ok" if result.get("unchanged") else "FAILED"
        print(f"{name}: {status}", file=sys.stderr, flush=True)
        if args.show_errors and not result.get("unchanged"):
            print(result.get("traceback", result.get("error")), file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(report(results, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
