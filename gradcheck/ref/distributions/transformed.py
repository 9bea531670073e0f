"""Distributions built by transforming another: ``Transform`` and the ``Exp``, ``Affine``,
``Sigmoid`` and ``Tanh`` transforms, ``TransformedDistribution`` (the density by the change of
variables), ``RelaxedBernoulli`` (a sigmoid of ``LogitRelaxedBernoulli``) and ``Gumbel``; and
``Cauchy`` and ``Geometric``. Formulas are torch's, so their gradients are too.

Example:
    >>> import gradcheck.ref as torch
    >>> squashed = TransformedDistribution(torch.distributions.Normal(0.0, 1.0),
    ...                                    [TanhTransform()])
    >>> squashed.log_prob(torch.tensor(0.0))
    tensor(-0.9189)
"""
from __future__ import annotations

import math
from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.distributions.continuous import Uniform
from gradcheck.ref.distributions.discrete import bernoulli_parameters
from gradcheck.ref.distributions.distribution import Distribution, broadcast_all

EULER_GAMMA = 0.57721566490153286060


def _softplus(x: Any) -> Any:
    return torch.nn.functional.softplus(x)


class Transform:
    """An invertible map with the log of its Jacobian's absolute determinant."""

    bijective = False
    sign = 1
    event_dim = 0

    def __call__(self, x: Any) -> Any:
        return self._call(x)

    @property
    def inv(self) -> Transform:
        return _InverseTransform(self)

    def _call(self, x: Any) -> Any:
        raise NotImplementedError

    def _inverse(self, y: Any) -> Any:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class _InverseTransform(Transform):
    def __init__(self, transform: Transform) -> None:
        self._inv, self.bijective, self.sign = transform, transform.bijective, transform.sign
        self.event_dim = transform.event_dim

    @property
    def inv(self) -> Transform:
        return self._inv

    def _call(self, x: Any) -> Any:
        return self._inv._inverse(x)

    def _inverse(self, y: Any) -> Any:
        return self._inv._call(y)

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        return -self._inv.log_abs_det_jacobian(y, x)


class ExpTransform(Transform):
    bijective = True

    def _call(self, x: Any) -> Any:
        return x.exp()

    def _inverse(self, y: Any) -> Any:
        return y.log()

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        return x


class AffineTransform(Transform):
    """``loc + scale * x``."""

    bijective = True

    def __init__(self, loc: Any, scale: Any, event_dim: int = 0) -> None:
        self.loc, self.scale, self.event_dim = loc, scale, event_dim

    @property
    def sign(self) -> Any:
        return self.scale.sign() if isinstance(self.scale, torch.Tensor) else (
            1 if self.scale > 0 else -1)

    def _call(self, x: Any) -> Any:
        return self.loc + self.scale * x

    def _inverse(self, y: Any) -> Any:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        scale = self.scale
        if isinstance(scale, torch.Tensor):
            result = scale.abs().log()
        else:
            result = torch.full_like(x, math.log(abs(scale)))
        shape = x.shape
        if self.event_dim:
            result = result.reshape(tuple(result.shape[:-self.event_dim]) + (-1,)).sum(-1)
            shape = shape[:-self.event_dim]
        return result.expand(shape)


class SigmoidTransform(Transform):
    bijective = True

    def _call(self, x: Any) -> Any:
        info = torch.finfo(x.dtype)
        return torch.clamp(torch.sigmoid(x), min=info.tiny, max=1.0 - info.eps)

    def _inverse(self, y: Any) -> Any:
        info = torch.finfo(y.dtype)
        y = y.clamp(min=info.tiny, max=1.0 - info.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        return -_softplus(-x) - _softplus(x)


class TanhTransform(Transform):
    bijective = True

    def _call(self, x: Any) -> Any:
        return x.tanh()

    def _inverse(self, y: Any) -> Any:
        return torch.atanh(y)

    def log_abs_det_jacobian(self, x: Any, y: Any) -> Any:
        # NOTE: log(1 - tanh(x)^2) written without tanh, stable for large |x| (torch's form)
        return 2.0 * (math.log(2.0) - x - _softplus(-2.0 * x))


def _sum_rightmost(value: Any, dims: int) -> Any:
    return value if dims == 0 else value.reshape(tuple(value.shape[:-dims]) + (-1,)).sum(-1)


class TransformedDistribution(Distribution):
    """``base_distribution`` pushed through ``transforms`` in order."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, transforms: Any,
                 validate_args: bool | None = None) -> None:
        self.base_dist = base_distribution
        self.transforms = [transforms] if isinstance(transforms, Transform) else list(
            transforms)
        super().__init__(base_distribution.batch_shape, base_distribution.event_shape)

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    def _forward(self, x: Any) -> Any:
        for transform in self.transforms:
            x = transform(x)
        return x

    def sample(self, sample_shape=()) -> Any:
        with torch.no_grad():
            return self._forward(self.base_dist.sample(sample_shape))

    def rsample(self, sample_shape=()) -> Any:
        return self._forward(self.base_dist.rsample(sample_shape))

    def log_prob(self, value: Any) -> Any:
        """The base density at the pre-image, less each transform's log |det J|."""
        event_dim = len(self.event_shape)
        log_prob, y = 0.0, value
        for transform in reversed(self.transforms):
            x = transform.inv(y)
            log_prob = log_prob - _sum_rightmost(transform.log_abs_det_jacobian(x, y),
                                                 event_dim - transform.event_dim)
            y = x
        return log_prob + _sum_rightmost(self.base_dist.log_prob(y),
                                         event_dim - len(self.base_dist.event_shape))


class Cauchy(Distribution):
    has_rsample = True
    arg_constraints = {"loc": "real", "scale": "positive"}

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape)

    @property
    def mean(self) -> Any:
        return torch.full(self._extended_shape(), float("nan"), dtype=self.loc.dtype)

    @property
    def mode(self) -> Any:
        return self.loc

    @property
    def variance(self) -> Any:
        return torch.full(self._extended_shape(), float("inf"), dtype=self.loc.dtype)

    def rsample(self, sample_shape=()) -> Any:
        u = torch.rand(*self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.icdf(u)

    def log_prob(self, value: Any) -> Any:
        return (-math.log(math.pi) - self.scale.log()
                - torch.log1p(((value - self.loc) / self.scale) ** 2))

    def cdf(self, value: Any) -> Any:
        return torch.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: Any) -> Any:
        return torch.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self) -> Any:
        return math.log(4 * math.pi) + self.scale.log()


class Gumbel(TransformedDistribution):
    """loc - scale * log(-log(U)) for U uniform on (tiny, 1 - eps)."""

    arg_constraints = {"loc": "real", "scale": "positive"}

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        info = torch.finfo(self.loc.dtype)
        base = Uniform(torch.full_like(self.loc, info.tiny),
                       torch.full_like(self.loc, 1 - info.eps))
        super().__init__(base, [ExpTransform().inv, AffineTransform(0, -torch.ones_like(
            self.loc)), ExpTransform().inv, AffineTransform(self.loc, -self.scale)])

    def log_prob(self, value: Any) -> Any:
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    @property
    def mean(self) -> Any:
        return self.loc + self.scale * EULER_GAMMA

    @property
    def mode(self) -> Any:
        return self.loc

    @property
    def stddev(self) -> Any:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Any:
        return self.stddev.pow(2)

    def entropy(self) -> Any:
        return self.scale.log() + (1 + EULER_GAMMA)


class LogitRelaxedBernoulli(Distribution):
    """The logit of a relaxed (Concrete) Bernoulli at ``temperature``."""

    has_rsample = True

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        self.temperature = temperature
        self.probs, self.logits = bernoulli_parameters(probs, logits)
        super().__init__(self.logits.shape)

    def rsample(self, sample_shape=()) -> Any:
        info = torch.finfo(self.logits.dtype)
        u = torch.rand(*self._extended_shape(sample_shape), dtype=self.logits.dtype)
        u = u.clamp(min=info.eps, max=1 - info.eps)
        return (u.log() - (-u).log1p() + self.logits) / self.temperature

    def log_prob(self, value: Any) -> Any:
        diff = self.logits - value * self.temperature
        temperature = torch.as_tensor(self.temperature, dtype=diff.dtype)
        return temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """A continuous relaxation of Bernoulli on (0, 1): sigmoid of LogitRelaxedBernoulli."""

    has_rsample = True

    def __init__(self, temperature: Any, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        base = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base, SigmoidTransform())
        self.temperature, self.probs, self.logits = temperature, base.probs, base.logits


class Geometric(Distribution):
    """The number of failures before the first success, each trial succeeding with
    ``probs``."""

    arg_constraints = {"probs": "unit_interval", "logits": "real"}

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        self.probs, self.logits = bernoulli_parameters(probs, logits)
        super().__init__(self.probs.shape)

    @property
    def mean(self) -> Any:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Any:
        return torch.zeros_like(self.probs)

    @property
    def variance(self) -> Any:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()) -> Any:
        info = torch.finfo(self.probs.dtype)
        with torch.no_grad():
            u = torch.rand(*self._extended_shape(sample_shape), dtype=self.probs.dtype)
            u = u.clamp(min=info.tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value: Any) -> Any:
        value, probs = broadcast_all(value, self.probs)
        # NOTE: a certain success (p = 1) makes k = 0 have probability 1, not 0 * log(0)
        probs = torch.where((probs == 1) & (value == 0), torch.zeros_like(probs), probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Any:
        return torch.nn.functional.binary_cross_entropy_with_logits(
            self.logits, self.probs, reduction="none") / self.probs
