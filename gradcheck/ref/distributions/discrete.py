"""Discrete distributions: ``Categorical``, ``OneHotCategorical``, ``Bernoulli`` (by
``probs`` or ``logits``, normalised as torch does), and ``Independent``, which reinterprets
batch dims as event dims.

Example:
    >>> import gradcheck.ref as torch
    >>> d = Categorical(logits=torch.tensor([0.0, 0.0]))
    >>> d.probs, d.entropy()
    (tensor([0.5000, 0.5000]), tensor(0.6931))
"""
from __future__ import annotations

from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.distributions.distribution import Distribution, broadcast_all


def _probs_or_logits(probs: Any, logits: Any) -> None:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def bernoulli_parameters(probs: Any, logits: Any) -> tuple[Any, Any]:
    """(probs, logits) of a two-outcome distribution given either one, as torch derives the
    other: logits from probs clamped away from 0 and 1, probs as the sigmoid of logits."""
    _probs_or_logits(probs, logits)
    if probs is not None:
        (probs,) = broadcast_all(probs)
        eps = torch.finfo(probs.dtype).eps
        clamped = probs.clamp(eps, 1 - eps)
        return probs, torch.log(clamped) - torch.log1p(-clamped)
    (logits,) = broadcast_all(logits)
    return torch.sigmoid(logits), logits


class Categorical(Distribution):
    arg_constraints = {"probs": "simplex", "logits": "real_vector"}

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        _probs_or_logits(probs, logits)
        if probs is not None:
            self.probs = probs / probs.sum(-1, keepdim=True)
            self.logits = torch.log(self.probs.clamp(min=torch.finfo(probs.dtype).tiny))
        else:
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
            self.probs = torch.softmax(self.logits, -1)
        self._num_events = self.probs.shape[-1]
        super().__init__(self.probs.shape[:-1])

    @property
    def param_shape(self):
        return self.probs.shape

    @property
    def mean(self) -> Any:
        return torch.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    @property
    def mode(self) -> Any:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Any:
        return torch.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    def sample(self, sample_shape=()) -> Any:
        flat = self.probs.reshape(-1, self._num_events).detach()
        count = 1
        for n in sample_shape:
            count *= n
        draws = torch.multinomial(flat, count, True).t()
        return draws.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value: Any) -> Any:
        value = value.long().unsqueeze(-1)
        value, log_pmf = torch.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self) -> Any:
        min_real = torch.finfo(self.logits.dtype).min
        logits = self.logits.clamp(min=min_real)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Any:
        values = torch.arange(self._num_events).reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class OneHotCategorical(Distribution):
    arg_constraints = {"probs": "simplex", "logits": "real_vector"}

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:])

    @property
    def probs(self) -> Any:
        return self._categorical.probs

    @property
    def logits(self) -> Any:
        return self._categorical.logits

    @property
    def mean(self) -> Any:
        return self.probs

    @property
    def variance(self) -> Any:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()) -> Any:
        index = self._categorical.sample(sample_shape)
        return torch.nn.functional.one_hot(index, self._categorical._num_events).to(
            self.probs.dtype)

    def log_prob(self, value: Any) -> Any:
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self) -> Any:
        return self._categorical.entropy()


class Bernoulli(Distribution):
    arg_constraints = {"probs": "unit_interval", "logits": "real"}

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        self.probs, self.logits = bernoulli_parameters(probs, logits)
        super().__init__(self.probs.shape)

    @property
    def mean(self) -> Any:
        return self.probs

    @property
    def mode(self) -> Any:
        return (self.probs >= 0.5).to(self.probs.dtype)

    @property
    def variance(self) -> Any:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()) -> Any:
        with torch.no_grad():
            return torch.bernoulli(self.probs.expand(*self._extended_shape(sample_shape)))

    def log_prob(self, value: Any) -> Any:
        logits, value = broadcast_all(self.logits, value)
        return -torch.nn.functional.binary_cross_entropy_with_logits(logits, value,
                                                                     reduction="none")

    def entropy(self) -> Any:
        return torch.nn.functional.binary_cross_entropy_with_logits(self.logits, self.probs,
                                                                    reduction="none")


class Independent(Distribution):
    """``base`` with its last ``reinterpreted_batch_ndims`` batch dims made event dims."""

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int,
                 validate_args: bool | None = None) -> None:
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, \
            reinterpreted_batch_ndims
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        split = len(base_distribution.batch_shape) - reinterpreted_batch_ndims
        super().__init__(shape[:split], shape[split:])

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    @property
    def mean(self) -> Any:
        return self.base_dist.mean

    @property
    def variance(self) -> Any:
        return self.base_dist.variance

    def sample(self, sample_shape=()) -> Any:
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()) -> Any:
        return self.base_dist.rsample(sample_shape)

    def _sum_rightmost(self, value: Any) -> Any:
        n = self.reinterpreted_batch_ndims
        return value.reshape(*value.shape[:value.dim() - n], -1).sum(-1) if n else value

    def log_prob(self, value: Any) -> Any:
        return self._sum_rightmost(self.base_dist.log_prob(value))

    def entropy(self) -> Any:
        return self._sum_rightmost(self.base_dist.entropy())
