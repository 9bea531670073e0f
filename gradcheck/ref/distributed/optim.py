"""``torch.distributed.optim`` with one rank (or one rpc worker):

- ``ZeroRedundancyOptimizer`` shards optimizer state across ranks; rank 0 of 1 owns every
  parameter, so it is its local optimizer, with torch's rule that the global ``state_dict``
  needs ``consolidate_state_dict`` first.
- ``DistributedOptimizer`` steps the parameters behind rpc ``RRef``s with the gradients of a
  ``distributed.autograd`` context (their ``.grad`` is never used).
- ``PostLocalSGDOptimizer`` steps its optimizer, then lets a model averager average the
  parameters over the ranks (one rank: they stay as they are).
- ``_apply_optimizer_in_backward`` steps each parameter as soon as its gradient is
  accumulated, with one optimizer per parameter.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from gradcheck.ref.optim.optimizer import Optimizer

NOT_CONSOLIDATED = ("Optimizer state has not been consolidated on this rank. Please call "
                    "`consolidate_state_dict(to=0)` on all ranks beforehand if you meant to "
                    "save the global state.")


class ZeroRedundancyOptimizer(Optimizer):
    """ZeRO stage 1 over the default group (one rank: nothing to shard)."""

    def __init__(self, params: Iterable[Any], optimizer_class: type, process_group: Any = None,
                 parameters_as_bucket_view: bool = False, overlap_with_ddp: bool = False,
                 **defaults: Any) -> None:
        from gradcheck.ref.distributed import _require_group

        _require_group()
        self.optim = optimizer_class(params, **defaults)
        self._optim_constructor = optimizer_class
        self._consolidated: dict | None = None
        self.defaults, self.param_groups, self.state = defaults, self.optim.param_groups, \
            self.optim.state
        self._optimizer_step_pre_hooks, self._optimizer_step_post_hooks = {}, {}
        self._opt_called = False

    def step(self, closure: Callable[[], Any] | None = None, **kwargs: Any) -> Any:
        return self.optim.step(closure, **kwargs)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        self.optim.add_param_group(param_group)

    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gather every rank's optimizer state on rank ``to`` (here: copy the one state)."""
        self._consolidated = self.optim.state_dict()

    def state_dict(self) -> dict:
        if self._consolidated is None:
            raise RuntimeError(NOT_CONSOLIDATED)
        return self._consolidated

    def load_state_dict(self, state_dict: dict) -> None:
        self.optim.load_state_dict(state_dict)
        # torch's Optimizer.__setstate__, run by every load, adds this default
        self.defaults.setdefault("differentiable", False)


class DistributedOptimizer:
    """One optimizer per worker over the parameters its RRefs own; ``step(context_id)``
    uses the gradients ``distributed.autograd`` stored in that context."""

    def __init__(self, optimizer_class: type, params_rref: list, *args: Any,
                 **kwargs: Any) -> None:
        self.params = [rref.local_value() for rref in params_rref]
        self.optim = optimizer_class(self.params, *args, **kwargs)

    def step(self, context_id: int) -> None:
        from gradcheck.ref.distributed import autograd as dist_autograd

        grads = dist_autograd.get_gradients(context_id)
        saved = [p.grad for p in self.params]
        try:
            for p in self.params:
                p.grad = grads.get(p)
            self.optim.step()
        finally:
            for p, grad in zip(self.params, saved):
                p.grad = grad


class PostLocalSGDOptimizer(Optimizer):
    """``optim.step()`` then ``averager.average_parameters`` on its parameter groups."""

    def __init__(self, optim: Optimizer, averager: Any) -> None:
        self.optim, self.averager = optim, averager
        self.defaults, self.param_groups, self.state = optim.defaults, optim.param_groups, \
            optim.state
        self._optimizer_step_pre_hooks, self._optimizer_step_post_hooks = {}, {}
        self._opt_called = False

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = self.optim.step(closure)
        self.averager.average_parameters(params=self.param_groups)
        return loss

    def state_dict(self) -> dict:
        state = self.optim.state_dict()
        state["step"] = self.averager.step
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        self.averager.step = state_dict.pop("step", 0)
        self.optim.load_state_dict(state_dict)


def _apply_optimizer_in_backward(optimizer_class: type, params: Iterable[Any],
                                 optimizer_kwargs: dict[str, Any],
                                 register_hook: bool = True) -> None:
    """Give each parameter its own optimizer, stepped from a hook right after the parameter's
    gradient is accumulated (torch's fused backward-and-step)."""
    for param in params:
        optimizer = optimizer_class([param], **optimizer_kwargs)
        param._in_backward_optimizers = getattr(param, "_in_backward_optimizers", []) + [
            optimizer]
        param._optimizer_classes = getattr(param, "_optimizer_classes", []) + [optimizer_class]
        param._optimizer_kwargs = getattr(param, "_optimizer_kwargs", []) + [optimizer_kwargs]
        if register_hook:
            param.register_post_accumulate_grad_hook(_step_in_backward)


def _step_in_backward(param: Any) -> None:
    for optimizer in param._in_backward_optimizers:
        optimizer.step()
    param.grad = None
