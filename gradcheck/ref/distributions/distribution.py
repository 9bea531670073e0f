"""``Distribution``: the base class with torch's shape bookkeeping (``batch_shape``,
``event_shape``), ``sample`` as a no-grad ``rsample``, and ``stddev``/``variance``.

Example:
    >>> import gradcheck.ref as torch
    >>> d = torch.distributions.Normal(torch.zeros(3), 1.0)
    >>> d.batch_shape, d.sample((2,)).shape
    (torch.Size([3]), torch.Size([2, 3]))
"""
from __future__ import annotations

from typing import Any

from gradcheck import ref as torch

_validate = [False]


class Distribution:
    """Shapes, sampling and the moments shared by every distribution."""

    has_rsample = False
    arg_constraints: dict = {}

    def __init__(self, batch_shape=(), event_shape=(), validate_args: bool | None = None):
        self._batch_shape = torch.Size(batch_shape)
        self._event_shape = torch.Size(event_shape)

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        _validate[0] = bool(value)

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    def _extended_shape(self, sample_shape=()) -> tuple:
        return tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape)

    def sample(self, sample_shape=()) -> Any:
        with torch.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no reparameterised sampler; "
                                  "use sample()")

    def sample_n(self, n: int) -> Any:
        return self.sample((n,))

    @property
    def stddev(self) -> Any:
        return self.variance.sqrt()

    @property
    def variance(self) -> Any:
        raise NotImplementedError

    def perplexity(self) -> Any:
        return torch.exp(self.entropy())

    def __repr__(self) -> str:
        args = ", ".join(f"{name}: {getattr(self, name).shape if hasattr(getattr(self, name), 'shape') else getattr(self, name)}"  # noqa: E501
                         for name in self.arg_constraints if name in self.__dict__)
        return f"{type(self).__name__}({args})"


def broadcast_all(*values: Any) -> tuple:
    """Tensors of one broadcast shape (Python numbers become tensors of the others' dtype)."""
    tensors = [v for v in values if isinstance(v, torch.Tensor)]
    dtype = tensors[0].dtype if tensors else torch.get_default_dtype()
    as_tensors = [v if isinstance(v, torch.Tensor) else torch.tensor(float(v), dtype=dtype)
                  for v in values]
    shape = torch.broadcast_shapes(*(t.shape for t in as_tensors))
    return tuple(t.expand(shape) for t in as_tensors)
