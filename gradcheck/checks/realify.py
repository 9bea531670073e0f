"""Complex inputs and outputs as pairs of real numbers, in torch's convention.

The checker sees every complex array as a real one with a trailing axis of 2 (real part,
imaginary part), so a complex function is an ordinary real map and both modes check it
unchanged. The analytic side follows torch's (Wirtinger) convention, which is what makes the
pairs line up: for a real loss ``L`` whose complex output ``y`` gets the grad_output
``g = a + ib``, ``L = sum(a * Re y + b * Im y)``, and the grad of a complex input
``z = x + iy`` is ``dL/dx + i dL/dy`` (twice the conjugate Wirtinger derivative). Splitting
the grad_output and the grad the same way turns the backward into the VJP of the real map;
a backward that forgets a ``conj()`` gets the sign of every imaginary column wrong.

>>> import numpy as np
>>> split(np.array([1 + 2j])).tolist()
[[1.0, 2.0]]
>>> join(np.array([[1.0, 2.0]])).tolist()
[(1+2j)]
"""
from __future__ import annotations

import numpy as np

_REAL_OF = {np.dtype(np.complex128): np.float64, np.dtype(np.complex64): np.float32}


def split(a: np.ndarray) -> np.ndarray:
    """A complex array as real pairs on a new last axis, in the matching real precision."""
    a = np.asarray(a)
    if not np.iscomplexobj(a):
        return a
    real = _REAL_OF.get(a.dtype, np.float64)
    return np.stack([a.real, a.imag], axis=-1).astype(real, copy=False)


def join(a: np.ndarray) -> np.ndarray:
    """Real pairs on the last axis as one complex128 array (the inverse of split)."""
    return a[..., 0] + 1j * a[..., 1]


def real_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype split() gives an array of ``dtype``.

    >>> str(real_dtype(np.dtype(np.complex64)))
    'float32'
    """
    return np.dtype(_REAL_OF.get(np.dtype(dtype), dtype))
