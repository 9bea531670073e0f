"""More activations: GELU, SiLU, ELU, SELU, Softplus, Mish, Hardtanh, ReLU6, Hardswish,
Hardsigmoid, LogSigmoid, Softsign, PReLU, as functions and as modules.

GELU is a row of the derivatives table (its exact form needs ``erf``); the others are
compositions whose gradient at each kink is the one torch picks, e.g. ``hardtanh`` passes no
gradient at exactly ``min_val`` or ``max_val``.

Example:
    >>> import gradcheck.ref as torch
    >>> [round(v, 4) for v in gelu(torch.tensor([-1.0, 0.0, 1.0])).tolist()]
    [-0.1587, 0.0, 0.8413]
"""
from __future__ import annotations

from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.derivatives import TABLE
from gradcheck.ref.dispatch import apply
from gradcheck.ref.nn.module import Module
from gradcheck.ref.nn.parameter import Parameter

Tensor = Any


def _inplace(input: Tensor, out: Tensor, inplace: bool) -> Tensor:
    return input.copy_(out) if inplace else out


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x) (``approximate="tanh"``: torch's tanh formula)."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return apply(TABLE["gelu"], input, approximate=approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x), also called swish."""
    return _inplace(input, input * input.sigmoid(), inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    return _inplace(input, input * softplus(input).tanh(), inplace)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    negative = (input.clamp(max=0)).expm1() * alpha
    return _inplace(input, torch.where(input > 0, input, negative), inplace)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    negative = (input.clamp(max=0) / alpha).expm1() * alpha
    return _inplace(input, torch.where(input > 0, input, negative), inplace)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """x / max(||x||_p, eps) along ``dim``."""
    return input / input.norm(p, dim, keepdim=True).clamp(min=eps)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(x, alpha) with the self-normalising constants."""
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return _inplace(input, elu(input, alpha) * scale, inplace)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, linear above ``threshold`` for stability."""
    scaled = input * beta
    # NOTE: the clamp keeps exp finite in the branch `where` discards (0 * inf would be nan)
    smooth = scaled.clamp(max=threshold).exp().log1p() / beta
    return torch.where(scaled > threshold, input, smooth)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """Clamp to [min_val, max_val]; no gradient at (or beyond) the limits, as in torch."""
    inside = ((input > min_val) & (input < max_val)).to(input.dtype)
    out = input * inside + (input <= min_val).to(input.dtype) * min_val \
        + (input >= max_val).to(input.dtype) * max_val
    return _inplace(input, out, inplace)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6 with torch's zero gradient outside (-3, 3)."""
    inside = ((input > -3) & (input < 3)).to(input.dtype)
    out = (input / 6 + 0.5) * inside + (input >= 3).to(input.dtype)
    return _inplace(input, out, inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6 (torch's gradient: (2x + 3) / 6 inside [-3, 3])."""
    inside = ((input >= -3) & (input <= 3)).to(input.dtype)
    out = input * (input + 3) / 6 * inside + input * (input > 3).to(input.dtype)
    return _inplace(input, out, inplace)


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)), stable for large |x|."""
    m = (-input.detach()).clamp(min=0)
    return -(m + ((-m).exp() + (-input - m).exp()).log())


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return input / (1 + input.abs())


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x for x > 0, weight * x otherwise (one weight, or one per channel)."""
    w = weight.reshape((1, -1) + (1,) * (input.dim() - 2)) if input.dim() > 1 and \
        weight.numel() > 1 else weight
    return torch.where(input > 0, input, input * w)


def _module(name: str, fn, fields: dict, doc: str):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        Module.__init__(self)
        values = dict(fields)
        values.update(zip(fields, args))
        values.update(kwargs)
        for key, value in values.items():
            setattr(self, key, value)

    def forward(self, input: Tensor) -> Tensor:
        return fn(input, *[getattr(self, key) for key in fields])

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={getattr(self, k)}" for k in fields
                         if k != "inplace" or getattr(self, k))

    return type(name, (Module,), {"__init__": __init__, "forward": forward,
                                  "extra_repr": extra_repr, "__doc__": doc})


GELU = _module("GELU", gelu, {"approximate": "none"}, "Gaussian error linear unit.")
SiLU = _module("SiLU", silu, {"inplace": False}, "x * sigmoid(x).")
Mish = _module("Mish", mish, {"inplace": False}, "x * tanh(softplus(x)).")
ELU = _module("ELU", elu, {"alpha": 1.0, "inplace": False}, "Exponential linear unit.")
CELU = _module("CELU", celu, {"alpha": 1.0, "inplace": False}, "Continuously differentiable ELU.")
SELU = _module("SELU", selu, {"inplace": False}, "Scaled ELU.")
Softplus = _module("Softplus", softplus, {"beta": 1.0, "threshold": 20.0}, "Smooth ReLU.")
Hardtanh = _module("Hardtanh", hardtanh, {"min_val": -1.0, "max_val": 1.0, "inplace": False},
                   "Clamp with zero gradient outside the range.")
ReLU6 = _module("ReLU6", relu6, {"inplace": False}, "min(max(x, 0), 6).")
Hardsigmoid = _module("Hardsigmoid", hardsigmoid, {"inplace": False}, "Piecewise sigmoid.")
Hardswish = _module("Hardswish", hardswish, {"inplace": False}, "x * hardsigmoid(x).")
LogSigmoid = _module("LogSigmoid", logsigmoid, {}, "log(sigmoid(x)).")
Softsign = _module("Softsign", softsign, {}, "x / (1 + |x|).")


class PReLU(Module):
    """Leaky ReLU with a learned slope (``num_parameters`` slopes, initialised to ``init``)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.weight = Parameter(torch.full((num_parameters,), init, dtype=dtype))

    def forward(self, input: Tensor) -> Tensor:
        return prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"

