"""A deterministic slice of bench/opinfo.py: torch's own OpInfo samples, checked by us and by
torch.autograd.gradcheck. No crash, no failure where torch passes, no pass where it fails.

The slice holds one op per kind of trouble the whole run met: empty inputs, outputs autograd
does not differentiate, complex inputs and outputs, views into a larger storage, ZeroTensor
grads, -inf inputs, sparse inputs (a clear TypeError), and plain dense ops.
"""
from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")  # torch's OpInfo database imports it

SLICE = [
    "mm", "exp", "linalg.det", "cholesky", "nn.functional.pdist", "nn.functional.adaptive_avg_pool1d",
    "native_layer_norm", "native_batch_norm", "native_group_norm",
    "complex", "polar", "fft.fft", "linalg.eig", "angle", "chalf",
    "as_strided.partial_views", "sgn", "torch.ops.aten._safe_softmax.default",
    "sparse.mm.reduce", "softmax", "cumsum", "atan2", "linalg.svd",
]
# torch's slow mode fails these on its own numerics: chalf's forward rounds to float16,
# whose difference quotients at torch's step 1e-6 are noise; ours evaluates in float64
TORCH_FALSE_ALARMS = {"chalf"}


def _bench():
    path = pathlib.Path(__file__).parents[2] / "bench" / "opinfo.py"
    spec = importlib.util.spec_from_file_location("bench_opinfo", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def outcomes():
    bench = _bench()
    torch.set_num_threads(1)
    checkers = {name: bench.CHECKERS[name] for name in ("torch slow", "ours full", "ours fast")}
    found = {}
    for op in bench.opinfo_ops(names=SLICE):
        for case in bench.cases_of(op, samples=3):
            found[(case.op, case.sample)] = bench.run_case(case, checkers)
    return bench, found


def test_the_slice_covers_every_op_named(outcomes):
    _, found = outcomes
    assert {op for op, _ in found} == set(SLICE)


@pytest.mark.parametrize("mode", ["full", "fast"])
def test_no_crash_no_false_alarm_no_miss(outcomes, mode):
    bench, found = outcomes
    wrong = []
    for (op, sample), got in found.items():
        kind = bench.classify(got, mode)
        if kind == "miss" and op in TORCH_FALSE_ALARMS:
            continue
        if kind is not None:
            ours = got[f"ours {mode}"]
            wrong.append(f"{op}[{sample}]: {kind}: {ours.verdict} {ours.message}")
    assert not wrong, "\n".join(wrong)


def test_sparse_inputs_get_a_clear_type_error(outcomes):
    _, found = outcomes
    sparse = [got["ours full"] for (op, _), got in found.items() if op == "sparse.mm.reduce"]
    assert sparse and all(o.verdict == "unsupported" for o in sparse)
    assert "sparse_csr" in sparse[0].message and "to_dense()" in sparse[0].message
