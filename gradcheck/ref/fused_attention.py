"""The fused row of attention, ``softmax(q k^T * scale + mask) v``, for
``F.scaled_dot_product_attention`` and ``MultiheadAttention`` without dropout.
"""
from __future__ import annotations

import numpy as np

from gradcheck.ref.fusing import fused_op
from gradcheck.ref.tensors import _make

def _attention_forward(q, k, v, *mask, scale, scale_query, aux):
    # NOTE: multi_head_attention_forward scales q before the product, F.sdpa the product.
    scores = (q * scale) @ k.swapaxes(-1, -2) if scale_query else q @ k.swapaxes(-1, -2) * scale
    if mask:
        scores = scores + mask[0]
    shifted = scores - scores.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    weights = e / e.sum(axis=-1, keepdims=True)
    aux[:] = [weights]
    return weights @ v


def _attention_backward(ctx, g, q, k, v, *mask):
    (weights,) = ctx.aux
    need = ctx.needs_input_grad
    gv = _sum_batch(weights.swapaxes(-1, -2) @ g, v.shape) if need[2] else None
    gq = gk = None
    if need[0] or need[1]:
        gw = g @ v.swapaxes(-1, -2)
        gs = weights * (gw - (gw * weights).sum(axis=-1, keepdims=True))
        if need[0]:
            gq = _sum_batch(gs @ k * ctx.scale, q.shape)
        if need[1]:
            kq = q * ctx.scale if ctx.scale_query else q
            gk = gs.swapaxes(-1, -2) @ kq
            gk = _sum_batch(gk if ctx.scale_query else gk * ctx.scale, k.shape)
    return (gq, gk, gv) + (None,) * len(mask)


def _sum_batch(g, shape):
    """Reduce broadcast batch dims of ``g`` back to ``shape``."""
    if g.shape == tuple(shape):
        return g
    from gradcheck.ref.broadcast import sum_to

    return sum_to(_make(g), tuple(shape))._data


def _attention_composite(ctx, q, k, v, *mask):
    import gradcheck.ref as torch

    if ctx.scale_query:
        scores = (q * ctx.scale) @ k.transpose(-2, -1)
    else:
        scores = q @ k.transpose(-2, -1) * ctx.scale
    if mask:
        scores = scores + mask[0]
    return torch.softmax(scores, -1) @ v


ROWS = {
    "attention": fused_op("ScaledDotProductAttentionBackward0", _attention_forward,
                          _attention_backward, _attention_composite),
}
