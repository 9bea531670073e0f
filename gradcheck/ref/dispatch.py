"""Running one op from the derivatives table: compute forward, record a node if needed."""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from gradcheck.ref import fperrors, grad_mode
from gradcheck.ref.dtypes import COMPLEX_IN_USE
from gradcheck.ref.graph import Node
from gradcheck.ref.tensors import INFERENCE_SAVED, _make


class Op(NamedTuple):
    """One row of the derivatives table.

    ``forward(*arrays, **attrs)`` computes the output array; ``backward(ctx, grad)`` returns one
    grad (or None) per input, reading ``ctx.saved_tensors`` (the inputs listed in ``saves``, or
    every input when it is ``"all"``),
    ``ctx.result`` (when ``saves_output``) and the op's attributes as ``ctx.<name>``.
    ``view`` marks outputs that alias the first input's storage (they share its version counter).
    """

    name: str
    forward: Callable
    backward: Callable
    saves: tuple = ()
    saves_output: bool = False
    view: bool = False
    on_error: Callable | None = None
    # saves_when[k]: inputs whose need for a gradient makes saves[k] worth saving; like torch,
    # an input that no rule will read is not saved (so editing it later is not an error).
    saves_when: tuple | None = None


_generic = np.generic
# ids of the rows that take or give complex tensors with torch's meaning (complex_numbers
# fills it); any other row meeting a complex tensor raises rather than return numpy's answer
COMPLEX_ROWS: set = set()


def _refuse_complex(op: Op, inputs, out) -> None:
    if id(op) in COMPLEX_ROWS:
        return
    if out.dtype.kind == "c" or any(t._data.dtype.kind == "c" for t in inputs):
        name = op.name.replace("Backward0", "").replace("Backward1", "")
        raise NotImplementedError(f"{name} is not supported on complex tensors in gradcheck.ref "
                                  f"(it supports complex arithmetic, matmul, sums, views, abs, "
                                  f"angle, torch.fft and stft); take .real/.imag or .abs() first")


def apply(op: Op, *inputs, **attrs):
    """Run ``op`` on Tensors ``inputs``; record a graph node when grad mode needs one."""
    quiet = fperrors.ignore()  # torch is silent about inf/nan; see fperrors
    try:
        out = op.forward(*[t._data for t in inputs], **attrs)
    except (ValueError, IndexError) as exc:
        if op.on_error is None:
            raise
        raise op.on_error(exc, *inputs, **attrs) from None
    finally:
        fperrors.restore(quiet)
    if isinstance(out, _generic):
        out = np.asarray(out)
    if COMPLEX_IN_USE[0]:
        _refuse_complex(op, inputs, out)
    if op.view:
        return _view(op, inputs[0], out, attrs)
    if grad_mode._enabled[0]:
        for t in inputs:
            if t._rg:
                break
        else:
            return _make(out)
        if op.saves_when is not None:
            # NOTE: plain loops: a generator per saved input cost ~0.5 us on every mul/matmul
            saved = []
            for i, when in zip(op.saves, op.saves_when):
                for j in when:
                    if inputs[j]._rg:
                        saved.append(inputs[i])
                        break
                else:
                    saved.append(None)
        else:
            saved = inputs if op.saves == "all" else [inputs[i] for i in op.saves]
        for t in saved:
            if t is not None and t._inf:
                raise RuntimeError(INFERENCE_SAVED)
        node = Node(op.name, op.backward, inputs, saved)
        if attrs:
            node.__dict__.update(attrs)
        result = _make(out, node)
        if op.saves_output:
            node.save_output(result)
        return result
    return _make(out)


def _view_node(op: Op, base, attrs):
    """The grad_fn of a view of ``base`` (None when no graph is being recorded)."""
    if not (grad_mode._enabled[0] and base._rg):
        return None
    node = Node(op.name, op.backward, (base,))
    node.__dict__.update(attrs)
    return node


def _view(op: Op, base, out, attrs):
    """A view op's result: shares base's version counter and remembers how it was made,
    so an in-place edit through it can rewrite base's history (see inplace.inplace)."""
    node = _view_node(op, base, attrs)
    if not np.may_share_memory(out, base._data):
        # e.g. reshape of a non-contiguous array had to copy: not a view after all
        return _make(out, node)
    result = _make(out, node, base._vc)
    result._view = [base, op, attrs, base._vc[0]]
    result._inf = base._inf  # a view of an inference tensor is one too
    return result


def refresh_view(view) -> None:
    """Re-derive a view's grad_fn from its base after an in-place edit made it stale.

    Another alias may have rewritten the base's history (``base[0].mul_(2)``); torch then
    regenerates every other view's grad_fn the next time it is used, and so do we.
    """
    record = view._view
    base, op, attrs, _ = record
    if base._view is not None and base._view[3] != base._vc[0]:
        refresh_view(base)
    record[3] = view._vc[0]
    node = _view_node(op, base, attrs)
    if node is not None:
        view.grad_fn = node
        view._rg = True
