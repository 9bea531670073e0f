"""Adamax and ASGD, transcribed from torch's single-tensor updates, and SparseAdam (which,
as in torch, refuses the dense gradients every engine tensor has).

Example:
    >>> import gradcheck.ref as torch
    >>> w = torch.nn.Parameter(torch.tensor([1.0]))
    >>> opt = Adamax([w], lr=0.1)
    >>> (w * w).sum().backward(); _ = opt.step()
    >>> round(w.item(), 4)
    0.9
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.optim.optimizer import Optimizer, check_non_negative, implementation_flags


class Adamax(Optimizer):
    """Adam with the infinity norm: u = max(beta2 u, |g| + eps)."""

    def __init__(self, params: Iterable[Any], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        check_non_negative(lr=lr, eps=eps, weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, **implementation_flags(
                            "Adamax", foreach=foreach, differentiable=differentiable,
                            capturable=capturable))
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        return self._step_each(closure, self._update)

    def _update(self, p: Any, group: dict[str, Any]) -> None:
        state = self.state[p]
        if not state:
            state["step"] = torch.tensor(0.0, dtype=torch.float32)
            state["exp_avg"] = torch.zeros_like(p)
            state["exp_inf"] = torch.zeros_like(p)
        beta1, beta2 = group["betas"]
        grad = -p.grad if group["maximize"] else p.grad
        state["step"] += 1
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        state["exp_avg"].lerp_(grad, 1 - beta1)
        exp_inf = state["exp_inf"]
        exp_inf.copy_(torch.maximum(exp_inf.mul_(beta2), grad.abs() + group["eps"]))
        clr = group["lr"] / (1 - beta1 ** state["step"].item())
        p.addcdiv_(state["exp_avg"], exp_inf, value=-clr)


class ASGD(Optimizer):
    """Averaged SGD: decayed steps of size eta, and a running average ``ax`` of the
    parameters from step ``t0`` on."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_non_negative(lr=lr, weight_decay=weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        maximize=maximize, **implementation_flags(
                            "ASGD", foreach=foreach, differentiable=differentiable,
                            capturable=capturable))
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        return self._step_each(closure, self._update)

    def _update(self, p: Any, group: dict[str, Any]) -> None:
        state = self.state[p]
        if not state:
            state["step"] = torch.tensor(0.0, dtype=torch.float32)
            state["eta"] = torch.tensor(float(group["lr"]), dtype=torch.float32)
            state["mu"] = torch.tensor(1.0, dtype=torch.float32)
            state["ax"] = torch.zeros_like(p)
        grad = -p.grad if group["maximize"] else p.grad
        state["step"] += 1
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        eta = state["eta"].item()
        p.mul_(1 - group["lambd"] * eta)
        p.add_(grad, alpha=-eta)
        if state["mu"].item() != 1:
            state["ax"].add_(p.sub(state["ax"]).mul_(state["mu"]))
        else:
            state["ax"].copy_(p)
        step = state["step"].item()
        lr, lambd = group["lr"], group["lambd"]
        state["eta"].copy_(torch.tensor(lr / ((1 + lambd * lr * step) ** group["alpha"])))
        state["mu"].copy_(torch.tensor(1 / max(1, step - group["t0"])))


class SparseAdam(Optimizer):
    """Adam for sparse gradients; the engine has only dense ones, which torch refuses too."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        check_non_negative(lr=lr, eps=eps)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = self._evaluate(closure)
        for group in self.param_groups:
            if any(p.grad is not None for p in group["params"]):
                raise RuntimeError("SparseAdam does not support dense gradients, please "
                                   "consider Adam instead")
        return loss
