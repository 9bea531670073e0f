"""Rprop: a per-element step size that grows while the gradient keeps its sign and shrinks
when it flips; only the gradient's sign moves the weight."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from gradcheck import ref as torch
from gradcheck.ref.optim.optimizer import Optimizer, check_non_negative, implementation_flags


class Rprop(Optimizer):
    """torch.optim.Rprop (resilient backpropagation).

    Example:
        >>> import gradcheck.ref as torch
        >>> w = torch.nn.Parameter(torch.tensor([1.0, -1.0]))
        >>> opt = torch.optim.Rprop([w], lr=0.1)
        >>> (w * w).sum().backward(); _ = opt.step(); w
        Parameter containing:
        tensor([ 0.9000, -0.9000], requires_grad=True)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2,
                 etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_non_negative(lr=lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, maximize=maximize,
                        **implementation_flags("Rprop", foreach=foreach, capturable=capturable,
                                               differentiable=differentiable))
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        return self._step_each(closure, self._update)

    def _update(self, p: Any, group: dict[str, Any]) -> None:
        state = self.state[p]
        if not state:
            state["step"] = torch.tensor(0.0, dtype=torch.float32)
            state["prev"] = torch.zeros_like(p)
            state["step_size"] = torch.full_like(p, group["lr"])
        etaminus, etaplus = group["etas"]
        low, high = group["step_sizes"]
        state["step"]._data += 1
        grad = -p.grad._data if group["maximize"] else p.grad._data.copy()
        prev, step_size = state["prev"]._data, state["step_size"]._data
        agreement = np.sign(grad * prev)
        factor = np.where(agreement > 0, etaplus, np.where(agreement < 0, etaminus, 1.0))
        np.clip(step_size * factor.astype(step_size.dtype), low, high, out=step_size)
        # NOTE: where the sign flipped the step is skipped and the gradient forgotten, so the
        # next step neither grows nor shrinks there (torch compares with etaminus itself).
        grad[factor == etaminus] = 0
        p._data -= np.sign(grad) * step_size
        prev[...] = grad
        for tensor in (p, state["step"], state["prev"], state["step_size"]):
            tensor._vc[0] += 1
