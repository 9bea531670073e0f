"""RMSprop: divide the gradient by a running root-mean-square of past gradients."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.optim.optimizer import Optimizer, check_non_negative, implementation_flags


class RMSprop(Optimizer):
    """torch.optim.RMSprop with optional momentum and centering.

    Example:
        >>> import gradcheck.ref as torch
        >>> w = torch.nn.Parameter(torch.tensor([1.0]))
        >>> opt = torch.optim.RMSprop([w], lr=0.01)
        >>> (w * w).sum().backward(); _ = opt.step()
        >>> w.item() < 1.0
        True
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0.0, momentum: float = 0.0,
                 centered: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_non_negative(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay,
                           alpha=alpha)
        defaults = dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                        momentum=momentum, centered=centered, maximize=maximize,
                        **implementation_flags("RMSprop", foreach=foreach,
                                               capturable=capturable,
                                               differentiable=differentiable))
        super().__init__(params, defaults)

    def _init_state(self, p: Any, group: dict[str, Any]) -> dict[str, Any]:
        state = self.state[p]
        if not state:
            state["step"] = torch.tensor(0.0, dtype=torch.float32)
            state["square_avg"] = torch.zeros_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = torch.zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = torch.zeros_like(p)
        return state

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one update; a parameter whose `.grad` is None is skipped."""
        return self._step_each(closure, self._update)

    def _update(self, p: Any, group: dict[str, Any]) -> None:
        state = self._init_state(p, group)
        alpha = group["alpha"]
        grad = -p.grad if group["maximize"] else p.grad
        state["step"].add_(1)
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        square_avg = state["square_avg"]
        square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if group["centered"]:
            grad_avg = state["grad_avg"]
            grad_avg.lerp_(grad, 1 - alpha)
            # NOTE: the centered variance E[g^2] - E[g]^2 can round below zero only if
            # alpha is misused; torch takes sqrt as is, and so do we.
            avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
        else:
            avg = square_avg.sqrt()
        avg = avg.add_(group["eps"])
        if group["momentum"] > 0:
            buf = state["momentum_buffer"]
            buf.mul_(group["momentum"]).addcdiv_(grad, avg)
            p.add_(buf, alpha=-group["lr"])
        else:
            p.addcdiv_(grad, avg, value=-group["lr"])
