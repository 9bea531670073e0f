"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from gradcheck.ref.optim.optimizer import Optimizer, check_non_negative, implementation_flags
from gradcheck.ref.tensors import _make


class SGD(Optimizer):
    """torch.optim.SGD: `p -= lr * g` where g folds in weight decay and momentum.

    Example:
        >>> import gradcheck.ref as torch
        >>> w = torch.nn.Parameter(torch.tensor([1.0]))
        >>> opt = torch.optim.SGD([w], lr=0.5)
        >>> (2 * w).sum().backward(); _ = opt.step()
        >>> w.tolist()
        [0.0]
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False,
                 *, maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        check_non_negative(lr=lr, momentum=momentum, weight_decay=weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        **implementation_flags("SGD", foreach=foreach,
                                               differentiable=differentiable, fused=fused))
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one update; a parameter whose `.grad` is None is skipped."""
        return self._step_each(closure, self._update)

    def _update(self, p: Any, group: dict[str, Any]) -> None:
        # On the arrays directly (no graph under no_grad): one numpy call per term.
        grad = p.grad._data
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"] != 0:
            grad = grad + group["weight_decay"] * p._data
        momentum = group["momentum"]
        if momentum != 0:
            state = self.state[p]
            buf = state.get("momentum_buffer")
            if buf is None:
                # NOTE: the first step copies the gradient without dampening, as torch does.
                buf = state["momentum_buffer"] = _make(grad.copy())
            else:
                buf._data *= momentum
                buf._data += (1 - group["dampening"]) * grad
                buf._vc[0] += 1
            grad = grad + momentum * buf._data if group["nesterov"] else buf._data
        p._data += -group["lr"] * grad
        p._vc[0] += 1
