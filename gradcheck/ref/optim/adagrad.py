"""Adagrad: per-coordinate learning rates from the running sum of squared gradients."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.optim.optimizer import Optimizer, check_non_negative, implementation_flags


class Adagrad(Optimizer):
    """torch.optim.Adagrad with learning-rate decay and an initial accumulator.

    Example:
        >>> import gradcheck.ref as torch
        >>> w = torch.nn.Parameter(torch.tensor([1.0]))
        >>> opt = torch.optim.Adagrad([w], lr=0.1)
        >>> (w * w).sum().backward(); _ = opt.step()
        >>> round(w.item(), 4)
        0.9
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        check_non_negative(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                           initial_accumulator_value=initial_accumulator_value)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, maximize=maximize,
                        **implementation_flags("Adagrad", foreach=foreach,
                                               differentiable=differentiable, fused=fused))
        super().__init__(params, defaults)
        # Unlike the other optimizers, torch creates Adagrad's state eagerly.
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["step"] = torch.tensor(0.0, dtype=torch.float32)
                self.state[p]["sum"] = torch.full_like(p, initial_accumulator_value)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one update; a parameter whose `.grad` is None is skipped."""
        return self._step_each(closure, self._update)

    def _update(self, p: Any, group: dict[str, Any]) -> None:
        state = self.state[p]
        grad = -p.grad if group["maximize"] else p.grad
        state["step"].add_(1)
        step = state["step"].item()
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        state["sum"].addcmul_(grad, grad, value=1)
        std = state["sum"].sqrt().add_(group["eps"])
        p.addcdiv_(grad, std, value=-clr)
