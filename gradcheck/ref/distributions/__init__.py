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
from gradcheck.ref.distributions import transformed  # noqa: E402
from gradcheck.ref.distributions.transformed import (  # noqa: E402
    AffineTransform,
    Cauchy,
    ExpTransform,
    Geometric,
    Gumbel,
    LogitRelaxedBernoulli,
    RelaxedBernoulli,
    SigmoidTransform,
    TanhTransform,
    Transform,
    TransformedDistribution,
)

# torch's module layout: torch.distributions.normal.Normal and friends
normal = categorical = bernoulli = uniform = beta = multivariate_normal = continuous
categorical = bernoulli = one_hot_categorical = independent = discrete
laplace = gamma = exponential = continuous
cauchy = gumbel = geometric = relaxed_bernoulli = transformed_distribution = transformed
transforms = transformed


def _register_layout() -> None:
    """Make ``import torch.distributions.normal`` (and the rest) find the alias modules."""
    import sys

    for name in ("normal", "categorical", "bernoulli", "uniform", "beta", "multivariate_normal",
                 "one_hot_categorical", "independent", "laplace", "gamma", "exponential",
                 "cauchy", "gumbel", "geometric", "relaxed_bernoulli",
                 "transformed_distribution", "transforms"):
        sys.modules.setdefault(f"{__name__}.{name}", globals()[name])


_register_layout()

__all__ = ["AffineTransform", "Bernoulli", "Beta", "Categorical", "Cauchy", "Distribution",
           "ExpTransform", "Exponential", "Gamma", "Geometric", "Gumbel", "Independent",
           "Laplace", "LogitRelaxedBernoulli", "MultivariateNormal", "Normal",
           "OneHotCategorical", "RelaxedBernoulli", "SigmoidTransform", "TanhTransform",
           "Transform", "TransformedDistribution", "Uniform", "kl_divergence", "register_kl"]
