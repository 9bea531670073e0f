"""`Optimizer`: parameter groups, per-parameter state, step hooks and checkpoints.

Subclasses implement `step` as a plain loop over `param_groups`, in the style of torch's
single-tensor ("for-loop") implementations, so each update formula can be read in one screen.
"""
from __future__ import annotations

import copy
import functools
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from gradcheck import ref as torch
from gradcheck.ref import fperrors
from gradcheck.ref.nn.parameter import reset_grads
from gradcheck.ref.utils.hooks import RemovableHandle, add_hook

StepHook = Callable[["Optimizer", tuple, dict], Any]


class _Required:
    """Sentinel for a hyper-parameter that has no default (torch's `required`)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()


def _hooked_step(step: Callable) -> Callable:
    """Wrap a subclass's `step` so step hooks run around it, as torch does.

    As in torch, the hooks' `args` include the optimizer itself as `args[0]`.
    """

    @functools.wraps(step)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        self = args[0]
        for hook in list(self._optimizer_step_pre_hooks.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        f"optimizer step pre-hook {hook!r} returned {result!r}; it must return "
                        "None or a new (args, kwargs) tuple"
                    )
                args, kwargs = result
        out = step(*args, **kwargs)
        self._opt_called = True  # lets LR schedulers warn when stepped before the optimizer
        for hook in list(self._optimizer_step_post_hooks.values()):
            hook(self, args, kwargs)
        return out

    wrapper._hooked = True  # type: ignore[attr-defined]
    return wrapper


class Optimizer:
    """Base class: holds `param_groups`, `state` and `defaults`; subclasses implement `step`.

    Example:
        >>> import gradcheck.ref as torch
        >>> w = torch.nn.Parameter(torch.ones(2))
        >>> opt = torch.optim.SGD([w], lr=0.1)
        >>> (w * w).sum().backward(); opt.step(); opt.zero_grad()
        >>> w.grad is None
        True
    """

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        self._optimizer_step_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict = OrderedDict()
        self._opt_called = False
        if isinstance(params, torch.Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {type(params).__name__}; wrap it in a list: [param]"
            )
        param_groups = list(params)
        if not param_groups:
            raise ValueError("optimizer got an empty parameter list; pass model.parameters()")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__ and not getattr(cls.__dict__["step"], "_hooked", False):
            cls.step = _hooked_step(cls.__dict__["step"])

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {key}: {group[key]}" for key in sorted(group) if key != "params"]
        return "\n".join(lines) + "\n)"

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyper-parameters (missing ones use defaults)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        params = [params] if isinstance(params, torch.Tensor) else list(params)
        for p in params:
            if not isinstance(p, torch.Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is "
                                f"{type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor; optimize the leaf it was "
                                 "computed from, or call .detach().requires_grad_() on it")
        group = dict(param_group, params=params)
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            group.setdefault(name, default)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset gradients: to None by default, or to zero tensors with `set_to_none=False`."""
        reset_grads((p for group in self.param_groups for p in group["params"]), set_to_none)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update the parameters once; subclasses override this."""
        raise NotImplementedError

    def _step_each(self, closure: Callable[[], Any] | None,
                   update: Callable[[Any, dict[str, Any]], None]) -> Any:
        """Run the closure, then `update(p, group)` under no_grad for each param with a grad.

        The per-parameter loop that torch's for-loop optimizers share; each subclass keeps its
        own `step` (so step hooks wrap it) and its update formula in its own `_update`.
        """
        loss = self._evaluate(closure)
        quiet = fperrors.ignore()  # updates on arrays: torch is silent about inf/nan too
        try:
            with torch.no_grad():
                for group in self.param_groups:
                    for p in group["params"]:
                        if p.grad is None:
                            continue
                        if p._data.dtype.kind == "c":
                            self._update_as_real(update, p, group)
                        else:
                            update(p, group)
        finally:
            fperrors.restore(quiet)
        return loss

    def _update_as_real(self, update: Callable[[Any, dict[str, Any]], None], p: Any,
                        group: dict[str, Any]) -> None:
        """torch updates a complex parameter as the (real, imaginary) pairs of view_as_real:
        Adam's second moment is per part, not grad * grad. The parameter, its grad and its
        complex state read as real views of the same storage for the length of the update."""
        from gradcheck.ref.complex_numbers import complex_of_pairs, real_pairs

        state = self.state.get(p, {})
        tensors = [p, p.grad] + [v for v in state.values()
                                 if isinstance(v, torch.Tensor) and v._data.dtype.kind == "c"]
        swapped = [(t, t._data) for t in tensors]
        for t, data in swapped:
            t._data = real_pairs(data)
        try:
            update(p, group)
        finally:
            for t, data in swapped:
                t._data = data
        pairs_shape = p._data.shape + (2,)
        for value in self.state.get(p, {}).values():  # state made from the views: complex
            if isinstance(value, torch.Tensor) and value._data.shape == pairs_shape and \
                    value._data.dtype.kind == "f":
                value._data = complex_of_pairs(value._data)

    @staticmethod
    def _evaluate(closure: Callable[[], Any] | None) -> Any:
        """Run the closure with grad mode on (steps themselves run under no_grad)."""
        if closure is None:
            return None
        with torch.enable_grad():
            return closure()

    def register_step_pre_hook(self, hook: StepHook) -> RemovableHandle:
        """Call `hook(optimizer, args, kwargs)` before each `step`; it may return new
        `(args, kwargs)`."""
        return add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: StepHook) -> RemovableHandle:
        """Call `hook(optimizer, args, kwargs)` after each `step`."""
        return add_hook(self._optimizer_step_post_hooks, hook)

    def state_dict(self) -> dict[str, Any]:
        """Return `{"state": ..., "param_groups": ...}` with parameters replaced by indices."""
        index_of: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index_of.setdefault(id(p), len(index_of))
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {index_of[id(p)]: s for p, s in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore state saved by `state_dict`; tensors are copied and cast to each parameter."""
        state_dict = copy.deepcopy(state_dict)
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"loaded state dict has {len(saved_groups)} parameter groups, but "
                             f"the optimizer has {len(self.param_groups)}")
        for mine, saved in zip(self.param_groups, saved_groups):
            if len(mine["params"]) != len(saved["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't "
                                 "match the size of the optimizer's group")
        param_of = {
            index: p
            for mine, saved in zip(self.param_groups, saved_groups)
            for index, p in zip(saved["params"], mine["params"])
        }
        self.state = defaultdict(dict)
        for index, values in state_dict["state"].items():
            if index in param_of:
                p = param_of[index]
                self.state[p] = {k: _cast_like(p, k, v) for k, v in values.items()}
        self.param_groups = [
            dict(saved, params=mine["params"])
            for mine, saved in zip(self.param_groups, saved_groups)
        ]


def check_non_negative(**values: Any) -> None:
    """Raise torch's ValueError for the first negative hyper-parameter (in argument order).

    `required` (no default given) is skipped; `lr` and `eps` get torch's wording.

    Example:
        >>> check_non_negative(lr=0.1, weight_decay=-1.0)
        Traceback (most recent call last):
        ...
        ValueError: Invalid weight_decay value: -1.0; it must be >= 0
    """
    labels = {"lr": "learning rate", "eps": "epsilon value"}
    for name, value in values.items():
        if value is not required and value < 0.0:
            raise ValueError(f"Invalid {labels.get(name, name + ' value')}: {value}; "
                             "it must be >= 0")


def implementation_flags(name: str, **flags: Any) -> dict[str, Any]:
    """torch's speed/backend switches (foreach, fused, capturable, differentiable).

    They change how torch computes an update, not what it computes, so the engine accepts them
    and records them in `defaults` (keeping state_dicts torch-shaped). The exception is
    `differentiable=True`, which asks for a graph through the update and is not supported.
    """
    if flags.get("differentiable"):
        raise NotImplementedError(
            f"{name}(differentiable=True) is not supported by the reference engine; optimizer "
            "steps always run under no_grad here")
    return flags


def _cast_like(param: Any, key: str, value: Any) -> Any:
    # NOTE: "step" stays in its own dtype, as torch does, so bias corrections stay exact.
    if isinstance(value, torch.Tensor) and key != "step" and value.dtype.is_floating_point:
        return value.to(dtype=param.dtype, device=param.device)
    if isinstance(value, list):
        return [_cast_like(param, key, v) for v in value]
    return value


# torch's annotation for what optimizers accept: tensors, or parameter-group dicts
ParamsT = Any


def _default_to_fused_or_foreach(params: list, differentiable: bool,
                                 use_fused: bool = False) -> tuple[bool, bool]:
    """torch's choice of implementation: fused and foreach need an accelerator, so on cpu
    tensors (all there is here) both are False."""
    return False, False


def _get_capturable_supported_devices(supports_xla: bool = True) -> list[str]:
    """The device types torch can capture an optimizer step on (none of them is cpu)."""
    devices = ["cuda", "xpu", "hpu", "privateuseone"]
    return devices + ["xla"] if supports_xla else devices


def _use_grad_for_differentiable(func: Callable) -> Callable:
    """Run ``step`` with grad mode set to the optimizer's ``differentiable`` default (off
    here, as ``differentiable=True`` is refused), then restore it."""
    @functools.wraps(func)
    def _use_grad(self: Any, *args: Any, **kwargs: Any) -> Any:
        previous = torch.is_grad_enabled()
        try:
            torch.set_grad_enabled(self.defaults.get("differentiable", False))
            return func(self, *args, **kwargs)
        finally:
            torch.set_grad_enabled(previous)

    return _use_grad


def _group_tensors_by_device_and_dtype(tensorlistlist: list, with_indices: bool = False
                                       ) -> dict:
    """``{(device, dtype): (lists of the tensors of that kind, their indices)}``, the grouping
    torch's foreach paths use (the indices only ``with_indices``)."""
    groups: dict = {}
    for index, first in enumerate(tensorlistlist[0]):
        key = (first.device, first.dtype)
        lists, indices = groups.setdefault(key, ([[] for _ in tensorlistlist], []))
        for target, source in zip(lists, tensorlistlist):
            target.append(source[index])
        if with_indices:
            indices.append(index)
    return groups


Optimizer._group_tensors_by_device_and_dtype = staticmethod(_group_tensors_by_device_and_dtype)
