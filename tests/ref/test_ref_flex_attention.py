"""``torch.nn.attention.flex_attention`` against torch on the same inputs: block masks (every
index tensor, the printed map and repr), outputs and log-sum-exp of ``flex_attention``, its
gradients against torch's own math reference (torch's CPU build has no backward for it), and
its errors by type and message."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradcheck.ref as ref
from gradcheck.ref.nn import flex_attention as mine

torch = pytest.importorskip("torch")
theirs = pytest.importorskip("torch.nn.attention.flex_attention")
FIELDS = ["kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
          "q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices"]


def causal(b, h, q, kv):
    return q >= kv


def window(b, h, q, kv):
    return (q - kv) <= 2


def odd_heads_see_all(b, h, q, kv):
    return (h % 2 == 1) | (q >= kv)


def relative_bias(score, b, h, q, kv):
    return score + (q - kv) * 0.25 - h * 0.5


def mask_for(module, name):
    return {"causal": causal, "heads": odd_heads_see_all,
            "and": module.and_masks(causal, window), "or": module.or_masks(causal, window),
            "noop": module.noop_mask}[name]


def _equal_masks(a, b):
    for field in FIELDS:
        x, y = getattr(a, field), getattr(b, field)
        assert (x is None) == (y is None), field
        if x is not None:
            assert str(y.dtype) == str(x.dtype) == "torch.int32"
            np.testing.assert_array_equal(y.numpy(), x.numpy(), err_msg=field)
    assert str(b) == str(a)
    assert repr(b).replace("gradcheck.ref", "torch") == repr(a)
    assert b.shape == a.shape and b.BLOCK_SIZE == a.BLOCK_SIZE
    assert b.sparsity() == pytest.approx(a.sparsity())
    np.testing.assert_array_equal(b.to_dense().numpy(), a.to_dense().numpy())


@settings(max_examples=15, deadline=None)
@given(batch=st.sampled_from([None, 1, 2]), heads=st.sampled_from([None, 1, 3]),
       q_len=st.integers(1, 9), kv_len=st.integers(1, 9),
       block=st.sampled_from([1, 2, 3, (2, 4)]),
       name=st.sampled_from(["causal", "heads", "and", "or", "noop"]),
       separate=st.booleans())
def test_create_block_mask_matches_torch(batch, heads, q_len, kv_len, block, name, separate):
    expected = theirs.create_block_mask(mask_for(theirs, name), batch, heads, q_len, kv_len,
                                        device="cpu", BLOCK_SIZE=block,
                                        separate_full_blocks=separate)
    got = mine.create_block_mask(mask_for(mine, name), batch, heads, q_len, kv_len,
                                 BLOCK_SIZE=block, separate_full_blocks=separate)
    _equal_masks(expected, got)
    np.testing.assert_array_equal(
        mine.create_mask(mask_for(mine, name), batch, heads, q_len, kv_len).numpy(),
        theirs.create_mask(mask_for(theirs, name), batch, heads, q_len, kv_len, "cpu").numpy())


def test_slicing_and_from_kv_blocks_match_torch():
    expected = theirs.create_block_mask(odd_heads_see_all, 2, 3, 8, 8, "cpu", BLOCK_SIZE=2)
    got = mine.create_block_mask(odd_heads_see_all, 2, 3, 8, 8, BLOCK_SIZE=2)
    for index in (1, (0, 2), (slice(None), -1), (0, slice(0, 2), 1)):
        _equal_masks(expected[index], got[index])
    rows, cols = np.array([[[2, 1]]], np.int32), np.array([[[[1, 0], [1, 0]]]], np.int32)
    _equal_masks(theirs.BlockMask.from_kv_blocks(torch.tensor(rows), torch.tensor(cols),
                                                 BLOCK_SIZE=4),
                 mine.BlockMask.from_kv_blocks(ref.tensor(rows), ref.tensor(cols), BLOCK_SIZE=4))
    assert got.to_string(limit=2) == expected.to_string(limit=2)


def _inputs(rng, batch, heads, kv_heads, q_len, kv_len, dim):
    return [rng.standard_normal((batch, h, n, dim)) for h, n in
            ((heads, q_len), (kv_heads, kv_len), (kv_heads, kv_len))]


def _torch_reference(arrays, score_mod, block_mask, scale):
    """What torch's eager flex_attention computes on the cpu (its math reference, run here
    directly: torch's own entry point compiles a graph per shape, too slow for a test)."""
    from torch._higher_order_ops.flex_attention import math_attention

    tensors = [torch.tensor(a) for a in arrays]
    scale = 1.0 / np.sqrt(arrays[0].shape[-1]) if scale is None else scale
    out, lse, _ = math_attention(*tensors, score_mod or theirs._identity, block_mask.as_tuple(),
                                 scale, {})
    return out, lse * np.log(2)


@settings(max_examples=12, deadline=None)
@given(batch=st.integers(1, 2), kv_heads=st.integers(1, 2), group=st.integers(1, 2),
       q_len=st.integers(1, 6), kv_len=st.integers(1, 6), dim=st.integers(1, 4),
       name=st.sampled_from(["causal", "heads", "and", "noop"]),
       with_score_mod=st.booleans(), scale=st.sampled_from([None, 0.3]),
       seed=st.integers(0, 2**16))
def test_flex_attention_matches_torch(batch, kv_heads, group, q_len, kv_len, dim, name,
                                      with_score_mod, scale, seed):
    arrays = _inputs(np.random.default_rng(seed), batch, kv_heads * group, kv_heads, q_len,
                     kv_len, dim)
    score_mod = relative_bias if with_score_mod else None
    expected, expected_lse = _torch_reference(
        arrays, score_mod, theirs.create_block_mask(mask_for(theirs, name), batch, None, q_len,
                                                    kv_len, "cpu", BLOCK_SIZE=2), scale)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, got_aux = mine.flex_attention(
            *map(ref.tensor, arrays), score_mod=score_mod, scale=scale, enable_gqa=group > 1,
            return_aux=mine.AuxRequest(lse=True),
            block_mask=mine.create_block_mask(mask_for(mine, name), batch, None, q_len, kv_len,
                                              BLOCK_SIZE=2))
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_aux.lse.numpy(), expected_lse.numpy(), rtol=1e-12,
                               atol=1e-12)
    assert got_aux.max_scores is None and str(got.dtype) == str(expected.dtype)


def test_flex_attention_is_torchs_entry_point_on_one_case():
    arrays = _inputs(np.random.default_rng(3), 1, 2, 1, 4, 4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected, expected_aux = theirs.flex_attention(
            *map(torch.tensor, arrays), score_mod=relative_bias, enable_gqa=True,
            block_mask=theirs.create_block_mask(causal, 1, 1, 4, 4, "cpu", BLOCK_SIZE=2),
            return_aux=theirs.AuxRequest(lse=True))
    with pytest.warns(UserWarning, match="flex_attention called without torch.compile"):
        mine._WARNINGS_SHOWN.discard("flex_attention_performance")
        got, got_aux = mine.flex_attention(
            *map(ref.tensor, arrays), score_mod=relative_bias, enable_gqa=True,
            block_mask=mine.create_block_mask(causal, 1, 1, 4, 4, BLOCK_SIZE=2),
            return_aux=mine.AuxRequest(lse=True))
    np.testing.assert_allclose(got.numpy(), expected.numpy(), atol=1e-12)
    np.testing.assert_allclose(got_aux.lse.numpy(), expected_aux.lse.numpy(), atol=1e-12)


def test_float32_inputs_and_the_deprecated_return_lse():
    arrays = [a.astype(np.float32) for a in _inputs(np.random.default_rng(1), 1, 2, 2, 4, 5, 3)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = theirs.flex_attention(*map(torch.tensor, arrays), return_lse=True)
        got = mine.flex_attention(*map(ref.tensor, arrays), return_lse=True)
    for a, b in zip(expected, got):
        assert str(b.dtype) == str(a.dtype)
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6)


def test_gradients_match_torchs_math_reference():
    from torch._higher_order_ops.flex_attention import math_attention

    arrays = _inputs(np.random.default_rng(2), 2, 2, 2, 5, 5, 3)
    block = theirs.create_block_mask(odd_heads_see_all, 2, 2, 5, 5, "cpu", BLOCK_SIZE=2)
    leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = math_attention(*leaves, relative_bias, block.as_tuple(), 0.5, {})[0]
    (out ** 2).sum().backward()
    mine_leaves = [ref.tensor(a, requires_grad=True) for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = mine.flex_attention(*mine_leaves, score_mod=relative_bias, scale=0.5,
                                  block_mask=mine.create_block_mask(odd_heads_see_all, 2, 2, 5,
                                                                    5, BLOCK_SIZE=2))
    (got ** 2).sum().backward()
    np.testing.assert_allclose(got.detach().numpy(), out.detach().numpy(), atol=1e-12)
    for theirs_leaf, mine_leaf in zip(leaves, mine_leaves):
        np.testing.assert_allclose(mine_leaf.grad.numpy(), theirs_leaf.grad.numpy(), atol=1e-12)


def _call(module, case):
    q = module.ones(1, 2, 4, 3)
    block = module.nn.attention.flex_attention.create_block_mask(causal, 1, 2, 4, 4,
                                                                 BLOCK_SIZE=2)
    fa = module.nn.attention.flex_attention
    cases = {
        "heads": lambda: fa.flex_attention(q, module.ones(1, 1, 4, 3), q),
        "gqa": lambda: fa.flex_attention(module.ones(1, 3, 4, 3), q, q, enable_gqa=True),
        "embed": lambda: fa.flex_attention(q, module.ones(1, 2, 4, 2), q),
        "3d": lambda: fa.flex_attention(q[0], q[0], q[0]),
        "max_scores": lambda: fa.flex_attention(q, q, q,
                                                return_aux=fa.AuxRequest(max_scores=True)),
        "both": lambda: fa.flex_attention(q, q, q, return_lse=True,
                                          return_aux=fa.AuxRequest(lse=True)),
        "sliced": lambda: fa.flex_attention(q, q, q, block_mask=block[0]),
        "shorter": lambda: fa.flex_attention(module.ones(1, 2, 2, 3), q, q, block_mask=block),
        "longer": lambda: fa.flex_attention(module.ones(1, 2, 6, 3), q, q, block_mask=block),
        "score_mod mask": lambda: fa.create_block_mask(relative_bias, 1, 1, 4, 4),
        "arity": lambda: fa.create_block_mask(lambda b, h: b, 1, 1, 4, 4),
        "not callable": lambda: fa.and_masks(causal, 3),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            cases[case]()
        except Exception as error:  # noqa: BLE001 - the error is the answer compared
            return type(error).__name__, str(error).replace("gradcheck.ref", "torch")
    return None


@pytest.mark.parametrize("case", ["heads", "gqa", "embed", "3d", "max_scores", "both", "sliced",
                                  "shorter", "longer", "score_mod mask", "arity",
                                  "not callable"])
def test_errors_match_torch(case):
    expected = _call(torch, case)
    assert expected is not None
    assert _call(ref, case) == expected
