"""Fused rows of convolutions (``ConvolutionBackward0``): one GEMM with the batch-last
columns of ``im2col`` forward; backward the weight's GEMM and the input's col2im (or, at
stride 1, a correlation with the flipped kernel); transposed convolutions the other way round.
"""
from __future__ import annotations

import numpy as np

from gradcheck.ref import im2col
from gradcheck.ref.fusing import fused_op

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


ROWS = {
    "convolution": fused_op("ConvolutionBackward0", _conv_forward, _conv_backward,
                            _conv_composite),
    "conv_transpose": fused_op("ConvolutionBackward0", _conv_transpose_forward,
                               _conv_transpose_backward, _conv_transpose_composite),
}
