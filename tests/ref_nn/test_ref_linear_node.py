"""nn.functional.linear records one fused node, as torch does, with torch's gradients."""
from __future__ import annotations

import re

import numpy as np
import pytest

SHAPES = {"matrix": (4, 3), "batched": (2, 4, 3), "vector": (3,)}


def _run(lib, input_shape, with_bias):
    rng = np.random.default_rng(7)
    x = lib.tensor(rng.standard_normal(input_shape), requires_grad=True)
    w = lib.tensor(rng.standard_normal((5, 3)), requires_grad=True)
    b = lib.tensor(rng.standard_normal(5), requires_grad=True) if with_bias else None
    out = lib.nn.functional.linear(x, w, b)
    out.backward(lib.tensor(np.sin(np.arange(out.numel())).reshape(tuple(out.shape))))
    grads = [t.grad.numpy() for t in (x, w, b) if t is not None]
    return out.detach().numpy(), grads


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("shape", SHAPES)
def test_linear_values_and_grads_match_torch(ref, torch, shape, with_bias):
    out, grads = _run(ref, SHAPES[shape], with_bias)
    expected_out, expected_grads = _run(torch, SHAPES[shape], with_bias)
    np.testing.assert_allclose(out, expected_out, rtol=1e-12)
    for got, want in zip(grads, expected_grads):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("with_bias, node", [(True, "AddmmBackward0"), (False, "MmBackward0")])
def test_linear_is_one_node_like_torch(ref, torch, with_bias, node):
    def name(lib):
        x = lib.ones(2, 3, requires_grad=True)
        b = lib.zeros(4) if with_bias else None
        return lib.nn.functional.linear(x, lib.ones(4, 3), b).grad_fn.name()

    assert name(ref) == name(torch) == node


def test_linear_weight_grad_is_row_major(ref):
    """The weight gradient keeps the parameter's layout, so optimizer steps stay memcpy-fast."""
    layer = ref.nn.Linear(6, 4)
    layer(ref.ones(3, 6)).sum().backward()
    assert np.asarray(layer.weight.grad).flags.c_contiguous


def test_linear_shape_mismatch_is_torchs_error(ref, torch):
    with pytest.raises(RuntimeError) as expected:
        torch.nn.functional.linear(torch.ones(2, 3), torch.ones(4, 5))
    with pytest.raises(RuntimeError, match=re.escape(str(expected.value))):
        ref.nn.functional.linear(ref.ones(2, 3), ref.ones(4, 5))
