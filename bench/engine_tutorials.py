"""Real tutorial and example training scripts, run unchanged on torch and on the engine.

Each script listed in ``bench/engine_tutorials.csv`` (repository, commit, path) is read from a
local snapshot of its repository (``--mirrors DIR`` holds ``owner+name/`` git directories, as
the project's ``fetch`` tool makes them) and run twice in a subprocess: once with ``torch`` as
real PyTorch and once with ``torch`` bound to ``gradcheck.ref`` (``as_torch()``). No fetched code
is stored in this repository. Both runs get the same harness:

- downloads become synthetic data: ``torchvision.datasets`` gives small fake MNIST/CIFAR sets
  drawn from a seeded numpy stream, ``matplotlib`` is a do-nothing stand-in, ``sys.argv`` is
  just the script name, and the few data files a script reads are written beforehand;
- randomness is shared: ``torch.rand*``/``randint``/``normal``, dropout masks and the
  DataLoader's shuffling come from seeded numpy streams in both runs; numpy's global stream
  and ``random`` are seeded, and ``PYTHONHASHSEED=0`` fixes the order of ``set()`` vocabularies;
- same weights: when the script builds an optimizer, the torch run saves its parameters and
  the engine run loads them, in order;
- a step budget: every scalar ``backward()`` records the loss; after ``--steps`` of them the
  run stops (a BaseException, so a script's ``except Exception`` cannot swallow it).

A script passes when the engine run finishes its budget without error and records the same
number of losses as torch, each within ``rtol=1e-3, atol=1e-5``.

    python bench/engine_tutorials.py --mirrors PATH/TO/mirrors [--steps 8] [--only NNLM]
    python bench/engine_tutorials.py --mirrors PATH --write   # refresh result/note in the CSV
"""
from __future__ import annotations

import argparse
import csv
import importlib.machinery
import json
import os
import random
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import numpy as np

MANIFEST = Path(__file__).with_suffix(".csv")
SEED = 1234


class BudgetReached(BaseException):
    """Raised after the step budget; ends a run as a success."""


class _Anything:
    """A permissive stand-in for plotting and other side-effect-only libraries."""

    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        return _Anything()

    def __call__(self, *args, **kwargs):
        return _Anything()

    def __iter__(self):
        return iter((_Anything(), _Anything()))

    def __getitem__(self, key):
        return _Anything()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _permissive(attr: str):
    if attr.startswith("__"):
        raise AttributeError(attr)
    return _Anything()


def _stub_module(name: str, **attrs) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)
    module.__getattr__ = _permissive  # type: ignore[attr-defined]
    module.__dict__.update(attrs)
    sys.modules[name] = module
    return module


# ---------------------------------------------------------------------------- child side
def _shared_random(torch, rng: np.random.Generator) -> None:
    """Route torch's random constructors and dropout through one seeded numpy stream."""

    def shape_of(size):
        if len(size) == 1 and isinstance(size[0], (tuple, list)) or (
            len(size) == 1 and type(size[0]).__name__ == "Size"
        ):
            return tuple(size[0])
        return tuple(int(s) for s in size)

    def make(array, dtype=None, requires_grad=False, **_):
        out = torch.tensor(array, dtype=dtype or torch.get_default_dtype())
        return out.requires_grad_(requires_grad) if requires_grad else out

    def randint(*args, size=None, dtype=None, **kwargs):
        if size is None:
            *bounds, size = args
        else:
            bounds = list(args)
        low, high = (0, bounds[0]) if len(bounds) == 1 else bounds
        out = rng.integers(low, high, size=tuple(size))
        return torch.tensor(out, dtype=dtype or torch.int64)

    def randperm(n, dtype=None, **_):
        return torch.tensor(rng.permutation(int(n)), dtype=dtype or torch.int64)

    def normal(mean=0.0, std=1.0, size=None, *, dtype=None, **_):
        mean_array = mean.detach().numpy() if hasattr(mean, "detach") else np.asarray(mean)
        std_array = std.detach().numpy() if hasattr(std, "detach") else np.asarray(std)
        shape = tuple(size) if size is not None else np.broadcast(mean_array, std_array).shape
        dtype = dtype or getattr(mean, "dtype", None) or getattr(std, "dtype", None)
        return make(mean_array + std_array * rng.standard_normal(shape), dtype=dtype)

    def dropout(input, p=0.5, training=True, inplace=False, *, channels=False):
        if not training or p == 0:
            return input
        shape = tuple(input.shape)
        if channels and len(shape) >= 3:  # one draw per channel, as dropout2d/3d do
            shape = shape[:2] + (1,) * (len(shape) - 2)
        keep = (rng.random(shape) >= p).astype(np.float32) / (1 - p)
        return input * torch.tensor(keep, dtype=input.dtype)

    def channel_dropout(input, p=0.5, training=True, inplace=False):
        return dropout(input, p, training, inplace, channels=True)

    torch.randn = lambda *size, **kw: make(rng.standard_normal(shape_of(size)), **_kw(kw))
    torch.rand = lambda *size, **kw: make(rng.random(shape_of(size)), **_kw(kw))
    torch.randn_like = lambda x, **kw: make(rng.standard_normal(tuple(x.shape)),
                                            **_kw({"dtype": x.dtype, **kw}))
    torch.rand_like = lambda x, **kw: make(rng.random(tuple(x.shape)),
                                           **_kw({"dtype": x.dtype, **kw}))
    torch.randint = randint
    # Shuffling gets its own stream: torch and the engine seed their samplers differently.
    shuffle_rng = np.random.default_rng(SEED + 1)
    torch.utils.data.RandomSampler.__iter__ = lambda self: iter(
        shuffle_rng.permutation(len(self.data_source)).tolist())
    torch.randperm = randperm
    torch.normal = normal
    torch.nn.functional.dropout = dropout
    for name in ("dropout1d", "dropout2d", "dropout3d"):
        setattr(torch.nn.functional, name, channel_dropout)


def _kw(kwargs: dict) -> dict:
    return {k: v for k, v in kwargs.items() if k in ("dtype", "requires_grad")}


def _fake_torchvision(torch, rng: np.random.Generator) -> None:
    """``torchvision`` with small synthetic datasets and pass-through transforms."""

    class FakeImages(torch.utils.data.Dataset):
        shape = (1, 28, 28)
        classes = tuple(range(10))

        def __init__(self, root=None, train=True, transform=None, target_transform=None,
                     download=False, **_):
            count = 200  # a multiple of the batch sizes scripts hard-code, above the largest (128)
            pixels = rng.integers(0, 256, size=(count, *self.shape[1:], self.shape[0]))
            self.data = torch.tensor(pixels.squeeze(-1) if self.shape[0] == 1 else pixels,
                                     dtype=torch.uint8)
            self.targets = torch.tensor(rng.integers(0, 10, size=count), dtype=torch.int64)
            self.train_data = self.test_data = self.data
            self.train_labels = self.test_labels = self.targets
            self.transform = transform
            self.target_transform = target_transform
            self._images = rng.random((count, *self.shape)).astype(np.float32)

        def __len__(self):
            return len(self._images)

        def __getitem__(self, index):
            image = torch.tensor(self._images[index])
            if self.transform is not None:
                image = self.transform(image)
            target = int(self.targets[index])
            if self.target_transform is not None:
                target = self.target_transform(target)
            return image, target

    class FakeColour(FakeImages):
        shape = (3, 32, 32)

    class Compose:
        def __init__(self, steps):
            self.steps = steps

        def __call__(self, x):
            for step in self.steps:
                x = step(x)
            return x

    class Normalize:
        def __init__(self, mean, std, inplace=False):
            self.mean, self.std = mean, std

        def __call__(self, x):
            mean = torch.tensor(self.mean, dtype=x.dtype).reshape(-1, 1, 1)
            std = torch.tensor(self.std, dtype=x.dtype).reshape(-1, 1, 1)
            return (x - mean) / std

    def identity(*args, **kwargs):
        return lambda x: x

    transforms = _stub_module("torchvision.transforms", Compose=Compose, Normalize=Normalize,
                              ToTensor=identity, Resize=identity, CenterCrop=identity,
                              RandomCrop=identity, RandomHorizontalFlip=identity,
                              Pad=identity, Grayscale=identity)
    transforms.__getattr__ = (  # type: ignore[attr-defined]
        lambda attr: _permissive(attr) if attr.startswith("__") else identity)
    datasets = _stub_module("torchvision.datasets", MNIST=FakeImages, FashionMNIST=FakeImages,
                            CIFAR10=FakeColour)
    utils = _stub_module("torchvision.utils")
    vision = _stub_module("torchvision", transforms=transforms, datasets=datasets, utils=utils)
    vision.__path__ = []  # a package, so `from torchvision import x` works


def _budget_and_weights(torch, steps: int, record: dict, weights: Path, load: bool) -> None:
    """Record each scalar loss, stop after `steps`, and share the initial weights."""
    original_backward = torch.Tensor.backward

    def backward(self, *args, **kwargs):
        if self.numel() == 1:
            record["losses"].append(float(self.detach().reshape(())))
        out = original_backward(self, *args, **kwargs)
        if len(record["losses"]) >= steps:
            raise BudgetReached
        return out

    torch.Tensor.backward = backward
    saved: list[np.ndarray] = [] if load else None
    if load:
        with np.load(weights) as archive:
            saved = [archive[f"p{i}"] for i in range(len(archive.files))]
    counter = {"next": 0}
    original_init = torch.optim.Optimizer.__init__

    def init(self, params, *args, **kwargs):
        params = list(params)
        tensors = [p for group in params for p in (group["params"] if isinstance(group, dict)
                                                   else [group])]
        with torch.no_grad():
            for tensor in tensors:
                index = counter["next"]
                counter["next"] += 1
                if load:
                    if index < len(saved) and tuple(saved[index].shape) == tuple(tensor.shape):
                        tensor.copy_(torch.tensor(saved[index], dtype=tensor.dtype))
                    else:
                        record["weights"] = "mismatch"
                else:
                    record.setdefault("params", []).append(tensor.detach().numpy().copy())
        original_init(self, params, *args, **kwargs)

    torch.optim.Optimizer.__init__ = init


def child(backend: str, script: Path, steps: int, out: Path) -> None:
    """Run one script under the harness; write losses and the first error to `out`."""
    rng = np.random.default_rng(SEED)
    np.random.seed(SEED)  # scripts that draw their data with numpy's global stream
    random.seed(SEED)
    for name in ("matplotlib", "mpl_toolkits", "sklearn"):
        _stub_module(name).__path__ = []  # packages, so their submodules import
    for name in ("matplotlib.pyplot", "matplotlib.cm", "matplotlib.ticker", "mpl_toolkits.mplot3d",
                 "sklearn.manifold", "tensorboardX"):
        _stub_module(name)
    if backend == "ref":
        from gradcheck.ref.alias import as_torch

        context = as_torch()
        torch = context.__enter__()
    else:
        import torch
    _fake_torchvision(torch, rng)
    record: dict = {"losses": [], "error": None}
    weights = out.parent / "torch.npz"  # written by the torch run, read by the engine run
    _shared_random(torch, rng)
    _budget_and_weights(torch, steps, record, weights, load=backend == "ref")
    sys.argv = [str(script)]
    os.chdir(script.parent)
    sys.path.insert(0, str(script.parent))
    import runpy

    try:
        runpy.run_path(str(script), run_name="__main__")
    except BudgetReached:
        pass
    except BaseException as exc:  # noqa: BLE001 - the first error of the script is the result
        record["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    params = record.pop("params", [])
    if backend == "torch":
        np.savez(weights, **{f"p{i}": p for i, p in enumerate(params)})
    out.write_text(json.dumps(record))


# --------------------------------------------------------------------------- parent side
# Data files a few scripts read from disk, replaced by small synthetic ones.
def _data_files(path: str, workdir: Path) -> None:
    rng = np.random.default_rng(SEED)
    if path.endswith("07_diabets_logistic.py"):
        (workdir / "data").mkdir(exist_ok=True)
        table = np.hstack([rng.uniform(-1, 1, (96, 8)), rng.integers(0, 2, (96, 1))])
        np.savetxt(workdir / "data" / "diabetes.csv.gz", table, delimiter=",", fmt="%.6f")
    if path.endswith("language_model/main.py"):
        (workdir / "data").mkdir(exist_ok=True)
        words = [f"w{i}" for i in range(50)]
        lines = [" ".join(rng.choice(words, 12)) for _ in range(400)]
        (workdir / "data" / "train.txt").write_text("\n".join(lines) + "\n")


def _materialise(mirror: Path, commit: str, path: str, workdir: Path) -> Path:
    """Write the script and its sibling .py files (imports) from the snapshot."""
    folder = str(Path(path).parent)
    listing = subprocess.run(
        ["git", f"--git-dir={mirror}", "ls-tree", "--name-only", commit,
         *([] if folder == "." else [folder + "/"])],
        check=True, capture_output=True, text=True).stdout.split()
    for name in listing:
        if name.endswith(".py"):
            text = subprocess.run(["git", f"--git-dir={mirror}", "show", f"{commit}:{name}"],
                                  check=True, capture_output=True, text=True).stdout
            (workdir / Path(name).name).write_text(text)
    _data_files(path, workdir)
    return workdir / Path(path).name


def _run_child(backend: str, script: Path, steps: int, out: Path, timeout: float) -> dict:
    command = [sys.executable, __file__, "--child", backend, "--script", str(script),
               "--steps", str(steps), "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
           "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}  # set() order of words
    try:
        done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"losses": [], "error": f"timeout after {timeout:.0f} s"}
    if not out.exists():
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"losses": [], "error": f"crashed: {tail}"}
    return json.loads(out.read_text())


def judge(torch_run: dict, ref_run: dict) -> tuple[str, str]:
    """`pass` when the engine ran the budget and every loss matches torch's."""
    if torch_run["error"]:
        return "harness", f"torch run failed: {torch_run['error']}"
    if ref_run["error"]:
        return "fail", ref_run["error"]
    if ref_run.get("weights") == "mismatch":
        return "fail", "parameter shapes differ from torch's, weights not shared"
    ours, theirs = np.array(ref_run["losses"]), np.array(torch_run["losses"])
    if len(ours) != len(theirs) or len(theirs) == 0:
        return "fail", f"{len(ours)} losses on the engine, {len(theirs)} on torch"
    close = np.isclose(ours, theirs, rtol=1e-3, atol=1e-5)
    if not close.all():
        first = int(np.argmin(close))
        return "fail", (f"loss {first} differs: engine {ours[first]:.6g}, "
                        f"torch {theirs[first]:.6g}")
    gap = float(np.max(np.abs(ours - theirs) / np.maximum(np.abs(theirs), 1e-12)))
    return "pass", f"{len(theirs)} losses, max relative gap {gap:.1e}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mirrors", type=Path, help="folder of owner+name git snapshots")
    parser.add_argument("--steps", type=int, default=8, help="backward calls per run")
    parser.add_argument("--only", help="run only scripts whose path contains this")
    parser.add_argument("--start", type=int, default=0, help="skip the first N scripts")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--losses", action="store_true", help="print both loss curves")
    parser.add_argument("--write", action="store_true", help="store results in the CSV")
    parser.add_argument("--child", choices=("torch", "ref"), help=argparse.SUPPRESS)
    parser.add_argument("--script", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.script, args.steps, args.out)
        return
    if args.mirrors is None:
        parser.error("--mirrors is required: a folder holding owner+name/ git snapshots")
    rows = list(csv.DictReader(MANIFEST.open()))
    counts = {"pass": 0, "fail": 0, "harness": 0}
    for row in rows[args.start:]:
        if args.only and args.only not in row["path"]:
            continue
        mirror = _git_dir(args.mirrors / row["repository"].replace("/", "+"))
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            runs = {}
            for backend in ("torch", "ref"):
                run_dir = workdir / backend
                run_dir.mkdir()
                script = _materialise(mirror, row["commit"], row["path"], run_dir)
                runs[backend] = _run_child(backend, script, args.steps,
                                           workdir / "torch.json" if backend == "torch"
                                           else workdir / "ref.json", args.timeout)
        row["result"], row["note"] = judge(runs["torch"], runs["ref"])
        counts[row["result"]] += 1
        print(f"{row['result']:7} {row['repository']}:{row['path']}  {row['note']}", flush=True)
        if args.losses:
            for backend, run in runs.items():
                print(f"    {backend:5}", " ".join(f"{x:.7g}" for x in run["losses"]))
    total = sum(counts.values())
    print(f"{counts['pass']} of {total} scripts train on the engine with torch's losses "
          f"({counts['fail']} fail, {counts['harness']} harness problems)")
    if args.write:
        with MANIFEST.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=["repository", "commit", "path",
                                                        "result", "note"])
            writer.writeheader()
            writer.writerows(rows)


def _git_dir(folder: Path) -> Path:
    """A snapshot folder is either a git directory or holds one (e.g. `repo/`)."""
    if (folder / "HEAD").exists():
        return folder
    inner = [p for p in folder.iterdir() if (p / "HEAD").exists()]
    if not inner:
        raise SystemExit(f"{folder} holds no git snapshot; fetch the repository first")
    return inner[0]


if __name__ == "__main__":
    main()
