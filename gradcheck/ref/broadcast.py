"""Broadcasting: the one place where a gradient is summed back to its input's shape."""
from __future__ import annotations


def broadcast_shapes(*shapes) -> tuple:
    """The shape that ``shapes`` broadcast to, or torch's size-mismatch error.

    >>> broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for shape in shapes:
        for i, size in enumerate(shape):
            j = ndim - len(shape) + i
            if size != 1:
                if out[j] != 1 and out[j] != size:
                    raise mismatch(out[j], size, j)
                out[j] = size
    return tuple(out)


def mismatch(a: int, b: int, dim: int) -> RuntimeError:
    return RuntimeError(
        f"The size of tensor a ({a}) must match the size of tensor b ({b}) "
        f"at non-singleton dimension {dim}"
    )


def mismatch_error(shape_a, shape_b) -> RuntimeError:
    """torch's error for two shapes that do not broadcast (raised instead of numpy's)."""
    ndim = max(len(shape_a), len(shape_b))
    a = (1,) * (ndim - len(shape_a)) + tuple(shape_a)
    b = (1,) * (ndim - len(shape_b)) + tuple(shape_b)
    for dim in range(ndim - 1, -1, -1):
        if a[dim] != b[dim] and a[dim] != 1 and b[dim] != 1:
            return mismatch(a[dim], b[dim], dim)
    return RuntimeError(f"shapes {list(shape_a)} and {list(shape_b)} cannot be broadcast")


def sum_to(grad, shape: tuple):
    """Sum ``grad`` over the dimensions that broadcasting added or stretched to reach ``shape``.

    >>> from gradcheck.ref import ones
    >>> sum_to(ones(2, 3), (1, 3)).tolist()
    [[2.0, 2.0, 2.0]]
    """
    lead = grad.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(
        i + lead for i, size in enumerate(shape) if size == 1 and grad.shape[i + lead] != 1
    )
    if dims:
        grad = grad.sum(dim=dims, keepdim=True)
    if lead or grad.shape != shape:
        grad = grad.reshape(shape)
    return grad
