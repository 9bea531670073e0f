"""Memory layout: contiguous() and clone() against torch's stride rules."""
from __future__ import annotations

import numpy as np
import pytest

import gradcheck.ref as ref

torch = pytest.importorskip("torch")
BOTH = pytest.mark.parametrize("m", [ref, torch], ids=["engine", "torch"])

# Each builder makes a tensor with an interesting layout from a fresh arange.
LAYOUTS = {
    "row-major": lambda m: m.arange(24.0).reshape(4, 6),
    "transposed": lambda m: m.arange(24.0).reshape(4, 6).t(),
    "permuted 3-d": lambda m: m.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1),
    "column slice": lambda m: m.arange(24.0).reshape(4, 6)[:, ::2],
    "row slice": lambda m: m.arange(24.0).reshape(4, 6)[1:3],
    "permuted and sliced": lambda m: m.arange(48.0).reshape(2, 4, 6).permute(2, 0, 1)[::2],
    "expanded": lambda m: m.arange(3.0).reshape(3, 1).expand(3, 4),
}


def _describe(m, build, how):
    x = build(m)
    y = how(m, x)
    return {"contiguous": y.is_contiguous(), "stride": tuple(y.stride()),
            "values": y.tolist(), "same object": y is x}


HOW = {
    "contiguous()": lambda m, x: x.contiguous(),
    "clone()": lambda m, x: x.clone(),
    "clone(preserve_format)": lambda m, x: x.clone(memory_format=m.preserve_format),
    "clone(contiguous_format)": lambda m, x: x.clone(memory_format=m.contiguous_format),
    "torch.clone": lambda m, x: m.clone(x),
}


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_layout_matches_torch(layout, how):
    assert _describe(ref, LAYOUTS[layout], HOW[how]) == _describe(
        torch, LAYOUTS[layout], HOW[how])


@BOTH
def test_transposed_contiguous_is_contiguous(m):
    assert m.ones(3, 4).t().contiguous().is_contiguous()


@BOTH
def test_contiguous_of_contiguous_is_itself_and_records_nothing(m):
    x = m.ones(3, 4, requires_grad=True)
    assert x.contiguous() is x
    y = x * 2
    assert y.contiguous() is y


def test_contiguous_copy_is_one_clone_node_with_identity_gradient():
    def run(m):
        x = m.arange(12.0).reshape(3, 4).requires_grad_()
        y = x.t().contiguous()
        (y * m.arange(12.0).reshape(4, 3)).sum().backward()
        return y.grad_fn.name(), x.grad.tolist()

    assert run(ref) == run(torch)


def test_contiguous_copy_does_not_alias_the_source():
    x = ref.zeros(3, 4)
    y = x.t().contiguous()
    y.add_(1.0)
    assert float(x.sum()) == 0.0 and np.asarray(y).flags.c_contiguous
