"""``torch._foreach_*``: one op over lists of tensors, as torch's foreach kernels compute it
(element by element, the same arithmetic as the single-tensor op).

>>> import gradcheck.ref as torch
>>> [t.tolist() for t in torch._foreach_mul([torch.ones(2), torch.ones(1)], 3.0)]
[[3.0, 3.0], [3.0]]
"""
from __future__ import annotations

from typing import Any


def _pairs(tensors: list, other: Any) -> list:
    """``other`` per tensor: a list (of tensors or scalars) or one scalar/tensor for all."""
    if isinstance(other, (list, tuple)):
        if len(other) != len(tensors):
            raise RuntimeError(f"Tensor lists must have the same number of tensors, got "
                               f"{len(tensors)} and {len(other)}")
        return list(other)
    return [other] * len(tensors)


def _binary(method: str):
    def out_of_place(tensors, other, **kwargs):
        return [getattr(t, method)(o, **kwargs) for t, o in zip(tensors, _pairs(tensors, other))]

    def in_place(tensors, other, **kwargs):
        for t, o in zip(tensors, _pairs(tensors, other)):
            edit = getattr(t, method + "_", None)
            if edit is None:  # no Tensor.maximum_ in torch either: write the result back
                t.copy_(getattr(t, method)(o, **kwargs))
            else:
                edit(o, **kwargs)

    return out_of_place, in_place


def _unary(method: str):
    def out_of_place(tensors):
        return [getattr(t, method)() for t in tensors]

    def in_place(tensors):
        for t in tensors:
            getattr(t, method + "_")()

    return out_of_place, in_place


def _ternary(method: str):
    def out_of_place(tensors, first, second, value=1):
        values = _pairs(tensors, value)
        return [getattr(t, method)(a, b, value=v) for t, a, b, v in
                zip(tensors, first, second, values)]

    def in_place(tensors, first, second, value=1):
        values = _pairs(tensors, value)
        for t, a, b, v in zip(tensors, first, second, values):
            getattr(t, method + "_")(a, b, value=v)

    return out_of_place, in_place


def _lerp():
    def out_of_place(tensors, ends, weight):
        return [t.lerp(e, w) for t, e, w in zip(tensors, ends, _pairs(tensors, weight))]

    def in_place(tensors, ends, weight):
        for t, e, w in zip(tensors, ends, _pairs(tensors, weight)):
            t.lerp_(e, w)

    return out_of_place, in_place


def _copy_(tensors, sources, non_blocking: bool = False):
    for t, s in zip(tensors, sources):
        t.copy_(s)


def _zero_(tensors):
    for t in tensors:
        t.zero_()


def namespace() -> dict:
    """Every ``_foreach_<op>`` and ``_foreach_<op>_`` this module provides."""
    table = {}
    builders = {**{m: _binary(m) for m in ("add", "sub", "mul", "div", "maximum",
                                           "minimum", "pow")},
                **{m: _unary(m) for m in ("neg", "sqrt", "exp", "log", "abs", "reciprocal",
                                          "sigmoid", "tanh", "sign")},
                **{m: _ternary(m) for m in ("addcmul", "addcdiv")}, "lerp": _lerp()}
    for name, (out_of_place, in_place) in builders.items():
        out_of_place.__name__, in_place.__name__ = f"_foreach_{name}", f"_foreach_{name}_"
        table[f"_foreach_{name}"], table[f"_foreach_{name}_"] = out_of_place, in_place
    table["_foreach_copy_"], table["_foreach_zero_"] = _copy_, _zero_
    return table
