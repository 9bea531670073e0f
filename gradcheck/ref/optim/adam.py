"""Adam and AdamW: bias-corrected first and second moment estimates."""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.optim.optimizer import Optimizer, check_non_negative, implementation_flags


class Adam(Optimizer):
    """torch.optim.Adam; `decoupled_weight_decay=True` gives AdamW.

    Example:
        >>> import gradcheck.ref as torch
        >>> w = torch.nn.Parameter(torch.tensor([1.0]))
        >>> opt = torch.optim.Adam([w], lr=0.1)
        >>> (w * w).sum().backward(); _ = opt.step()
        >>> round(w.item(), 4)
        0.9
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        check_non_negative(lr=lr, eps=eps)
        for i, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta}; use [0, 1)")
        check_non_negative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize,
                        decoupled_weight_decay=decoupled_weight_decay,
                        **implementation_flags(type(self).__name__, foreach=foreach,
                                               capturable=capturable,
                                               differentiable=differentiable, fused=fused))
        super().__init__(params, defaults)

    def _init_state(self, p: Any, group: dict[str, Any]) -> dict[str, Any]:
        state = self.state[p]
        if not state:
            # NOTE: torch keeps `step` as a float32 scalar tensor; we mirror it for state_dict.
            state["step"] = torch.tensor(0.0, dtype=torch.float32)
            state["exp_avg"] = torch.zeros_like(p)
            state["exp_avg_sq"] = torch.zeros_like(p)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = torch.zeros_like(p)
        return state

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one update; a parameter whose `.grad` is None is skipped."""
        return self._step_each(closure, self._update)

    def _update(self, p: Any, group: dict[str, Any]) -> None:
        state = self._init_state(p, group)
        lr, (beta1, beta2), wd = group["lr"], group["betas"], group["weight_decay"]
        grad = -p.grad if group["maximize"] else p.grad
        state["step"].add_(1)
        step = state["step"].item()
        if wd != 0:
            if group["decoupled_weight_decay"]:
                p.mul_(1 - lr * wd)
            else:
                grad = grad.add(p, alpha=wd)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step_size = lr / (1 - beta1**step)
        bias_correction2_sqrt = math.sqrt(1 - beta2**step)
        if group["amsgrad"]:
            state["max_exp_avg_sq"].copy_(torch.maximum(state["max_exp_avg_sq"], exp_avg_sq))
            exp_avg_sq = state["max_exp_avg_sq"]
        denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(group["eps"])
        p.addcdiv_(exp_avg, denom, value=-step_size)


class AdamW(Adam):
    """torch.optim.AdamW: Adam with weight decay applied to the weights, not the gradient.

    Example:
        >>> import gradcheck.ref as torch
        >>> w = torch.nn.Parameter(torch.tensor([1.0]))
        >>> torch.optim.AdamW([w]).defaults["weight_decay"]
        0.01
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         foreach=foreach, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
