"""The fused row of ``cross_entropy``/``nll_loss`` of class indices (``NllLossBackward0``):
log_softmax, the picked log-probabilities, weights, ``ignore_index``, label smoothing and
the reduction in one numpy forward and backward.
"""
from __future__ import annotations

import numpy as np

from gradcheck.ref.fusing import fused_op
from gradcheck.ref.tensors import _make

def _class_pick(a, index, class_dim):
    return np.take_along_axis(a, np.expand_dims(index, class_dim), class_dim).squeeze(class_dim)


def _nll_forward(x, *, logits, target, weight, ignore_index, reduction, smoothing, class_dim,
                 aux):
    """``logits``: log_softmax over ``class_dim`` first (cross_entropy), else ``x`` holds
    log-probabilities (nll_loss). Mirrors losses.nll_loss and losses._smoothed."""
    if logits:
        shifted = x - x.max(axis=class_dim, keepdims=True)
        log_p = shifted - np.log(np.exp(shifted).sum(axis=class_dim, keepdims=True))
    else:
        log_p = x
    valid = target != ignore_index
    safe = np.where(valid, target, 0)
    w = valid.astype(x.dtype)
    if weight is not None:
        w = w * weight[safe]
    loss = -_class_pick(log_p, safe, class_dim) * w
    total = w.sum()
    loss = loss.sum() / total if reduction == "mean" else _plain_reduce(loss, reduction)
    smooth_total = None
    if smoothing:
        per_class = log_p * _along(weight, x.ndim, class_dim) if weight is not None else log_p
        smooth = -per_class.sum(axis=class_dim) * valid.astype(x.dtype)
        if reduction == "mean":
            smooth_total = total if weight is not None else valid.astype(x.dtype).sum()
            smooth = smooth.sum() / smooth_total
        else:
            smooth = _plain_reduce(smooth, reduction)
        loss = (1 - smoothing) * loss + smoothing / x.shape[class_dim] * smooth
    aux[:] = [log_p, safe, w, valid, total, smooth_total]
    return np.asarray(loss, dtype=x.dtype)


def _plain_reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _along(vector, ndim, dim):
    shape = [1] * ndim
    shape[dim] = -1
    return vector.reshape(shape)


def _nll_backward(ctx, g, x):
    log_p, safe, w, valid, total, smooth_total = ctx.aux
    dim, eps = ctx.class_dim, ctx.smoothing
    per_item = g / total if ctx.reduction == "mean" else np.broadcast_to(g, w.shape)
    grad = np.zeros(x.shape, dtype=x.dtype)
    np.put_along_axis(grad, np.expand_dims(safe, dim),
                      np.expand_dims(-(1 - eps) * per_item * w, dim), dim)
    if eps:
        scale = g / smooth_total if ctx.reduction == "mean" else np.broadcast_to(g, w.shape)
        row = -(eps / x.shape[dim]) * scale * valid.astype(x.dtype)
        per_class = np.expand_dims(row, dim)
        if ctx.weight is not None:
            per_class = per_class * _along(ctx.weight, x.ndim, dim)
        grad = grad + per_class
    if ctx.logits:
        grad = grad - np.exp(log_p) * grad.sum(axis=dim, keepdims=True)
    return (grad,)


def _nll_composite(ctx, x):
    from gradcheck.ref.nn import losses

    target = _make(ctx.target)
    weight = None if ctx.weight is None else _make(ctx.weight)
    if ctx.logits:
        return losses.cross_entropy(x, target, weight, ignore_index=ctx.ignore_index,
                                    reduction=ctx.reduction, label_smoothing=ctx.smoothing,
                                    fused=False)
    return losses.nll_loss(x, target, weight, ignore_index=ctx.ignore_index,
                           reduction=ctx.reduction, fused=False)


ROWS = {
    "cross_entropy": fused_op("NllLossBackward0", _nll_forward, _nll_backward,
                              _nll_composite),
}
