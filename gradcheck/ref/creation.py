"""Tensor factories: tensor, zeros, ones, full, empty, arange, linspace, eye, *_like, from_numpy."""
from __future__ import annotations

import numpy as np

from gradcheck.ref import devices as dev
from gradcheck.ref import dtypes as dt
from gradcheck.ref.arguments import _shape_args
from gradcheck.ref.tensors import Tensor, _make


def _finish(array, dtype, device, requires_grad) -> Tensor:
    """Cast to ``dtype``, move to ``device`` and set requires_grad (with torch's checks)."""
    if dtype is not None:
        array = array.astype(dt.as_dtype(dtype).np, copy=False)
    elif array.dtype.kind == "c":  # a complex numpy array: the dispatcher's checks turn on
        dt.from_numpy(array.dtype)
    target = dev.as_device(device)
    xp = dev.array_module(target)
    if xp is not np:
        array = dev.to_device(array, target)
    return require_grad(_make(array), requires_grad)


def require_grad(t: Tensor, requires_grad: bool) -> Tensor:
    """A factory's ``requires_grad=True``, with the factories' error text (which differs from
    ``requires_grad_()``'s in torch)."""
    if requires_grad:
        if t._data.dtype.kind not in "fc":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        t._rg = True
    return t


def _infer(data) -> np.ndarray:
    """numpy array with torch's dtype inference (python floats -> default dtype)."""
    if isinstance(data, Tensor):
        return data._data.copy() if dev.module_of(data._data) is np else data._data.get()
    if isinstance(data, np.ndarray):
        return data.copy()
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in data):
        data = [_infer(x) for x in data]
    array = np.array(data)
    if array.dtype.kind == "f":
        return array.astype(dt.get_default_dtype().np)
    if array.dtype.kind in "iu":
        return array.astype(np.int64)
    if array.dtype.kind == "b":
        return array
    if array.dtype.kind == "c":  # python complex numbers: the default complex dtype
        return array.astype(dt.default_complex().np)
    if array.dtype == object or array.dtype.kind in "US":
        raise TypeError(f"Could not infer dtype of {type(data).__name__}")
    return array


def tensor(data, dtype=None, device=None, requires_grad: bool = False, pin_memory=False) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, numbers, arrays).

    >>> tensor([1.0, 2.0], requires_grad=True)
    tensor([1., 2.], requires_grad=True)
    """
    if dtype is not None and not isinstance(data, (Tensor, np.ndarray)):
        # NOTE: parse straight into the requested dtype; going through float32 first (the
        # default) would round float64 data.
        return _finish(np.array(_infer_nested(data), dtype=dt.as_dtype(dtype).np), None,
                       device, requires_grad)
    return _finish(_infer(data), dtype, device, requires_grad)


def _infer_nested(data):
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in data):
        return [_infer(x) for x in data]
    return data


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like ``tensor`` but shares memory with a numpy array or tensor when it can."""
    if isinstance(data, Tensor) and dtype is None and device is None:
        return data
    if isinstance(data, np.ndarray) and device is None:
        t = from_numpy(data)
        return t if dtype is None else t.to(dt.as_dtype(dtype))
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``array`` (edits show up on both sides).

    >>> import numpy as np
    >>> from_numpy(np.zeros(2))
    tensor([0., 0.], dtype=torch.float64)
    """
    dt.from_numpy(array.dtype)  # raises torch's error for unsupported dtypes
    return _make(array)


def _filled(fill, size, dtype, device, requires_grad) -> Tensor:
    d = dt.as_dtype(dtype) if dtype is not None else dt.get_default_dtype()
    xp = dev.array_module(dev.as_device(device))
    return require_grad(_make(xp.full(_shape_args(size), fill, dtype=d.np)), requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False, out=None) -> Tensor:
    """Zeros of the given shape (float32 by default).

    >>> zeros(2)
    tensor([0., 0.])
    """
    return _filled(0, size, dtype, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, out=None) -> Tensor:
    """Ones of the given shape."""
    return _filled(1, size, dtype, device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    """An uninitialised tensor (zero-filled here, for reproducibility)."""
    return _filled(0, size, dtype, device, requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor filled with ``fill_value``; the dtype follows the value as in torch."""
    if dtype is None:
        dtype = dt._scalar_dtype(fill_value)
    return _filled(fill_value, (size,) if isinstance(size, int) else tuple(size), dtype, device,
                   requires_grad)


def _like(factory):
    def fn(input, dtype=None, device=None, requires_grad=False, memory_format=None):  # noqa: A002
        return factory(input.shape, dtype=dtype or input.dtype, device=device or input.device,
                       requires_grad=requires_grad)

    fn.__name__ = factory.__name__ + "_like"
    fn.__doc__ = f"``{factory.__name__}`` with the shape, dtype and device of ``input``."
    return fn


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False):  # noqa: A002
    return full(input.shape, fill_value, dtype=dtype or input.dtype,
                device=device or input.device, requires_grad=requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Values from start to end (exclusive); integer arguments give int64.

    >>> arange(3)
    tensor([0, 1, 2])
    """
    if end is None:
        start, end = 0, start
    values = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if dtype is None:
        dtype = dt.int64 if all(isinstance(v, int) for v in values) else dt.get_default_dtype()
    d = dt.as_dtype(dtype)
    array = np.arange(*values, dtype=np.float64 if d.is_floating_point else None).astype(d.np)
    return _finish(array, None, device, requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from start to end inclusive."""
    d = dt.as_dtype(dtype) if dtype else dt.get_default_dtype()
    if steps < 0:
        raise RuntimeError(f"linspace(): number of steps must be non-negative, got {steps}")
    if d.np == np.bool_:  # like torch: no evenly spaced bools
        raise NotImplementedError("linspace is not implemented for torch.bool: pick a numeric "
                                  "dtype")
    array = np.linspace(start, end, steps).astype(d.np)
    return _finish(array, None, device, requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """The identity matrix (n x m)."""
    d = dt.as_dtype(dtype) if dtype else dt.get_default_dtype()
    return _finish(np.eye(n, m, dtype=d.np), None, device, requires_grad)
