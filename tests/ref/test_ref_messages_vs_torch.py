"""Errors and warnings whose text must be torch's, word for word, taken from torch at test
time: inference tensors, requires_grad on integer tensors, gather/einsum/cross_entropy
mistakes, the scheduler-order and mse broadcast warnings, and backward(create_graph=True)."""
from __future__ import annotations

import warnings

import pytest

import gradcheck.ref as ref


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _error(lib, fn):
    with pytest.raises(Exception) as info:
        fn(lib)
    return type(info.value), str(info.value)


def _warnings(lib, fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(lib)
    return [(w.category, str(w.message).split(" (Triggered internally")[0]) for w in caught]


def _inference_tensor(lib):
    with lib.inference_mode():
        return lib.ones(2)


ERRORS = {
    "inference in-place": lambda lib: _inference_tensor(lib).add_(1),
    "inference view in-place": lambda lib: _inference_tensor(lib).view(2).mul_(2),
    "inference requires_grad": lambda lib: _inference_tensor(lib).requires_grad_(),
    "inference saved": lambda lib: lib.ones(2, requires_grad=True) * _inference_tensor(lib),
    "factory requires_grad": lambda lib: lib.zeros(3, dtype=lib.long, requires_grad=True),
    "full requires_grad": lambda lib: lib.full((2,), 1, requires_grad=True),
    "requires_grad_ on int": lambda lib: lib.zeros(3, dtype=lib.long).requires_grad_(),
    "gather out of range": lambda lib: lib.gather(lib.ones(2, 3), 1, lib.tensor([[5]])),
    "gather negative": lambda lib: lib.ones(2, 3).gather(0, lib.tensor([[-1]])),
    "gather float index": lambda lib: lib.gather(lib.ones(2, 3), 1, lib.tensor([[1.0]])),
    "einsum sizes": lambda lib: lib.einsum("ij,jk->ik", lib.ones(2, 3), lib.ones(4, 5)),
    "einsum output": lambda lib: lib.einsum("ij->ik", lib.ones(2, 3)),
    "einsum rank": lambda lib: lib.einsum("ijk->ij", lib.ones(2, 3)),
    "cross_entropy float classes": lambda lib: lib.nn.functional.cross_entropy(
        lib.ones(2, 3), lib.tensor([1.0, 2.0])),
    "nll_loss target out of range": lambda lib: lib.nn.functional.nll_loss(
        lib.ones(2, 3), lib.tensor([1, 5])),
    "bce shape": lambda lib: lib.nn.functional.binary_cross_entropy(
        lib.ones(3, 1) * 0.5, lib.ones(3)),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_error_matches_torch(case, torch):
    assert _error(ref, ERRORS[case]) == _error(torch, ERRORS[case])


def _scheduler_first(lib):
    p = lib.nn.Parameter(lib.ones(1))
    opt = lib.optim.SGD([p], lr=0.1)
    lib.optim.lr_scheduler.StepLR(opt, 1).step()


def _create_graph(lib):
    x = lib.ones(2, requires_grad=True)
    (x * x).sum().backward(create_graph=True)


WARNINGS = {
    "scheduler before optimizer": _scheduler_first,
    "mse broadcast": lambda lib: lib.nn.functional.mse_loss(lib.ones(3, 1), lib.ones(3)),
    "legacy size_average": lambda lib: lib.nn.functional.binary_cross_entropy(
        lib.ones(3) * 0.5, lib.ones(3), size_average=False),
    "backward create_graph cycle": _create_graph,
    "cuda GradScaler": lambda lib: lib.amp.GradScaler(),
    "cuda autocast": lambda lib: lib.autocast("cuda").__enter__(),
    "deprecated cuda.amp": lambda lib: lib.cuda.amp.GradScaler(),
}


@pytest.mark.parametrize("case", sorted(WARNINGS))
def test_warning_matches_torch(case, torch):
    assert _warnings(ref, WARNINGS[case]) == _warnings(torch, WARNINGS[case])


def test_inference_tensors_report_themselves(torch):
    for lib in (ref, torch):
        inside = _inference_tensor(lib)
        assert inside.is_inference() and not lib.ones(1).is_inference()
        with lib.inference_mode():
            inside.add_(1)  # allowed inside the mode
        assert (inside * 2).tolist() == [4.0, 4.0]  # no graph needed: allowed outside
