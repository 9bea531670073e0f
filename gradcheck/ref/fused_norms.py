"""Fused rows of the normalisations: ``layer_norm`` (torch's ``NativeLayerNormBackward0``)
and batch norm in training together with its per-channel affine.
"""
from __future__ import annotations

import numpy as np

from gradcheck.ref.fusing import fused_op
from gradcheck.ref.tensors import _make

def _sum_to_vector(g, axes) -> np.ndarray:
    return np.add.reduce(g, axis=axes) if axes else g



def _layer_norm_forward(x, *params, dims, eps, affine, aux):
    mean = x.mean(axis=dims, keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(axis=dims, keepdims=True)
    std = np.sqrt(var + eps)
    xhat = centered / std
    aux[:] = [xhat, std]
    out = xhat
    weight, bias = _affine(params, affine)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def _affine(params, affine):
    """(weight or None, bias or None) from the present ones, in that order."""
    it = iter(params)
    return tuple(next(it) if present else None for present in affine)


def _layer_norm_backward(ctx, g, x, *params):
    xhat, std = ctx.aux
    weight, _ = _affine(params, ctx.affine)
    batch = tuple(range(x.ndim - len(ctx.dims)))
    grads = [None]
    if ctx.needs_input_grad[0]:
        gx = g * weight if weight is not None else g
        dims = ctx.dims
        inner = gx - gx.mean(axis=dims, keepdims=True) - xhat * (gx * xhat).mean(
            axis=dims, keepdims=True)
        grads[0] = inner / std
    k = 1
    for present, sums in zip(ctx.affine, (g * xhat, g)):
        if present:
            grads.append(_sum_to_vector(sums, batch) if ctx.needs_input_grad[k] else None)
            k += 1
    return grads


def _layer_norm_composite(ctx, x, *params):
    mean = x.mean(dim=ctx.dims, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(dim=ctx.dims, keepdim=True)
    out = centered / (var + ctx.eps).sqrt()
    weight, bias = _affine(params, ctx.affine)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


# ---- batch norm in training, with its per-channel affine ------------------------------------
def _channel(v, ndim):
    return v.reshape((1, -1) + (1,) * (ndim - 2))


def batch_stats(x, dims) -> tuple:
    """Mean and biased variance over ``dims`` (kept), np.mean/np.var's arithmetic without
    their Python wrappers."""
    count = 1
    for d in dims:
        count *= x.shape[d]
    mean = np.add.reduce(x, axis=dims, keepdims=True) / count
    centered = x - mean
    return mean, np.add.reduce(centered * centered, axis=dims, keepdims=True) / count


def _batch_norm_forward(x, *params, dims, eps, affine, mean, var, aux):
    rstd = 1.0 / np.sqrt(var + eps)
    out = xhat = (x - mean) * rstd
    aux[:] = [xhat, rstd]
    weight, bias = _affine(params, affine)
    if weight is not None:
        out = out * _channel(weight, x.ndim)
    if bias is not None:
        out = out + _channel(bias, x.ndim)
    return out


def _batch_norm_backward(ctx, g, x, *params):
    # NOTE: two per-channel sums, sum(g) and sum(g * x_hat), give all three gradients:
    # gx = rstd * w * (g - mean(g) - x_hat * mean(g * x_hat)), gw = sum(g * x_hat), gb = sum(g)
    xhat, rstd = ctx.aux
    weight, _ = _affine(params, ctx.affine)
    dims = ctx.dims
    count = g.size // g.shape[1]
    sum_g = np.add.reduce(g, axis=dims, keepdims=True)
    sum_gx = np.add.reduce(g * xhat, axis=dims, keepdims=True)
    grads = [None]
    if ctx.needs_input_grad[0]:
        scale = rstd if weight is None else rstd * _channel(weight, x.ndim)
        grads[0] = scale * (g - sum_g / count - xhat * (sum_gx / count))
    k = 1
    for present, sums in zip(ctx.affine, (sum_gx, sum_g)):
        if present:
            grads.append(sums.reshape(-1) if ctx.needs_input_grad[k] else None)
            k += 1
    return grads


def _batch_norm_composite(ctx, x, *params):
    from gradcheck.ref.derivatives import TABLE
    from gradcheck.ref.dispatch import apply
    from gradcheck.ref.nn.normalization import channel_affine

    out = apply(TABLE["batch_norm"], x, _make(ctx.mean), _make(ctx.var), dims=ctx.dims,
                eps=ctx.eps)
    return channel_affine(out, *_affine(params, ctx.affine))


ROWS = {
    "layer_norm": fused_op("NativeLayerNormBackward0", _layer_norm_forward,
                           _layer_norm_backward, _layer_norm_composite),
    "batch_norm": fused_op("NativeBatchNormBackward0", _batch_norm_forward,
                           _batch_norm_backward, _batch_norm_composite),
}
