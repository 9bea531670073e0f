"""Fused rows: composite layers (layer norm, attention, an LSTM layer, convolutions) as ONE
graph node each, with a numpy forward and a numpy backward.

Why: a small model's training step is a few hundred ops on small tensors, and the engine
pays several microseconds of Python per op in forward and again per op inside each rule in
backward, where torch runs one C++ kernel per layer (``NativeLayerNormBackward0``,
``ConvolutionBackward0``, ...). A fused row runs the whole layer in one dispatch and its
rule in plain numpy.

Exactness: the forward computes what the composite computes, in the same order. The numpy
rule runs only when the backward is not itself recorded. Under ``create_graph=True`` the rule
rebuilds the composite from the engine's differentiable ops on the saved inputs and
differentiates that (``autograd.grad`` with ``create_graph``), so every higher derivative is
the composite's, exactly as before fusion.

Rows that need intermediate arrays in backward (a layer norm's ``rstd``, an LSTM's gates)
get them from the forward through an ``aux`` list attribute, which the node keeps.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from gradcheck.ref import grad_mode, im2col
from gradcheck.ref.dispatch import Op
from gradcheck.ref.tensors import _make


def on_numpy(*tensors) -> bool:
    """Fused rows run on numpy arrays of one dtype; anything else (CuPy, mixed dtypes) takes
    the composite path, which handles it."""
    dtype = tensors[0]._data.dtype
    return all(type(t._data) is np.ndarray and t._data.dtype == dtype for t in tensors)


def fusable_mask(mask, *tensors) -> bool:
    """An additive attention mask the fused row can take: absent, or a float constant."""
    if mask is None:
        return on_numpy(*tensors)
    return not mask._rg and on_numpy(*tensors, mask)


def fused_op(name: str, forward: Callable, backward: Callable, composite: Callable,
             saves_output: bool = False) -> Op:
    """A table row whose rule is ``backward(ctx, g, *input_arrays)`` (numpy, returning one
    array or None per input), or the composite's derivative under ``create_graph``.

    Every input is kept for the rule, and checked against in-place edits except those listed
    in the call's ``unchecked`` attribute: the inputs torch's kernel does not save (a bias;
    the logits of cross_entropy, whose log_softmax output is what torch keeps), so editing
    them before backward stays legal, as in torch."""

    def rule(ctx, g):
        saved = _saved_inputs(ctx)
        if grad_mode._enabled[0]:
            return _through_composite(ctx, g, composite, saved)
        grads = backward(ctx, g._data, *[None if t is None else t._data for t in saved])
        return tuple(None if a is None else _make(a) for a in grads)

    def run(*arrays, unchecked=(), **attrs):  # ``unchecked`` is for the rule only
        return forward(*arrays, **attrs)

    run.__name__ = forward.__name__
    return Op(name, run, rule, "all", saves_output)


def _saved_inputs(ctx) -> tuple:
    """The saved inputs, version-checked except the ``unchecked`` ones; a freed graph raises."""
    from gradcheck.ref.graph import FREED, _modified_error

    if ctx._saved is None:
        raise RuntimeError(FREED)
    unchecked = getattr(ctx, "unchecked", ())
    for k, (tensor, version) in enumerate(ctx._saved):
        if k not in unchecked and tensor._vc[0] != version:
            producer = tensor.grad_fn
            raise _modified_error(tensor, producer.name().split("Backward")[0] if producer
                                  else "", version)
    return tuple(tensor for tensor, _ in ctx._saved)


def _through_composite(ctx, g, composite: Callable, saved: tuple) -> tuple:
    """The composite's gradient as a recorded graph (create_graph=True)."""
    from gradcheck.ref.autograd import grad

    inputs = list(saved)
    wanted = [i for i, need in enumerate(ctx.needs_input_grad) if need]
    # NOTE: a fresh view per input gives autograd.grad a node of its own to stop at, so the
    # hooks and other consumers of the input's own grad_fn are not touched.
    for i in wanted:
        inputs[i] = inputs[i].view_as(inputs[i])
    out = composite(ctx, *inputs)
    found = grad(out, [inputs[i] for i in wanted], g, create_graph=True, allow_unused=True)
    grads = [None] * len(inputs)
    for i, value in zip(wanted, found):
        grads[i] = value
    return tuple(grads)


def _sum_to_vector(g, axes) -> np.ndarray:
    return np.add.reduce(g, axis=axes) if axes else g


# ---- layer norm ---------------------------------------------------------------------------
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
    xhat, rstd = ctx.aux
    weight, _ = _affine(params, ctx.affine)
    dims = ctx.dims
    grads = [None]
    if ctx.needs_input_grad[0]:
        gx = g * _channel(weight, x.ndim) if weight is not None else g
        inner = gx - gx.mean(axis=dims, keepdims=True) - xhat * (gx * xhat).mean(
            axis=dims, keepdims=True)
        grads[0] = rstd * inner
    k = 1
    for present, sums in zip(ctx.affine, (g * xhat, g)):
        if present:
            grads.append(np.add.reduce(sums, axis=dims) if ctx.needs_input_grad[k] else None)
            k += 1
    return grads


def _batch_norm_composite(ctx, x, *params):
    from gradcheck.ref.derivatives import TABLE
    from gradcheck.ref.dispatch import apply
    from gradcheck.ref.nn.normalization import channel_affine

    out = apply(TABLE["batch_norm"], x, _make(ctx.mean), _make(ctx.var), dims=ctx.dims,
                eps=ctx.eps)
    return channel_affine(out, *_affine(params, ctx.affine))


# ---- cross entropy / NLL of class indices ----------------------------------------------------
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


# ---- attention: softmax(q k^T * scale + mask) v --------------------------------------------
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


# ---- one LSTM layer over a whole sequence --------------------------------------------------
def _sigmoid(a):
    # the same stable form as the table's sigmoid row
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1 / (1 + e), e / (1 + e)).astype(a.dtype, copy=False)


def _lstm_forward(gi, h0, c0, w_hh, *b_hh, aux):
    """``gi`` (T, B, 4H) is the input projection; returns (T, 2, B, H): h_t and c_t."""
    steps, hidden = gi.shape[0], h0.shape[-1]
    out = np.empty((steps, 2) + h0.shape, dtype=gi.dtype)
    acts = np.empty(gi.shape, dtype=gi.dtype)
    tanh_c = np.empty((steps,) + h0.shape, dtype=gi.dtype)
    h, c, w_t = h0, c0, w_hh.T
    for t in range(steps):
        recurrent = h @ w_t
        if b_hh:
            recurrent += b_hh[0]
        gates = gi[t] + recurrent
        act = acts[t]
        act[:] = _sigmoid(gates)
        act[:, 2 * hidden:3 * hidden] = np.tanh(gates[:, 2 * hidden:3 * hidden])
        i, f, g, o = (act[:, j * hidden:(j + 1) * hidden] for j in range(4))
        c = f * c + i * g
        tanh_c[t] = np.tanh(c)
        h = o * tanh_c[t]
        out[t, 0], out[t, 1] = h, c
    aux[:] = [acts, tanh_c]
    return out


def _lstm_backward(ctx, g, gi, h0, c0, w_hh, *b_hh):
    acts, tanh_c = ctx.aux
    out = ctx.result._data
    steps, hidden = gi.shape[0], h0.shape[-1]
    d_gates = np.empty(gi.shape, dtype=gi.dtype)
    dh_next = np.zeros(h0.shape, dtype=gi.dtype)
    dc_next = np.zeros(h0.shape, dtype=gi.dtype)
    for t in range(steps - 1, -1, -1):
        i, f, gg, o = (acts[t, :, j * hidden:(j + 1) * hidden] for j in range(4))
        c_prev = out[t - 1, 1] if t else c0
        dh = g[t, 0] + dh_next
        dc = g[t, 1] + dc_next + dh * o * (1 - tanh_c[t] * tanh_c[t])
        dg = d_gates[t]
        dg[:, :hidden] = dc * gg * i * (1 - i)
        dg[:, hidden:2 * hidden] = dc * c_prev * f * (1 - f)
        dg[:, 2 * hidden:3 * hidden] = dc * i * (1 - gg * gg)
        dg[:, 3 * hidden:] = dh * tanh_c[t] * o * (1 - o)
        dh_next = dg @ w_hh
        dc_next = dc * f
    need = ctx.needs_input_grad
    grads = [d_gates if need[0] else None, dh_next if need[1] else None,
             dc_next if need[2] else None, None]
    if need[3]:
        h_prev = np.concatenate([h0[None], out[:-1, 0]], 0)
        grads[3] = d_gates.reshape(-1, d_gates.shape[-1]).T @ h_prev.reshape(-1, hidden)
    if b_hh:
        grads.append(d_gates.sum(axis=(0, 1)) if need[4] else None)
    return grads


def _lstm_composite(ctx, gi, h0, c0, w_hh, *b_hh):
    import gradcheck.ref as torch
    from gradcheck.ref.nn.rnn import _lstm_step

    h, c, rows = h0, c0, []
    for t in range(gi.shape[0]):
        h, c = _lstm_step(gi[t], h, w_hh, b_hh[0] if b_hh else None, c)
        rows.append(torch.stack([h, c]))
    return torch.stack(rows)


# ---- one GRU layer over a whole sequence ---------------------------------------------------
def _gru_forward(gi, h0, w_hh, *b_hh, aux):
    """``gi`` (T, B, 3H) is the input projection; returns the (T, B, H) hidden states."""
    steps, hidden = gi.shape[0], h0.shape[-1]
    out = np.empty((steps,) + h0.shape, dtype=gi.dtype)
    acts = np.empty(gi.shape, dtype=gi.dtype)  # r, z, n
    h_new = np.empty((steps,) + h0.shape, dtype=gi.dtype)  # the recurrent part of n
    h, w_t = h0, w_hh.T
    for t in range(steps):
        gh = h @ w_t
        if b_hh:
            gh += b_hh[0]
        act = acts[t]
        act[:, :2 * hidden] = _sigmoid(gi[t, :, :2 * hidden] + gh[:, :2 * hidden])
        r, z = act[:, :hidden], act[:, hidden:2 * hidden]
        h_new[t] = gh[:, 2 * hidden:]
        act[:, 2 * hidden:] = np.tanh(gi[t, :, 2 * hidden:] + r * h_new[t])
        h = out[t] = (1 - z) * act[:, 2 * hidden:] + z * h
    aux[:] = [acts, h_new]
    return out


def _gru_backward(ctx, g, gi, h0, w_hh, *b_hh):
    acts, h_new = ctx.aux
    out = ctx.result._data
    steps, hidden = gi.shape[0], h0.shape[-1]
    d_gi = np.empty(gi.shape, dtype=gi.dtype)
    d_gh = np.empty(gi.shape, dtype=gi.dtype)
    dh_next = np.zeros(h0.shape, dtype=gi.dtype)
    for t in range(steps - 1, -1, -1):
        r, z, n = (acts[t, :, j * hidden:(j + 1) * hidden] for j in range(3))
        h_prev = out[t - 1] if t else h0
        dh = g[t] + dh_next
        dn = dh * (1 - z) * (1 - n * n)
        dr = dn * h_new[t] * r * (1 - r)
        dz = dh * (h_prev - n) * z * (1 - z)
        d_gi[t, :, :hidden], d_gi[t, :, hidden:2 * hidden], d_gi[t, :, 2 * hidden:] = dr, dz, dn
        d_gh[t, :, :2 * hidden] = d_gi[t, :, :2 * hidden]
        d_gh[t, :, 2 * hidden:] = dn * r
        dh_next = dh * z + d_gh[t] @ w_hh
    need = ctx.needs_input_grad
    grads = [d_gi if need[0] else None, dh_next if need[1] else None, None]
    if need[2]:
        h_prev = np.concatenate([h0[None], out[:-1]], 0)
        grads[2] = d_gh.reshape(-1, d_gh.shape[-1]).T @ h_prev.reshape(-1, hidden)
    if b_hh:
        grads.append(d_gh.sum(axis=(0, 1)) if need[3] else None)
    return grads


def _gru_composite(ctx, gi, h0, w_hh, *b_hh):
    import gradcheck.ref as torch
    from gradcheck.ref.nn.rnn import _gru_step

    h, rows = h0, []
    for t in range(gi.shape[0]):
        h, _ = _gru_step(gi[t], h, w_hh, b_hh[0] if b_hh else None)
        rows.append(h)
    return torch.stack(rows)


# ---- convolution and transposed convolution ------------------------------------------------
def _conv_forward(x, w, *bias, stride, padding, dilation, groups, aux):
    n, size = x.shape[0], x.shape[2:]
    kernel = w.shape[2:]
    grid = im2col._grid(size, kernel, dilation, padding, stride)
    cols = im2col.unfold(x, kernel, dilation, padding, stride)  # (C*k, N*L)
    out_c = w.shape[0]
    if groups == 1:
        out = w.reshape(out_c, -1) @ cols
    else:
        out = w.reshape(groups, out_c // groups, -1) @ cols.reshape(groups, -1, cols.shape[-1])
    aux[:] = [cols]
    out = out.reshape(out_c, n, -1).swapaxes(0, 1).reshape((n, out_c) + tuple(grid))
    if bias:
        out = out + bias[0].reshape((1, -1) + (1,) * len(grid))
    return out


def _conv_backward(ctx, g, x, w, *bias):
    (cols,) = ctx.aux
    need, groups = ctx.needs_input_grad, ctx.groups
    n, out_c = g.shape[:2]
    gm = g.reshape(n, out_c, -1).swapaxes(0, 1).reshape(out_c, -1)  # (O, N*L)
    gx = gw = None
    # NOTE: the correlation unfolds the output gradient (out_c * k rows) where col2im folds
    # in_c * k rows: it wins only with at least as many input channels as output channels
    # (measured: 8 -> 8 channels 138 us against 156 us; 6 -> 16 with 5x5, 267 against 159)
    direct = 1 < x.shape[1] and out_c <= x.shape[1] and _correlates(
        w.shape[2:], ctx.stride, ctx.padding, ctx.dilation)
    if groups == 1:
        if need[0] and not direct:
            gcols = w.reshape(out_c, -1).T @ gm
        if need[1]:
            gw = (gm @ cols.T).reshape(w.shape)
    else:
        gm = gm.reshape(groups, out_c // groups, -1)
        wg = w.reshape(groups, out_c // groups, -1)
        if need[0] and not direct:
            gcols = (wg.swapaxes(-1, -2) @ gm).reshape(-1, gm.shape[-1])
        if need[1]:
            gw = (gm @ cols.reshape(groups, -1, cols.shape[-1]).swapaxes(-1, -2)).reshape(w.shape)
    if need[0]:
        if direct:
            gx = _input_grad_by_correlation(g, w, x.shape, ctx.padding, ctx.dilation, groups)
        else:
            gx = im2col.fold(gcols, x.shape, w.shape[2:], ctx.dilation, ctx.padding,
                             ctx.stride)
    grads = [gx, gw]
    if bias:
        grads.append(np.add.reduce(g, axis=(0,) + tuple(range(2, g.ndim))) if need[2] else None)
    return grads


def _correlates(kernel, stride, padding, dilation) -> bool:
    """Stride 1 and padding within the kernel's reach: the input gradient is then itself a
    convolution (of the output gradient with the flipped kernel), cheaper than col2im."""
    return all(s == 1 for s in stride) and all(
        p <= d * (k - 1) for k, p, d in zip(kernel, padding, dilation))


def _input_grad_by_correlation(g, w, x_shape, padding, dilation, groups):
    """d(conv)/dx for stride 1: ``g`` (padded by ``d(k-1) - p``) correlated with the kernel
    flipped in space and transposed in its channels, as one GEMM per group."""
    kernel, spatial = w.shape[2:], w.ndim - 2
    pad = tuple(d * (k - 1) - p for k, p, d in zip(kernel, padding, dilation))
    cols = im2col.unfold(g, kernel, dilation, pad, (1,) * spatial)  # (O*K, N*L_x)
    out_c, in_per = w.shape[0], w.shape[1]
    flipped = w[(slice(None), slice(None)) + (slice(None, None, -1),) * spatial]
    weights = flipped.reshape(groups, out_c // groups, in_per, -1).transpose(0, 2, 1, 3)
    weights = weights.reshape(groups, in_per, -1)  # (G, C/G, O/G * K)
    result = weights @ cols.reshape(groups, -1, cols.shape[-1])  # (G, C/G, N*L_x)
    n = g.shape[0]
    return result.reshape(in_per * groups, n, -1).swapaxes(0, 1).reshape(x_shape)


def _conv_composite(ctx, x, w, *bias):
    from gradcheck.ref.nn.conv import _conv

    return _conv(x, w, bias[0] if bias else None, ctx.stride, ctx.padding, ctx.dilation,
                 ctx.groups, w.ndim - 2, fused=False)


def _conv_transpose_forward(x, w, *bias, stride, padding, dilation, groups, size, aux):
    n, in_c = x.shape[:2]
    grid, kernel = x.shape[2:], w.shape[2:]
    out_c = w.shape[1] * groups
    xm = x.reshape(n, in_c, -1).swapaxes(0, 1).reshape(groups, in_c // groups, -1)
    wt = w.reshape(groups, in_c // groups, -1).swapaxes(-1, -2)
    cols = (wt @ xm).reshape(-1, xm.shape[-1])
    aux[:] = [xm]
    out = im2col.fold(cols, (n, out_c) + tuple(size), kernel, dilation, padding, stride,
                      tuple(grid))
    if bias:
        out = out + bias[0].reshape((1, -1) + (1,) * len(grid))
    return out


def _conv_transpose_backward(ctx, g, x, w, *bias):
    (xm,) = ctx.aux
    need, groups = ctx.needs_input_grad, ctx.groups
    n, in_c = x.shape[:2]
    grid, kernel = x.shape[2:], w.shape[2:]
    gcols = im2col.unfold(g, kernel, ctx.dilation, ctx.padding, ctx.stride, tuple(grid))
    gcols = gcols.reshape(groups, -1, gcols.shape[-1])  # (G, O/G * k, N*L)
    gx = gw = None
    if need[0]:
        wg = w.reshape(groups, in_c // groups, -1)
        gx = (wg @ gcols).reshape(in_c, n, -1).swapaxes(0, 1).reshape(x.shape)
    if need[1]:
        gw = (xm @ gcols.swapaxes(-1, -2)).reshape(w.shape)
    grads = [gx, gw]
    if bias:
        grads.append(np.add.reduce(g, axis=(0,) + tuple(range(2, g.ndim))) if need[2] else None)
    return grads


def _conv_transpose_composite(ctx, x, w, *bias):
    from gradcheck.ref.nn.conv import _conv_transpose_graph

    return _conv_transpose_graph(x, w, bias[0] if bias else None, ctx.stride, ctx.padding,
                                 ctx.groups, ctx.dilation, tuple(ctx.size))


FUSED = {
    "layer_norm": fused_op("NativeLayerNormBackward0", _layer_norm_forward,
                           _layer_norm_backward, _layer_norm_composite),
    "batch_norm": fused_op("NativeBatchNormBackward0", _batch_norm_forward,
                           _batch_norm_backward, _batch_norm_composite),
    "cross_entropy": fused_op("NllLossBackward0", _nll_forward, _nll_backward,
                              _nll_composite),
    "attention": fused_op("ScaledDotProductAttentionBackward0", _attention_forward,
                          _attention_backward, _attention_composite),
    "lstm_layer": fused_op("LstmBackward0", _lstm_forward, _lstm_backward, _lstm_composite,
                           saves_output=True),
    "gru_layer": fused_op("GruBackward0", _gru_forward, _gru_backward, _gru_composite,
                          saves_output=True),
    "convolution": fused_op("ConvolutionBackward0", _conv_forward, _conv_backward,
                            _conv_composite),
    "conv_transpose": fused_op("ConvolutionBackward0", _conv_transpose_forward,
                               _conv_transpose_backward, _conv_transpose_composite),
}
