"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` (``num_layers``, ``bidirectional``,
``batch_first``, inter-layer ``dropout``) and the cells ``RNNCell``, ``LSTMCell``, ``GRUCell``.

Each step is written with the engine's ops (``linear``, ``sigmoid``, ``tanh``), so backward
through time is the ordinary backward walk. The input projection of a whole sequence is one
``linear`` call; only the hidden-to-hidden product runs once per step. Parameters carry torch's
names and shapes (``weight_ih_l0``, ``bias_hh_l1_reverse``, ...), so a torch ``state_dict``
loads unchanged.

Example:
    >>> import gradcheck.ref as torch
    >>> out, (h, c) = LSTM(3, 5, num_layers=2)(torch.randn(7, 2, 3))
    >>> out.shape, h.shape
    (torch.Size([7, 2, 5]), torch.Size([2, 2, 5]))
"""
from __future__ import annotations

import math
from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.dispatch import apply
from gradcheck.ref.fused import FUSED, on_numpy
from gradcheck.ref.nn import functional as F
from gradcheck.ref.nn import init
from gradcheck.ref.nn.module import Module
from gradcheck.ref.nn.parameter import Parameter

Tensor = Any


def _rnn_step(nonlinearity):
    def step(gi, h, w_hh, b_hh, _c=None):
        pre = gi + F.linear(h, w_hh, b_hh)
        return (pre.tanh() if nonlinearity == "tanh" else pre.relu()), None
    return step


def _lstm_step(gi, h, w_hh, b_hh, c):
    gates = gi + F.linear(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, -1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def _gru_step(gi, h, w_hh, b_hh, _c=None):
    gh = F.linear(h, w_hh, b_hh)
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    r, z = (i_r + h_r).sigmoid(), (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return (1 - z) * n + z * h, None


def _present(*tensors) -> tuple:
    return tuple(t for t in tensors if t is not None)


def _lstm_layer(gi, h, c, w_hh, b_hh, reverse: bool):
    """One direction of one LSTM layer as one node (``LstmBackward0``, numpy forward and
    backward through time); returns the (T, B, H) outputs and the final h and c."""
    if reverse:
        gi = gi.flip(0)
    hc = apply(FUSED["lstm_layer"], gi, h, c, w_hh, *_present(b_hh), aux=[],
               unchecked=(4,))  # (T, 2, B, H)
    seq = hc[:, 0]
    return (seq.flip(0) if reverse else seq), hc[-1, 0], hc[-1, 1]


_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


class RNNBase(Module):
    """Shared parameters and the layer/direction loop of RNN, LSTM and GRU."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if proj_size:
            raise NotImplementedError("LSTM(proj_size=...) is not supported by gradcheck.ref")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, 0
        directions = 2 if bidirectional else 1
        gate = _GATES[mode] * hidden_size
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else hidden_size * directions
            for suffix in ("", "_reverse")[:directions]:
                names = [f"weight_ih_l{layer}{suffix}", f"weight_hh_l{layer}{suffix}"]
                shapes = [(gate, layer_input), (gate, hidden_size)]
                if bias:
                    names += [f"bias_ih_l{layer}{suffix}", f"bias_hh_l{layer}{suffix}"]
                    shapes += [(gate,), (gate,)]
                for name, shape in zip(names, shapes):
                    setattr(self, name, Parameter(torch.empty(*shape, dtype=dtype)))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def _step(self):
        if self.mode == "LSTM":
            return _lstm_step
        return _gru_step if self.mode == "GRU" else _rnn_step(
            "tanh" if self.mode == "RNN_TANH" else "relu")

    def _weights(self, layer: int, suffix: str):
        get = lambda kind: getattr(self, f"{kind}_l{layer}{suffix}", None)  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh")

    def forward(self, input: Tensor, hx: Any = None) -> Any:
        from gradcheck.ref.nn.utils.rnn import PackedSequence

        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        if input.dim() not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got "
                             f"{input.dim()}D instead")
        unbatched = input.dim() == 2
        x = input.unsqueeze(1) if unbatched else (input.transpose(0, 1) if self.batch_first
                                                  else input)
        lstm = self.mode == "LSTM"
        h0, c0 = (hx if lstm else (hx, None)) if hx is not None else (None, None)
        if unbatched and h0 is not None:
            h0, c0 = h0.unsqueeze(1), (c0.unsqueeze(1) if c0 is not None else None)
        x, h_n, c_n = self._layers(x, h0, c0, None)
        out = x.squeeze(1) if unbatched else (x.transpose(0, 1) if self.batch_first else x)
        h_n = h_n.squeeze(1) if unbatched else h_n
        if not lstm:
            return out, h_n
        return out, (h_n, c_n.squeeze(1) if unbatched else c_n)

    def _forward_packed(self, packed: Any, hx: Any) -> Any:
        """Step only the sequences still running at each time (longest first), as torch."""
        from gradcheck.ref.nn.utils.rnn import PackedSequence

        sizes = packed.batch_sizes.tolist()
        x = self._unpack_sorted(packed.data, sizes)
        lstm = self.mode == "LSTM"
        h0, c0 = (hx if lstm else (hx, None)) if hx is not None else (None, None)
        if packed.sorted_indices is not None:  # hx comes in the caller's batch order
            h0 = None if h0 is None else h0.index_select(1, packed.sorted_indices)
            c0 = None if c0 is None else c0.index_select(1, packed.sorted_indices)
        x, h_n, c_n = self._layers(x, h0, c0, sizes)
        data = torch.cat([x[t, :n] for t, n in enumerate(sizes)], 0)
        out = PackedSequence(data, packed.batch_sizes, packed.sorted_indices,
                             packed.unsorted_indices)
        if packed.unsorted_indices is not None:
            h_n = h_n.index_select(1, packed.unsorted_indices)
            c_n = None if c_n is None else c_n.index_select(1, packed.unsorted_indices)
        return (out, (h_n, c_n)) if lstm else (out, h_n)

    @staticmethod
    def _unpack_sorted(data: Tensor, sizes: list) -> Tensor:
        """(T, B, F) in the packed (sorted) batch order, zeros after each sequence's end."""
        batch, start, rows = sizes[0], 0, []
        for n in sizes:
            step = data[start:start + n]
            if n < batch:
                step = torch.cat([step, step.new_zeros(batch - n, *step.shape[1:])], 0)
            rows.append(step)
            start += n
        return torch.stack(rows, 0)

    def _layers(self, x: Tensor, h0: Any, c0: Any, sizes: list | None) -> tuple:
        """Run every layer and direction over ``x`` (T, B, F); with ``sizes`` only the first
        sizes[t] rows take step t (the others keep their state)."""
        directions = 2 if self.bidirectional else 1
        shape = (self.num_layers * directions, x.shape[1], self.hidden_size)
        lstm = self.mode == "LSTM"
        h0 = torch.zeros(*shape, dtype=x.dtype) if h0 is None else h0
        c0 = torch.zeros(*shape, dtype=x.dtype) if lstm and c0 is None else c0
        step, finals_h, finals_c = self._step(), [], []
        for layer in range(self.num_layers):
            outputs = []
            for d, suffix in enumerate(("", "_reverse")[:directions]):
                w_ih, w_hh, b_ih, b_hh = self._weights(layer, suffix)
                k = layer * directions + d
                h, c = h0[k], (c0[k] if lstm else None)
                gi = F.linear(x, w_ih, b_ih)  # the whole sequence's input projection at once
                if lstm and sizes is None and on_numpy(gi, h, c, w_hh, *_present(b_hh)):
                    seq, h, c = _lstm_layer(gi, h, c, w_hh, b_hh, reverse=bool(d))
                    outputs.append(seq)
                    finals_h.append(h)
                    finals_c.append(c)
                    continue
                if self.mode == "GRU" and sizes is None and on_numpy(gi, h, w_hh,
                                                                     *_present(b_hh)):
                    seq = apply(FUSED["gru_layer"], gi.flip(0) if d else gi, h, w_hh,
                                *_present(b_hh), aux=[], unchecked=(3,))
                    outputs.append(seq.flip(0) if d else seq)
                    finals_h.append(seq[-1])
                    finals_c.append(None)
                    continue
                steps = range(x.shape[0] - 1, -1, -1) if d else range(x.shape[0])
                seq = [None] * x.shape[0]
                for t in steps:
                    n = x.shape[1] if sizes is None else sizes[t]
                    if n == x.shape[1]:
                        h, c = step(gi[t], h, w_hh, b_hh, c)
                        seq[t] = h
                        continue
                    new_h, new_c = step(gi[t, :n], h[:n], w_hh, b_hh, c[:n] if lstm else None)
                    h = torch.cat([new_h, h[n:]], 0)
                    c = torch.cat([new_c, c[n:]], 0) if lstm else None
                    seq[t] = torch.cat([new_h, new_h.new_zeros(x.shape[1] - n, new_h.shape[1])])
                outputs.append(torch.stack(seq))
                finals_h.append(h)
                finals_c.append(c)
            x = outputs[0] if directions == 1 else torch.cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, torch.stack(finals_h), (torch.stack(finals_c) if lstm else None)

    def flatten_parameters(self) -> None:
        """A cuDNN memory-layout hint in torch; nothing to do here."""

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(RNNBase):
    """Elman RNN: h' = tanh(W_ih x + b_ih + W_hh h + b_hh) (or relu)."""

    def __init__(self, *args: Any, nonlinearity: str = "tanh", **kwargs: Any) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Long short-term memory; returns ``output, (h_n, c_n)``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """Gated recurrent unit; returns ``output, h_n``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("GRU", *args, **kwargs)


class _Cell(Module):
    _mode = "RNN_TANH"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        mode = self._mode if self._mode != "RNN_TANH" else (
            "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU")
        self.nonlinearity, self.mode = nonlinearity, mode
        gate = _GATES[mode] * hidden_size
        self.weight_ih = Parameter(torch.empty(gate, input_size, dtype=dtype))
        self.weight_hh = Parameter(torch.empty(gate, hidden_size, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(torch.empty(gate, dtype=dtype))
            self.bias_hh = Parameter(torch.empty(gate, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        RNNBase.reset_parameters(self)

    def forward(self, input: Tensor, hx: Any = None) -> Any:
        zeros = torch.zeros(*input.shape[:-1], self.hidden_size, dtype=input.dtype)
        lstm = self.mode == "LSTM"
        h, c = (hx if lstm else (hx, None)) if hx is not None else (zeros, zeros)
        step = RNNBase._step(self)
        h, c = step(F.linear(input, self.weight_ih, self.bias_ih), h, self.weight_hh,
                    self.bias_hh, c)
        return (h, c) if lstm else h

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class RNNCell(_Cell):
    """One step of ``RNN``."""


class LSTMCell(_Cell):
    """One step of ``LSTM``; returns ``(h, c)``."""

    _mode = "LSTM"


class GRUCell(_Cell):
    """One step of ``GRU``."""

    _mode = "GRU"
