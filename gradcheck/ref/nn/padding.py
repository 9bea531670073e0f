"""``F.pad`` and the padding modules (``ZeroPad2d``, ``ConstantPad1d/2d``, ``ReflectionPad1d/2d``,
``ReplicationPad1d/2d``).

Constant padding is one row of the derivatives table (its adjoint crops). The other modes
gather the input with an integer index per padded dim (``reflect``, ``replicate``,
``circular``), so their gradients come from indexing's scatter-add.

Example:
    >>> import gradcheck.ref as torch
    >>> pad(torch.tensor([[1.0, 2.0]]), (1, 2)).tolist()
    [[0.0, 1.0, 2.0, 0.0, 0.0]]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gradcheck.ref.derivatives import TABLE
from gradcheck.ref.dispatch import apply
from gradcheck.ref.nn.module import Module

Tensor = Any
_NUMPY_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _widths(ndim: int, pad_: tuple) -> tuple:
    """torch's pad tuple (last dim first, before/after pairs) as one (before, after) per dim."""
    if len(pad_) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad_) // 2 > ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad_)} and input of "
                           f"dimension {ndim}")
    pairs = [(int(pad_[i]), int(pad_[i + 1])) for i in range(0, len(pad_), 2)]
    return tuple([(0, 0)] * (ndim - len(pairs)) + pairs[::-1])


def pad(input: Tensor, pad: tuple, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the trailing dims: ``pad=(left, right, top, bottom, ...)``, negative values crop."""
    widths = _widths(input.dim(), tuple(pad))
    if mode == "constant":
        return apply(TABLE["pad"], input, widths=widths, value=0.0 if value is None else value)
    if mode not in _NUMPY_MODE:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    index = []
    for d, (before, after) in enumerate(widths):
        if before == after == 0:
            index.append(slice(None))
            continue
        size = input.shape[d]
        if mode == "reflect" and (before >= size or after >= size):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({before}, {after}) at "
                               f"dimension {d} of input {list(input.shape)}")
        kept = size - max(-before, 0) - max(-after, 0)
        if mode == "circular" and max(before, after) > kept:
            raise RuntimeError(f"Padding value causes wrapping around more than once: padding "
                               f"({before}, {after}) at dimension {d} of input "
                               f"{list(input.shape)}; use widths of at most {kept}")
        positions = _positions(size, before, after, mode)
        shape = [1] * input.dim()
        shape[d] = -1
        index.append(positions.reshape(shape))
    if all(isinstance(i, slice) for i in index):
        return input.clone()
    arrays = [np.arange(input.shape[d]).reshape([-1 if k == d else 1 for k in range(input.dim())])
              if isinstance(i, slice) else i for d, i in enumerate(index)]
    from gradcheck.ref.tensors import _make

    return input[tuple(_make(a) for a in arrays)]


def _positions(size: int, before: int, after: int, mode: str) -> np.ndarray:
    """The input index at each output position of one dim; negative widths crop.

    torch crops ``circular`` before wrapping (the wrap repeats the cropped ends) but crops
    ``reflect`` and ``replicate`` after padding the whole dim.
    """
    grow = (max(before, 0), max(after, 0))
    crop = (max(-before, 0), max(-after, 0))
    positions = np.arange(size)
    if mode == "circular":
        return np.pad(positions[crop[0]:size - crop[1]], grow, mode="wrap")
    padded = np.pad(positions, grow, mode=_NUMPY_MODE[mode])
    return padded[crop[0]:padded.size - crop[1]]


class _Pad(Module):
    mode = "constant"
    spatial = 2

    def __init__(self, padding, value: float = 0.0) -> None:
        super().__init__()
        self.padding = tuple(padding) if isinstance(padding, (tuple, list)) else \
            (padding,) * (2 * self.spatial)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return pad(input, self.padding, self.mode, self.value if self.mode == "constant" else None)

    def extra_repr(self) -> str:
        return f"{self.padding}" + (f", value={self.value}" if self.mode == "constant" and
                                     type(self).__name__.startswith("Constant") else "")


def _padding_class(name: str, mode: str, spatial: int):
    return type(name, (_Pad,), {"mode": mode, "spatial": spatial,
                                "__doc__": f"Pads with mode {mode!r} over {spatial} dims."})


ZeroPad1d = _padding_class("ZeroPad1d", "constant", 1)
ZeroPad2d = _padding_class("ZeroPad2d", "constant", 2)
ConstantPad1d = _padding_class("ConstantPad1d", "constant", 1)
ConstantPad2d = _padding_class("ConstantPad2d", "constant", 2)
ReflectionPad1d = _padding_class("ReflectionPad1d", "reflect", 1)
ReflectionPad2d = _padding_class("ReflectionPad2d", "reflect", 2)
ReplicationPad1d = _padding_class("ReplicationPad1d", "replicate", 1)
ReplicationPad2d = _padding_class("ReplicationPad2d", "replicate", 2)
ZeroPad3d = _padding_class("ZeroPad3d", "constant", 3)
ConstantPad3d = _padding_class("ConstantPad3d", "constant", 3)
ReflectionPad3d = _padding_class("ReflectionPad3d", "reflect", 3)
ReplicationPad3d = _padding_class("ReplicationPad3d", "replicate", 3)
CircularPad1d = _padding_class("CircularPad1d", "circular", 1)
CircularPad2d = _padding_class("CircularPad2d", "circular", 2)
CircularPad3d = _padding_class("CircularPad3d", "circular", 3)
