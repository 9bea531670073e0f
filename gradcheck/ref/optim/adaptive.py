"""Adadelta, NAdam and RAdam, each a transcription of torch's single-tensor update.

Example:
    >>> import gradcheck.ref as torch
    >>> w = torch.nn.Parameter(torch.tensor([1.0]))
    >>> opt = torch.optim.RAdam([w], lr=0.1)
    >>> (w * w).sum().backward(); _ = opt.step()
    >>> round(w.item(), 4)   # rho_t <= 5 at first: an SGD-with-momentum step
    0.8
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.optim.optimizer import Optimizer, check_non_negative, implementation_flags


def _check_betas(betas: tuple[float, float]) -> None:
    for i, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}; use [0, 1)")


class _Adaptive(Optimizer):
    _moments: tuple = ()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one update; a parameter whose `.grad` is None is skipped."""
        return self._step_each(closure, self._update)

    def _state(self, p: Any) -> dict[str, Any]:
        state = self.state[p]
        if not state:
            # NOTE: torch keeps `step` (and NAdam's mu_product) as float32 scalar tensors.
            state["step"] = torch.tensor(0.0, dtype=torch.float32)
            if type(self).__name__ == "NAdam":
                state["mu_product"] = torch.tensor(1.0, dtype=torch.float32)
            for name in self._moments:
                state[name] = torch.zeros_like(p)
        return state

    def _grad(self, p: Any, group: dict[str, Any]) -> Any:
        """The gradient after maximize and (coupled) weight decay; decoupled decay edits p."""
        grad = -p.grad if group["maximize"] else p.grad
        wd = group["weight_decay"]
        if wd != 0:
            if group.get("decoupled_weight_decay"):
                p.mul_(1 - group["lr"] * wd)
            else:
                grad = grad.add(p, alpha=wd)
        return grad


class Adadelta(_Adaptive):
    """torch.optim.Adadelta: steps scaled by the ratio of running RMS of updates and grads."""

    _moments = ("square_avg", "acc_delta")

    def __init__(self, params: Iterable[Any], lr: float = 1.0, rho: float = 0.9,
                 eps: float = 1e-6, weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_non_negative(lr=lr, eps=eps, weight_decay=weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        **implementation_flags("Adadelta", capturable=capturable,
                                               foreach=foreach, differentiable=differentiable))
        super().__init__(params, defaults)

    def _update(self, p: Any, group: dict[str, Any]) -> None:
        state = self._state(p)
        rho, eps = group["rho"], group["eps"]
        state["step"].add_(1)
        grad = self._grad(p, group)
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
        std = square_avg.add(eps).sqrt_()
        delta = acc_delta.add(eps).sqrt_().div_(std).mul_(grad)
        acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        p.add_(delta, alpha=-group["lr"])


class NAdam(_Adaptive):
    """torch.optim.NAdam: Adam with Nesterov momentum and a momentum-decay schedule."""

    _moments = ("exp_avg", "exp_avg_sq")

    def __init__(self, params: Iterable[Any], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_non_negative(lr=lr, eps=eps, weight_decay=weight_decay,
                           momentum_decay=momentum_decay)
        _check_betas(betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        **implementation_flags("NAdam", foreach=foreach, capturable=capturable,
                                               differentiable=differentiable))
        super().__init__(params, defaults)

    def _update(self, p: Any, group: dict[str, Any]) -> None:
        state = self._state(p)
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        state["step"].add_(1)
        step = state["step"].item()
        bias_correction2 = 1 - beta2 ** step
        grad = self._grad(p, group)
        decay = group["momentum_decay"]
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * decay)))
        state["mu_product"].mul_(mu)  # in float32, as torch keeps it
        mu_product = state["mu_product"].item()
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = exp_avg_sq.div(bias_correction2).sqrt().add_(eps)
        p.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
        p.addcdiv_(exp_avg, denom, value=-lr * mu_next / (1.0 - mu_product * mu_next))


class RAdam(_Adaptive):
    """torch.optim.RAdam: Adam whose adaptive step is switched on once the variance of the
    adaptive learning rate is tractable (rho_t > 5), with the rectification factor."""

    _moments = ("exp_avg", "exp_avg_sq")

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_non_negative(lr=lr, eps=eps, weight_decay=weight_decay)
        _check_betas(betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, decoupled_weight_decay=decoupled_weight_decay,
                        **implementation_flags("RAdam", foreach=foreach, capturable=capturable,
                                               differentiable=differentiable))
        super().__init__(params, defaults)

    def _update(self, p: Any, group: dict[str, Any]) -> None:
        state = self._state(p)
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        state["step"].add_(1)
        step = state["step"].item()
        grad = self._grad(p, group)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        corrected = exp_avg / bias_correction1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        if rho_t > 5.0:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                             / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            adaptive = (bias_correction2 ** 0.5) / exp_avg_sq.sqrt().add_(eps)
            p.add_(corrected * lr * adaptive * rect, alpha=-1.0)
        else:
            p.add_(corrected * lr, alpha=-1.0)
