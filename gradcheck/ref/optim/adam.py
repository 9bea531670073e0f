"""Adam and AdamW: bias-corrected first and second moment estimates."""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

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
        """Perform one update; a parameter whose `.grad` is None is skipped. The update works
        on the arrays directly (no graph is recorded under no_grad anyway): one numpy call per
        term instead of one dispatched Tensor op."""
        return self._step_each(closure, self._update)

    def _update(self, p: Any, group: dict[str, Any]) -> None:
        state = self._init_state(p, group)
        beta1, beta2 = group["betas"]
        adam_update(p, p.grad, state["exp_avg"], state["exp_avg_sq"],
                    state.get("max_exp_avg_sq"), state["step"], amsgrad=group["amsgrad"],
                    beta1=beta1, beta2=beta2, lr=group["lr"],
                    weight_decay=group["weight_decay"], eps=group["eps"],
                    maximize=group["maximize"],
                    decoupled_weight_decay=group["decoupled_weight_decay"])


def adam_update(p: Any, grad_tensor: Any, exp_avg: Any, exp_avg_sq: Any, max_exp_avg_sq: Any,
                step_tensor: Any, *, amsgrad: bool, beta1: float, beta2: float, lr: float,
                weight_decay: float, eps: float, maximize: bool,
                decoupled_weight_decay: bool) -> None:
    """One Adam(W) step of one parameter, in place on its arrays (the step count included)."""
    step_tensor._data += 1  # a float32 scalar, as torch keeps it
    step_tensor._vc[0] += 1
    step = float(step_tensor._data)
    data, grad = p._data, grad_tensor._data
    if maximize:
        grad = -grad
    if weight_decay != 0:
        if decoupled_weight_decay:
            data *= 1 - lr * weight_decay
        else:
            grad = grad + p._data * weight_decay
    # NOTE: torch's CPU kernels, operation for operation: lerp's two branches, addcmul as
    # self + (value * t1) * t2, addcdiv as self + value * (t1 / t2).
    _lerp_(exp_avg._data, grad, 1 - beta1)
    exp_avg_sq._data *= beta2
    exp_avg_sq._data += (1 - beta2) * grad * grad
    step_size = lr / (1 - beta1**step)
    bias_correction2_sqrt = math.sqrt(1 - beta2**step)
    second = exp_avg_sq._data
    if amsgrad:
        np.maximum(max_exp_avg_sq._data, second, out=max_exp_avg_sq._data)
        max_exp_avg_sq._vc[0] += 1
        second = max_exp_avg_sq._data
    denom = np.sqrt(second) / bias_correction2_sqrt + eps
    data += -step_size * (exp_avg._data / denom)
    for tensor in (p, exp_avg, exp_avg_sq):
        tensor._vc[0] += 1


def _lerp_(start: np.ndarray, end: np.ndarray, weight: float) -> None:
    """start += weight * (end - start), in torch's two forms (exact at weight 0 and 1)."""
    if abs(weight) < 0.5:
        start += weight * (end - start)
    else:
        start[...] = end - (end - start) * (1 - weight)


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
