"""Continuous distributions: ``Normal``, ``Uniform``, ``Laplace``, ``Exponential``, ``Beta``,
``Gamma`` (sampled through numpy, not reparameterised), and ``MultivariateNormal``
(``covariance_matrix``, ``precision_matrix`` or ``scale_tril``). ``log_prob``, ``entropy``,
``cdf`` and the moments follow torch's formulas, so their gradients do too.

Example:
    >>> import gradcheck.ref as torch
    >>> Normal(0.0, 1.0).log_prob(torch.tensor(0.0))
    tensor(-0.9189)
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from gradcheck import ref as torch
from gradcheck.ref.distributions.distribution import Distribution, broadcast_all


class Normal(Distribution):
    has_rsample = True
    arg_constraints = {"loc": "real", "scale": "positive"}

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape)

    @property
    def mean(self) -> Any:
        return self.loc

    @property
    def mode(self) -> Any:
        return self.loc

    @property
    def stddev(self) -> Any:
        return self.scale

    @property
    def variance(self) -> Any:
        return self.scale.pow(2)

    def rsample(self, sample_shape=()) -> Any:
        eps = torch.randn(*self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value: Any) -> Any:
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - math.log(
            math.sqrt(2 * math.pi))

    def cdf(self, value: Any) -> Any:
        return 0.5 * (1 + torch.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value: Any) -> Any:
        return self.loc + self.scale * torch.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Any:
        return 0.5 + 0.5 * math.log(2 * math.pi) + torch.log(self.scale)


class Uniform(Distribution):
    has_rsample = True
    arg_constraints = {"low": "real", "high": "real"}

    def __init__(self, low: Any, high: Any, validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape)

    @property
    def mean(self) -> Any:
        return (self.high + self.low) / 2

    @property
    def variance(self) -> Any:
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=()) -> Any:
        u = torch.rand(*self._extended_shape(sample_shape), dtype=self.low.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Any) -> Any:
        inside = ((value >= self.low) & (value < self.high)).to(self.low.dtype)
        return torch.log(inside) - torch.log(self.high - self.low)

    def cdf(self, value: Any) -> Any:
        return ((value - self.low) / (self.high - self.low)).clamp(0, 1)

    def entropy(self) -> Any:
        return torch.log(self.high - self.low)


class Laplace(Distribution):
    has_rsample = True
    arg_constraints = {"loc": "real", "scale": "positive"}

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape)

    @property
    def mean(self) -> Any:
        return self.loc

    @property
    def variance(self) -> Any:
        return 2 * self.scale.pow(2)

    def rsample(self, sample_shape=()) -> Any:
        eps = torch.finfo(self.loc.dtype).eps
        u = torch.rand(*self._extended_shape(sample_shape), dtype=self.loc.dtype) * 2 - 1
        u = u.clamp(-1 + eps, 1)
        return self.loc - self.scale * u.sign() * torch.log1p(-u.abs())

    def log_prob(self, value: Any) -> Any:
        return -torch.log(2 * self.scale) - (value - self.loc).abs() / self.scale

    def entropy(self) -> Any:
        return 1 + torch.log(2 * self.scale)


class Exponential(Distribution):
    has_rsample = True
    arg_constraints = {"rate": "positive"}

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape)

    @property
    def mean(self) -> Any:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Any:
        return self.rate.pow(-2)

    def rsample(self, sample_shape=()) -> Any:
        u = torch.rand(*self._extended_shape(sample_shape), dtype=self.rate.dtype)
        return -torch.log1p(-u) / self.rate

    def log_prob(self, value: Any) -> Any:
        return self.rate.log() - self.rate * value

    def entropy(self) -> Any:
        return 1.0 - torch.log(self.rate)


class Gamma(Distribution):
    arg_constraints = {"concentration": "positive", "rate": "positive"}

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape)

    @property
    def mean(self) -> Any:
        return self.concentration / self.rate

    @property
    def variance(self) -> Any:
        return self.concentration / self.rate.pow(2)

    def sample(self, sample_shape=()) -> Any:
        from gradcheck.ref.random import _rng

        shape = self._extended_shape(sample_shape)
        draw = _rng(None).gamma(np.broadcast_to(self.concentration.detach().numpy(), shape))
        return torch.tensor(draw / np.broadcast_to(self.rate.detach().numpy(), shape),
                            dtype=self.rate.dtype)

    def log_prob(self, value: Any) -> Any:
        a, b = self.concentration, self.rate
        return a * torch.log(b) + (a - 1) * torch.log(value) - b * value - _lgamma(a)


class Beta(Distribution):
    arg_constraints = {"concentration1": "positive", "concentration0": "positive"}

    def __init__(self, concentration1: Any, concentration0: Any,
                 validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        super().__init__(self.concentration1.shape)

    @property
    def mean(self) -> Any:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def variance(self) -> Any:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def sample(self, sample_shape=()) -> Any:
        from gradcheck.ref.random import _rng

        shape = self._extended_shape(sample_shape)
        draw = _rng(None).beta(np.broadcast_to(self.concentration1.detach().numpy(), shape),
                               np.broadcast_to(self.concentration0.detach().numpy(), shape))
        return torch.tensor(draw, dtype=self.concentration1.dtype)

    def log_prob(self, value: Any) -> Any:
        a, b = self.concentration1, self.concentration0
        return ((a - 1) * torch.log(value) + (b - 1) * torch.log1p(-value)
                - (_lgamma(a) + _lgamma(b) - _lgamma(a + b)))


def _lgamma(x: Any) -> Any:
    """log Gamma(x) elementwise; a constant (no gradient) for the normalising terms."""
    values = np.vectorize(math.lgamma)(x.detach().numpy().astype(np.float64))
    return torch.tensor(values, dtype=x.dtype)


class MultivariateNormal(Distribution):
    has_rsample = True
    arg_constraints = {"loc": "real_vector", "scale_tril": "lower_cholesky"}

    def __init__(self, loc: Any, covariance_matrix: Any = None, precision_matrix: Any = None,
                 scale_tril: Any = None, validate_args: bool | None = None) -> None:
        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        if scale_tril is not None:
            self.scale_tril = scale_tril
        elif covariance_matrix is not None:
            self.scale_tril = torch.linalg.cholesky(covariance_matrix)
        else:
            self.scale_tril = torch.linalg.cholesky(torch.linalg.inv(precision_matrix))
        self.loc = loc
        batch = torch.broadcast_shapes(tuple(loc.shape[:-1]), tuple(self.scale_tril.shape[:-2]))
        super().__init__(batch, loc.shape[-1:])

    @property
    def covariance_matrix(self) -> Any:
        return self.scale_tril @ self.scale_tril.transpose(-2, -1)

    @property
    def mean(self) -> Any:
        return self.loc

    @property
    def variance(self) -> Any:
        return self.scale_tril.pow(2).sum(-1).expand(*self._extended_shape())

    def rsample(self, sample_shape=()) -> Any:
        eps = torch.randn(*self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + (self.scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value: Any) -> Any:
        diff = value - self.loc
        solved = torch.linalg.solve(self.scale_tril, diff.unsqueeze(-1)).squeeze(-1)
        mahalanobis = solved.pow(2).sum(-1)
        half_log_det = self.scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        k = self._event_shape[0]
        return -0.5 * (k * math.log(2 * math.pi) + mahalanobis) - half_log_det

    def entropy(self) -> Any:
        half_log_det = self.scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        k = self._event_shape[0]
        return 0.5 * k * (1.0 + math.log(2 * math.pi)) + half_log_det
