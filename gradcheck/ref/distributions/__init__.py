"""``torch.distributions``: the families training code samples from and scores with.

Samples use the engine's random streams (not torch's); densities, entropies, moments and KL
divergences are torch's formulas, differentiable where torch's are.

>>> import gradcheck.ref as torch
>>> torch.distributions.Bernoulli(probs=torch.tensor(0.25)).log_prob(torch.tensor(1.0))
tensor(-1.3863)
"""
from gradcheck.ref.distributions import continuous, discrete, distribution, kl  # noqa: F401
from gradcheck.ref.distributions.continuous import (
    Beta,
    Exponential,
    Gamma,
    Laplace,
    MultivariateNormal,
    Normal,
    Uniform,
)
from gradcheck.ref.distributions.discrete import (
    Bernoulli,
    Categorical,
    Independent,
    OneHotCategorical,
)
from gradcheck.ref.distributions.distribution import Distribution
from gradcheck.ref.distributions.kl import kl_divergence, register_kl

# torch's module layout: torch.distributions.normal.Normal and friends
normal = categorical = bernoulli = uniform = beta = multivariate_normal = continuous
categorical = bernoulli = one_hot_categorical = independent = discrete

__all__ = ["Bernoulli", "Beta", "Categorical", "Distribution", "Exponential", "Gamma",
           "Independent", "Laplace", "MultivariateNormal", "Normal", "OneHotCategorical",
           "Uniform", "kl_divergence", "register_kl"]
