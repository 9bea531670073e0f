"""A peer's op suite on the engine: tinygrad's test_ops.py, torch side, engine vs real torch.

tinygrad's ``test/backend/test_ops.py`` checks every op by calling
``helper_test_op(shapes, torch_fxn, tinygrad_fxn)``. This script runs each test twice, once
with ``torch`` bound to real torch and once bound to ``gradcheck.ref``, with tinygrad stubbed
out and ``helper_test_op`` replaced by a recorder of the torch side's forward values and input
gradients (``helper_test_exception``: of the exception raised). A test is *torch-touching* when
its real-torch run records at least one call; it passes on the engine when the engine run
records the same calls with the same shapes and dtypes, values within tinygrad's own
tolerances, and the same exception types. tinygrad's code is read from a local snapshot and
never copied into this repository.

    python bench/engine_peer_ops.py --tinygrad PATH/TO/tinygrad/checkout [--show-failures]
    python bench/engine_peer_ops.py --tinygrad PATH --only test_conv2d

Prints one line per failing test (with --show-failures) and the totals.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import signal
import subprocess
import sys
import types
import unittest
import warnings
from pathlib import Path

import numpy as np

SUITE = "test/backend/test_ops.py"


class _Anything:
    """A permissive stand-in for tinygrad objects used outside the torch lambdas."""

    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        return _Anything()

    def __call__(self, *args, **kwargs):
        return _Anything()

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return False

    def __getitem__(self, key):
        return _Anything()

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __call__
    __matmul__ = __pow__ = __neg__ = __getitem__

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _stub_tinygrad() -> dict:
    """Modules named tinygrad.* whose attributes are inert (the tinygrad side never runs)."""
    def module(name, **attrs):
        mod = types.ModuleType(name)
        mod.__getattr__ = lambda attr: _Anything()
        mod.__dict__.update(attrs)
        return mod

    class Tensor(_Anything):
        pass

    helpers = module("tinygrad.helpers", getenv=lambda key, default=0: default, DEBUG=0,
                     IMAGE=0, DEV=_Anything(), Context=_Anything,
                     CI=False, OSX=False)
    class _Device(_Anything):
        DEFAULT = "CPU"

    device = _Device()
    return {
        "tinygrad": module("tinygrad", Tensor=Tensor, Device=device, dtypes=_Anything()),
        "tinygrad.helpers": helpers,
        "tinygrad.tensor": module("tinygrad.tensor", _to_np_dtype=lambda d: np.float32),
        "tinygrad.renderer": module("tinygrad.renderer"),
        "tinygrad.renderer.nir": module("tinygrad.renderer.nir", NIRRenderer=type("NIR", (), {})),
        "tinygrad.nn": module("tinygrad.nn"), "tinygrad.dtype": module("tinygrad.dtype"),
        "tinygrad.device": module("tinygrad.device"),
    }


def _numpy(value):
    if hasattr(value, "detach"):
        value = value.detach()
    if hasattr(value, "cpu"):
        value = value.cpu()
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


def _recorder(lib, records):
    """helper_test_op / helper_test_exception for ``lib``, appending what the torch side did."""
    def prepare(shps, vals, low, high, forward_only):
        if shps is None:
            ts = [lib.tensor(x, requires_grad=not forward_only) for x in vals]
        else:
            np.random.seed(0)
            data = [np.random.uniform(low=low, high=high, size=size).astype(np.float32)
                    for size in shps]
            ts = [lib.tensor(d, requires_grad=not forward_only) for d in data]
        return [t.type(lib.int32) if t.dtype == lib.int64 else t for t in ts]

    def helper_test_op(shps, torch_fxn, tinygrad_fxn=None, atol=1e-6, rtol=1e-3,
                       grad_atol=1e-4, grad_rtol=1e-3, forward_only=False, vals=None, low=-2,
                       high=2):
        ts = prepare(shps, vals, low, high, forward_only)
        out = torch_fxn(*ts)
        entry = {"out": _numpy(out), "tol": (atol, rtol, grad_atol, grad_rtol), "grads": None}
        if not forward_only and ts:
            grads = lib.autograd.grad(torch_fxn(*ts).sum(), ts)
            entry["grads"] = [_numpy(g) for g in grads]
        records.append(entry)

    def helper_test_exception(self, shps, torch_fxn, tinygrad_fxn=None, expected=None,
                              forward_only=False, exact=False, vals=None, low=-1.5, high=1.5):
        ts = prepare(shps, vals, low, high, forward_only)
        try:
            torch_fxn(*ts)
        except Exception as exc:  # noqa: BLE001 - the type is what we record
            records.append({"raised": expected is not None and isinstance(exc, expected),
                            "text": str(exc) if exact else None, "type": type(exc).__name__})
            return
        records.append({"raised": False, "text": None, "type": None})

    return helper_test_op, helper_test_exception


def _load(source: str, lib, records, alias: bool):
    """Execute the suite's source with ``torch`` = ``lib`` and our recorders installed."""
    saved = {k: sys.modules.get(k) for k in _stub_tinygrad()}
    sys.modules.update(_stub_tinygrad())
    namespace = {"__name__": "peer_test_ops"}
    try:
        if alias:
            from gradcheck.ref.alias import as_torch

            with as_torch():
                exec(compile(source, SUITE, "exec"), namespace)  # noqa: S102
        else:
            exec(compile(source, SUITE, "exec"), namespace)  # noqa: S102
    finally:
        for key, value in saved.items():
            if value is None:
                sys.modules.pop(key, None)
            else:
                sys.modules[key] = value
    op, exception = _recorder(lib, records)
    namespace["helper_test_op"] = op
    for value in list(namespace.values()):
        if isinstance(value, type) and issubclass(value, unittest.TestCase):
            value.helper_test_exception = exception
    return namespace


def _tests(namespace):
    for value in list(namespace.values()):
        if isinstance(value, type) and issubclass(value, unittest.TestCase):
            for name in sorted(dir(value)):
                if name.startswith("test"):
                    yield value, name


class _Timeout(Exception):
    pass


def _run(cls, name, records, seconds=20):
    records.clear()
    def alarm(*_):
        raise _Timeout()

    signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            case = cls(name)
            getattr(case, name)()
        return None
    except unittest.SkipTest:
        return "skipped"
    except Exception as exc:  # noqa: BLE001 - any failure counts
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
    finally:
        signal.alarm(0)


@contextlib.contextmanager
def _torch_random(engine, torch):
    """Draw the engine run's random tensors from torch's generator, so both runs see the same
    data (the engine's random streams differ from torch's by design; ops are what we test)."""
    names = ("randint", "randn", "rand", "randperm", "randn_like", "rand_like", "manual_seed",
             "normal", "multinomial", "bernoulli")
    saved = {name: getattr(engine, name) for name in names}

    def convert(value, requires_grad=False):
        if isinstance(value, torch.Tensor):
            out = engine.tensor(value.detach().numpy())
            return out.requires_grad_() if requires_grad else out
        return value

    def wrap(name):
        def fn(*args, **kwargs):
            grad = kwargs.pop("requires_grad", False)
            args = [torch.tensor(a.numpy()) if isinstance(a, engine.Tensor) else a for a in args]
            kwargs = {k: (getattr(torch, str(v).replace("torch.", "")) if isinstance(
                v, engine.dtype) else v) for k, v in kwargs.items()}
            return convert(getattr(torch, name)(*args, **kwargs), grad)
        return fn

    for name in names:
        setattr(engine, name, wrap(name))
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(engine, name, fn)


def _same(ours, theirs) -> str | None:
    if len(ours) != len(theirs):
        return f"{len(ours)} calls recorded, torch made {len(theirs)}"
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if "raised" in b:
            if a.get("raised") != b["raised"] or (b["text"] and a.get("text") != b["text"]):
                return (f"call {i}: exception differs ({a.get('type')}: {a.get('text')!r} vs "
                        f"torch {b['type']}: {b['text']!r})")
            continue
        atol, rtol, gatol, grtol = b["tol"]
        pairs = [("forward", a["out"], b["out"], atol, rtol)]
        if b["grads"] is not None:
            if a["grads"] is None or len(a["grads"]) != len(b["grads"]):
                return f"call {i}: gradients missing"
            pairs += [(f"grad {k}", x, y, gatol, grtol)
                      for k, (x, y) in enumerate(zip(a["grads"], b["grads"]))]
        for what, x, y, at, rt in pairs:
            if x.shape != y.shape:
                return f"call {i} {what}: shape {x.shape} vs torch {y.shape}"
            if x.dtype != y.dtype:
                return f"call {i} {what}: dtype {x.dtype} vs torch {y.dtype}"
            if x.dtype.kind == "f":
                if not np.allclose(x, y, atol=at, rtol=rt, equal_nan=True):
                    return f"call {i} {what}: values differ (max |d| " \
                           f"{np.nanmax(np.abs(x - y)):.3g})"
            elif not np.array_equal(x, y):
                return f"call {i} {what}: values differ"
    return None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tinygrad", required=True, help="a tinygrad checkout or git dir")
    parser.add_argument("--only", default=None, help="run tests whose name contains this")
    parser.add_argument("--show-failures", action="store_true")
    args = parser.parse_args(argv)
    root = Path(args.tinygrad)
    source_file = root / SUITE
    if source_file.exists():
        source = source_file.read_text()
        commit = "working tree"
    else:  # a bare mirror: read the file from HEAD
        source = subprocess.run(["git", "--git-dir", str(root), "show", f"HEAD:{SUITE}"],
                                capture_output=True, text=True, check=True).stdout
        commit = subprocess.run(["git", "--git-dir", str(root), "rev-parse", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
    import torch

    import gradcheck.ref as engine

    torch_records, engine_records = [], []
    theirs = _load(source, torch, torch_records, alias=False)
    ours = _load(source, engine, engine_records, alias=True)
    ours_by_name = {(cls.__name__, name): cls for cls, name in _tests(ours)}
    counts = collections.Counter()
    failures = []
    for cls, name in _tests(theirs):
        if args.only and args.only not in name:
            continue
        error = _run(cls, name, torch_records)
        if error is not None or not torch_records:
            counts["not torch-touching or failing on torch"] += 1
            continue
        counts["torch-touching"] += 1
        expected = list(torch_records)
        torch.manual_seed(0)
        np.random.seed(0)
        _run(cls, name, torch_records)  # again from the same seed as the engine's run
        expected = list(torch_records)
        torch.manual_seed(0)
        np.random.seed(0)
        with _torch_random(engine, torch):
            problem = _run(ours_by_name[(cls.__name__, name)], name, engine_records)
        problem = problem or _same(engine_records, expected)
        if problem is None:
            counts["pass"] += 1
        else:
            failures.append(f"{cls.__name__}.{name}: {problem}")
    if args.show_failures:
        print("\n".join(failures))
    touching = counts["torch-touching"]
    print(f"tinygrad {SUITE} at {commit}")
    print(f"torch-touching tests: {touching}; pass on the engine: {counts['pass']} "
          f"({100 * counts['pass'] / max(touching, 1):.1f}%); other tests: "
          f"{counts['not torch-touching or failing on torch']}")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
