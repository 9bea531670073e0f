"""Fused rows of recurrent layers: one LSTM or GRU layer over a whole sequence as one node,
its backward through time one numpy loop (the input projection stays a ``linear``).
"""
from __future__ import annotations

import numpy as np

from gradcheck.ref.fusing import fused_op

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


ROWS = {
    "lstm_layer": fused_op("LstmBackward0", _lstm_forward, _lstm_backward, _lstm_composite,
                           saves_output=True),
    "gru_layer": fused_op("GruBackward0", _gru_forward, _gru_backward, _gru_composite,
                          saves_output=True),
}
