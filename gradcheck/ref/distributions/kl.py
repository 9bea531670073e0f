"""``kl_divergence(p, q)`` for the pairs torch registers most often, and
``register_kl`` for user-defined pairs.

Example:
    >>> import gradcheck.ref as torch
    >>> from gradcheck.ref.distributions import Normal
    >>> kl_divergence(Normal(0.0, 1.0), Normal(1.0, 1.0))
    tensor(0.5000)
"""
from __future__ import annotations

from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.distributions.continuous import MultivariateNormal, Normal, Uniform
from gradcheck.ref.distributions.discrete import Bernoulli, Categorical, Independent

_KL: dict = {}


def register_kl(type_p: type, type_q: type):
    def decorator(fn):
        _KL[type_p, type_q] = fn
        return fn

    return decorator


def kl_divergence(p: Any, q: Any) -> Any:
    for (type_p, type_q), fn in _KL.items():
        if isinstance(p, type_p) and isinstance(q, type_q):
            return fn(p, q)
    raise NotImplementedError(f"No KL(p || q) is implemented for p={type(p).__name__}, "
                              f"q={type(q).__name__}; register one with register_kl")


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Any:
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Any:
    t = p.probs * (p.logits - q.logits)
    t = torch.where(q.probs == 0, torch.full_like(t, float("inf")), t)
    t = torch.where(p.probs == 0, torch.zeros_like(t), t)
    return t.sum(-1)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Any:
    softplus = torch.nn.functional.softplus
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = torch.where(q.probs == 0, torch.full_like(t1, float("inf")), t1)
    t1 = torch.where(p.probs == 0, torch.zeros_like(t1), t1)
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = torch.where(q.probs == 1, torch.full_like(t2, float("inf")), t2)
    t2 = torch.where(p.probs == 1, torch.zeros_like(t2), t2)
    return t1 + t2


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Any:
    result = ((q.high - q.low) / (p.high - p.low)).log()
    outside = (q.low > p.low) | (q.high < p.high)
    return torch.where(outside, torch.full_like(result, float("inf")), result)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p: MultivariateNormal, q: MultivariateNormal) -> Any:
    half_logdet = (q.scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                   - p.scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    k = p.event_shape[0]
    q_inv = torch.linalg.inv(q.scale_tril)
    trace = (q_inv @ p.scale_tril).pow(2).sum((-2, -1))
    diff = (q_inv @ (q.loc - p.loc).unsqueeze(-1)).squeeze(-1)
    return half_logdet + 0.5 * (trace + diff.pow(2).sum(-1) - k)


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Any:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL between Independents of different event dims")
    return p._sum_rightmost(kl_divergence(p.base_dist, q.base_dist))
