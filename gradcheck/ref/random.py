"""Random numbers: a global generator plus ``Generator`` objects, as in torch.

Streams are reproducible under ``manual_seed`` but are not bit-identical to torch's.
"""
from __future__ import annotations

import contextlib

import numpy as np

from gradcheck.ref import devices as dev
from gradcheck.ref import dtypes as dt
from gradcheck.ref.arguments import _shape_args
from gradcheck.ref.tensors import Tensor, _make, check_inplace


class Generator:
    """A seeded random stream, e.g. ``Generator().manual_seed(0)``.

    >>> g = Generator().manual_seed(3)
    >>> g.initial_seed()
    3
    """

    def __init__(self, device="cpu"):
        self.device = dev.as_device(device)
        self._seed = 67280421310721  # torch's default seed
        self._rng = np.random.Generator(np.random.PCG64(self._seed))

    def manual_seed(self, seed: int) -> "Generator":
        self._seed = int(seed)
        self._rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self) -> int:
        return self.manual_seed(int(np.random.SeedSequence().entropy % 2**63))._seed

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self):
        return _make(np.frombuffer(repr(self._rng.bit_generator.state).encode(), dtype=np.uint8)
                     .copy())

    def set_state(self, state) -> "Generator":
        import ast

        self._rng.bit_generator.state = ast.literal_eval(bytes(state._data).decode())
        return self


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the global generator (returns it, as torch does).

    >>> _ = manual_seed(0)
    """
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state) -> None:
    default_generator.set_state(state)


def _rng(generator) -> np.random.Generator:
    return (generator or default_generator)._rng


def _out(array, dtype, device, requires_grad) -> Tensor:
    d = dt.as_dtype(dtype) if dtype is not None else dt.get_default_dtype()
    array = array.astype(d.np, copy=False)
    target = dev.as_device(device)
    from gradcheck.ref.creation import require_grad

    return require_grad(_make(dev.to_device(array, target) if target.type != "cpu" else array),
                        requires_grad)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Standard normal samples of the given shape.

    >>> randn(2, 3).shape
    torch.Size([2, 3])
    """
    shape = _shape_args(size)
    if _is_complex(dtype):  # torch: each part N(0, 1/2), so that E|z|^2 = 1
        draws = _rng(generator).standard_normal(shape + (2,)) * np.sqrt(0.5)
        return _out(_pairs(draws), dtype, device, requires_grad)
    return _out(_rng(generator).standard_normal(shape), dtype, device, requires_grad)


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uniform samples in [0, 1)."""
    shape = _shape_args(size)
    if _is_complex(dtype):  # torch: each part uniform in [0, 1)
        return _out(_pairs(_rng(generator).random(shape + (2,))), dtype, device, requires_grad)
    return _out(_rng(generator).random(shape), dtype, device, requires_grad)


def _is_complex(dtype) -> bool:
    return dtype is not None and dt.as_dtype(dtype).np.kind == "c"


def _pairs(draws: np.ndarray) -> np.ndarray:
    """Complex numbers from a last axis of (real, imaginary) draws."""
    return draws[..., 0] + 1j * draws[..., 1]


def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad=False) -> Tensor:
    """Integers in [low, high); ``randint(high, size)`` is allowed, as in torch."""
    if size is None:
        low, high, size = 0, low, high
    array = _rng(generator).integers(low, high, size=tuple(size))
    return _out(array, dtype or dt.int64, device, requires_grad)


def randperm(n: int, *, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A random permutation of 0..n-1."""
    return _out(_rng(generator).permutation(n), dtype or dt.int64, device, requires_grad)


def randn_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:  # noqa: A002
    return randn(*input.shape, dtype=dtype or input.dtype, device=device or input.device,
                 requires_grad=requires_grad)


def rand_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:  # noqa: A002
    return rand(*input.shape, dtype=dtype or input.dtype, device=device or input.device,
                requires_grad=requires_grad)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None):
    """Normal samples with the given mean and std (numbers or tensors)."""
    m = mean._data if isinstance(mean, Tensor) else mean
    s = std._data if isinstance(std, Tensor) else std
    shape = tuple(size) if size is not None else np.broadcast_shapes(np.shape(m), np.shape(s))
    array = _rng(generator).normal(np.asarray(m), np.asarray(s), size=shape)
    like = mean if isinstance(mean, Tensor) else std if isinstance(std, Tensor) else None
    return _out(array, dtype or (like.dtype if like is not None else None), device, False)


def bernoulli(input, p=None, *, generator=None) -> Tensor:  # noqa: A002
    """1 with probability ``input`` (elementwise), else 0."""
    probs = input._data if p is None else np.full(input._data.shape, p)
    return _make((_rng(generator).random(input._data.shape) < probs).astype(input._data.dtype))


def binomial(count, prob, generator=None) -> Tensor:
    """Binomial samples: ``count`` trials of success probability ``prob`` (elementwise),
    in ``count``'s dtype."""
    trials = np.broadcast_to(count._data, np.broadcast_shapes(count._data.shape,
                                                              prob._data.shape))
    draws = _rng(generator).binomial(trials.astype(np.int64), prob._data)
    return _make(np.asarray(draws).astype(count._data.dtype))


def multinomial(input, num_samples, replacement=False, *, generator=None):  # noqa: A002
    """Sample category indices with probabilities proportional to ``input``'s rows."""
    rows = np.atleast_2d(input._data.astype(np.float64))
    out = [_rng(generator).choice(rows.shape[1], num_samples, replace=replacement,
                                  p=r / r.sum()) for r in rows]
    array = np.asarray(out, dtype=np.int64)
    return _make(array if input._data.ndim == 2 else array[0])


def _fill(self: Tensor, sample) -> Tensor:
    """Write samples into self in place (no graph; init functions run under no_grad)."""
    check_inplace(self)
    if self._data.dtype.kind == "c":  # torch fills both parts (see normal_ for the scale)
        values = _pairs(sample(self._data.shape + (2,))).astype(self._data.dtype)
    else:
        values = sample(self._data.shape).astype(self._data.dtype, copy=False)
    self._data[...] = dev.to_device(values, self.device)
    self._vc[0] += 1
    return self


def uniform_(self: Tensor, a: float = 0.0, b: float = 1.0, *, generator=None) -> Tensor:
    """Fill with uniform samples in [a, b)."""
    return _fill(self, lambda shape: _rng(generator).uniform(a, b, shape))


def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    """Fill with normal samples."""
    if self._data.dtype.kind == "c":  # torch: each part N(mean, std^2 / 2)
        std = std / np.sqrt(2)
    return _fill(self, lambda shape: _rng(generator).normal(mean, std, shape))


def bernoulli_(self: Tensor, p: float = 0.5, *, generator=None) -> Tensor:
    """Fill with 1 (probability p) or 0."""
    return _fill(self, lambda shape: _rng(generator).random(shape) < p)


@contextlib.contextmanager
def fork_rng(devices=None, enabled: bool = True, _caller: str = "fork_rng",
             _devices_kw: str = "devices", device_type: str = "cuda"):
    """Restore the global random state on exit, so draws inside do not affect those after."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
