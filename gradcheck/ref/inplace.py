"""In-place ops: the version counter, torch's leaf checks, and history rewriting.

An in-place op bumps the version counter that views and ``detach()`` share. In grad mode it
refuses leaves that require grad (and views of them). When a graph is being recorded it
re-points the tensor's ``grad_fn`` at the op, and for a view it also rewrites the base's
history (torch's CopySlices), so that later backward passes see the edit.
"""
from __future__ import annotations

import numpy as np

from gradcheck.ref import devices as dev
from gradcheck.ref import dtypes as dt
from gradcheck.ref import fperrors, grad_mode, ops
from gradcheck.ref.arguments import _cast, _const, _normalise_index, is_basic_index
from gradcheck.ref.derivatives import TABLE
from gradcheck.ref.dispatch import apply, refresh_view
from gradcheck.ref.graph import Node
from gradcheck.ref.tensors import Tensor, _make, check_inplace


OVERLAP = (
    "unsupported operation: some elements of the input tensor and the written-to tensor refer "
    "to a single memory location. Please clone() the tensor before performing the operation."
)


def check_overlap(dest, sources) -> None:
    """torch refuses in-place ops whose input partly aliases the memory being written
    (``x[1:].add_(x[:-1])``). Like torch it only judges dense arrays, by their memory ranges:
    the same range (``x.add_(x)``) is fine, and strided views are given the benefit of doubt."""
    if type(dest) is not np.ndarray or not _dense(dest):
        return
    for src in sources:
        if not isinstance(src, Tensor):
            continue
        data = src._data
        if type(data) is not np.ndarray or not _dense(data):
            continue
        if not np.may_share_memory(dest, data):
            continue
        start, other = _address(dest), _address(data)
        if start != other or dest.nbytes != data.nbytes:
            raise RuntimeError(OVERLAP)


def _dense(array) -> bool:
    flags = array.flags
    return flags.c_contiguous or flags.f_contiguous


def _address(array) -> int:
    return array.__array_interface__["data"][0]


def _needs_graph(self, args) -> bool:
    if not grad_mode._enabled[0]:
        return False
    return self._rg or any(isinstance(a, Tensor) and a._rg for a in args)


def _cast_error(result_dtype, self):
    return RuntimeError(
        f"result type {result_dtype._tensor_type.replace('Tensor', '')} can't be cast to the "
        f"desired output type {self.dtype._tensor_type.replace('Tensor', '')}"
    )


def _write(self, result: Tensor) -> None:
    """Store ``result`` into self's storage (so views and aliases see the edit)."""
    if result._data.dtype.kind == "f" and self._data.dtype.kind != "f":
        raise _cast_error(result.dtype, self)
    try:
        np.copyto(self._data, result._data, casting="unsafe")
    except ValueError as exc:
        raise _inplace_error(self, result, exc) from None


def _inplace_error(self, other, exc):
    if "read-only" in str(exc):
        return RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation."
        )
    return RuntimeError(
        f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
        f"{list(np.broadcast_shapes(self._data.shape, other._data.shape)) if _broadcasts(self, other) else list(other._data.shape)}"  # noqa: E501
    )


def _broadcasts(a, b) -> bool:
    try:
        np.broadcast_shapes(a._data.shape, b._data.shape)
    except ValueError:
        return False
    return True


def inplace(self, fn, *args, **kwargs):
    """Apply out-of-place ``fn(self, *args)`` and write the result into self, torch's way."""
    check_inplace(self)
    check_overlap(self._data, args)
    if _needs_graph(self, args):
        return _graph_inplace(self, fn, *args, **kwargs)
    result = fn(self, *args, **kwargs)
    if result._data.shape != self._data.shape:
        raise _inplace_error(self, result, ValueError())
    _write(self, result)
    self._vc[0] += 1
    return self


def _graph_inplace(self, fn, *args, **kwargs):
    """In-place op while recording: the op's node becomes self's grad_fn."""
    if self._view is not None and self._view[3] != self._vc[0]:
        refresh_view(self)  # another alias edited the base since this view was made
    # The old value becomes the op's input; copy it because the op may have saved it.
    old = _make(self._data.copy(), grad_fn=self.grad_fn)
    result = fn(old, *args, **kwargs)
    if result._data.shape != self._data.shape:
        raise _inplace_error(self, result, ValueError())
    _write(self, result)
    self.grad_fn = result.grad_fn
    self._rg = True
    self._retains_grad = False
    self._vc[0] += 1
    if self._view is not None:
        _rebase(self)
    return self


def _fast(ufunc):
    """A no-graph fast path for add_/sub_/mul_/div_ (the optimizer hot path)."""

    def fn(self, other, *, alpha=1):
        if _needs_graph(self, (other,)):
            return None
        check_overlap(self._data, (other,))
        o = other._data if isinstance(other, Tensor) else other
        quiet = fperrors.ignore()
        try:
            if alpha != 1:
                o = o * alpha
            ufunc(self._data, o, out=self._data, casting="same_kind")
        except TypeError:
            raise _cast_error(dt.result_type(self, other), self) from None
        except ValueError as exc:
            raise _inplace_error(self, other if isinstance(other, Tensor) else _make(
                np.asarray(o)), exc) from None
        finally:
            fperrors.restore(quiet)
        self._vc[0] += 1
        return self

    return fn


_fast_add, _fast_sub, _fast_mul, _fast_div = (
    _fast(np.add), _fast(np.subtract), _fast(np.multiply), _fast(np.true_divide))


def add_(self, other, *, alpha=1):
    """self += alpha * other."""
    check_inplace(self)
    out = _fast_add(self, other, alpha=alpha)
    return inplace(self, ops.add, other, alpha=alpha) if out is None else out


def sub_(self, other, *, alpha=1):
    check_inplace(self)
    out = _fast_sub(self, other, alpha=alpha)
    return inplace(self, ops.sub, other, alpha=alpha) if out is None else out


def mul_(self, other):
    check_inplace(self)
    out = _fast_mul(self, other)
    return inplace(self, ops.mul, other) if out is None else out


def div_(self, other, *, rounding_mode=None):
    check_inplace(self)
    if rounding_mode is None and self._data.dtype.kind == "f":
        out = _fast_div(self, other)
        if out is not None:
            return out
    return inplace(self, ops.div, other, rounding_mode=rounding_mode)


def _constant_history(self) -> None:
    """After overwriting self with a constant: its old history contributes zero gradient."""
    if _needs_graph(self, ()):
        self.grad_fn = ops.mul(_make(self._data.copy(), grad_fn=self.grad_fn), 0).grad_fn


def _broadcast_into(self, value):
    """``value`` cast to self's dtype and expanded to self's shape (fill_ and copy_)."""
    return ops.expand(_cast(value, self.dtype), self.shape)


def zero_(self):
    """Fill with zeros in place."""
    check_inplace(self)
    self._data[...] = 0
    _constant_history(self)
    self._vc[0] += 1
    return self


def fill_(self, value):
    check_inplace(self)
    v = value.item() if isinstance(value, Tensor) else value
    if isinstance(value, Tensor) and _needs_graph(self, (value,)):
        return inplace(self, _broadcast_into, value)
    self._data[...] = v
    _constant_history(self)
    self._vc[0] += 1
    return self


def copy_(self, src, non_blocking=False):
    """Copy ``src`` (broadcast, cast, moved) into self; the gradient flows to ``src``."""
    check_inplace(self)
    src_t = src if isinstance(src, Tensor) else _make(np.asarray(src))
    check_overlap(self._data, (src_t,))
    if src_t.device != self.device:
        src_t = ops.move(src_t, self.device)
    if _needs_graph(self, (src_t,)):
        return inplace(self, _broadcast_into, src_t)
    try:
        np.copyto(self._data, dev.to_device(src_t._data, self.device), casting="unsafe")
    except ValueError as exc:
        raise _inplace_error(self, src_t, exc) from None
    self._vc[0] += 1
    return self


def clamp_(self, min=None, max=None):  # noqa: A002
    return inplace(self, ops.clamp, min, max)


def addcmul_(self, tensor1, tensor2, *, value=1):
    """self += value * tensor1 * tensor2."""
    return add_(self, ops.mul(tensor1, tensor2), alpha=value)


def addcdiv_(self, tensor1, tensor2, *, value=1):
    """self += value * tensor1 / tensor2."""
    return add_(self, ops.div(tensor1, tensor2), alpha=value)


def lerp_(self, end, weight):
    """self += weight * (end - self)."""
    return add_(self, ops.mul(ops.sub(end, self), weight))


def masked_fill_(self, mask, value):
    return inplace(self, ops.masked_fill, mask, value)


def setitem(self, index, value) -> None:
    """``self[index] = value``; recorded in the graph when grad mode needs it."""
    check_inplace(self)
    value_t = value if isinstance(value, Tensor) else _const(value, self, self._data.dtype)
    norm = _normalise_index(index)
    if is_basic_index(norm):  # a copy into a view: only that region is written
        try:
            check_overlap(self._data[norm], (value_t,))
        except IndexError as exc:
            raise IndexError(str(exc).replace("axis", "dimension")) from None
    else:
        check_overlap(self._data, (value_t,))
    if _needs_graph(self, (value_t,)):
        _graph_inplace(self, ops.index_put, index, value_t)
        return
    try:
        self._data[norm] = value_t._data
    except IndexError as exc:
        raise IndexError(str(exc).replace("axis", "dimension")) from None
    except ValueError as exc:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(value_t.shape)} cannot "
                           f"be broadcast to indexing result ({exc})") from None
    self._vc[0] += 1


def _rebase(view: Tensor) -> None:
    """After an in-place edit of ``view``, give its base (and the base's bases) a history that
    includes the edit, then make the view a fresh view of the new base (torch's CopySlices)."""
    record = view._view
    record[3] = view._vc[0]  # view.grad_fn is current: do not let _edge re-derive it
    base, op, attrs, _ = record
    old_base = _make(base._data, grad_fn=base.grad_fn)
    old_base._rg = base._rg
    row = TABLE["copy_slices"]
    node = Node(row.name, row.backward, (old_base, view))
    node.view_op, node.view_attrs = op, attrs
    base.grad_fn = node
    base._rg = True
    base._retains_grad = False
    if base._view is not None:
        _rebase(base)
    view.grad_fn = apply(op, base, **attrs).grad_fn
    view._view[3] = view._vc[0]
