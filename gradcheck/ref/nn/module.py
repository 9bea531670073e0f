"""`Module`: the base class that registers parameters, buffers and submodules by assignment.

`self.weight = Parameter(...)` lands in `_parameters`, `self.fc = Linear(...)` in `_modules`;
everything else (`parameters()`, `state_dict()`, `zero_grad()`, `to()`) walks those dicts.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from gradcheck import ref as torch
from gradcheck.ref.nn.parameter import Parameter, reset_grads
from gradcheck.ref.nn.module_lookup import ModuleLookup
from gradcheck.ref.utils.hooks import RemovableHandle, add_hook


class IncompatibleKeys(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return (f"_IncompatibleKeys(missing_keys={self.missing_keys}, "
                f"unexpected_keys={self.unexpected_keys})")

    __str__ = __repr__


class Module(ModuleLookup):
    """Base class for layers and models; subclasses define `forward`.

    Example:
        >>> import gradcheck.ref as torch
        >>> class Scale(torch.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.s = torch.nn.Parameter(torch.tensor(2.0))
        ...     def forward(self, x):
        ...         return self.s * x
        >>> [name for name, _ in Scale().named_parameters()]
        ['s']
    """

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())

    # -- attribute registration -------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        params = self.__dict__.get("_parameters")
        modules = self.__dict__.get("_modules")
        buffers = self.__dict__.get("_buffers")
        if isinstance(value, (Parameter, Module)) and params is None:
            raise AttributeError(f"cannot assign {type(value).__name__} '{name}' before "
                                 "Module.__init__() call; call super().__init__() first")
        if isinstance(value, Parameter):
            _forget(name, self.__dict__, modules, buffers)
            params[name] = value
        elif isinstance(value, Module):
            _forget(name, self.__dict__, params, buffers)
            modules[name] = value
        elif buffers is not None and getattr(value, "_is_buffer", False):
            _forget(name, params, modules)  # nn.Buffer(...): registered, as in torch
            self.register_buffer(name, value, persistent=value.persistent)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            params[name] = None
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (torch.nn.Module or None expected)")
            modules[name] = None
        elif buffers is not None and name in buffers:
            if value is not None and not isinstance(value, torch.Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(torch.Tensor or None expected)")
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails, i.e. for registered members.
        for store in ("_parameters", "_buffers", "_modules"):
            members = self.__dict__.get(store)
            if members is not None and name in members:
                return members[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(store, {}):
                del self.__dict__[store][name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register `param` (or None) under `name`."""
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (torch.nn.Parameter or None required)")
        self.__dict__.pop(name, None)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Any, persistent: bool = True) -> None:
        """Register a non-trainable tensor (e.g. running statistics) saved in the state_dict."""
        if tensor is not None and not isinstance(tensor, torch.Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self.__dict__.pop(name, None)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Register a child module under `name`."""
        self.__dict__.pop(name, None)
        self._modules[name] = module

    # -- calling ----------------------------------------------------------------------------
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  '"forward" function')

    def _call_impl(self, *args: Any, **kwargs: Any) -> Any:
        """What calling the module runs: forward with its hooks."""
        return self.__call__(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not (self._forward_pre_hooks or self._forward_hooks or _global_forward_pre_hooks
                or _global_forward_hooks):
            return self.forward(*args, **kwargs)
        # the hooks registered for every module run before this module's own, as in torch
        for hook in [*_global_forward_pre_hooks.values(), *self._forward_pre_hooks.values()]:
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        output = self.forward(*args, **kwargs)
        for key, hook in [*_global_forward_hooks.items(), *self._forward_hooks.items()]:
            result = (hook(self, args, kwargs, output) if key in
                      _global_forward_hooks_with_kwargs else hook(self, args, output))
            if result is not None:
                output = result
        return output

    def register_forward_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Call `hook(module, args)` before `forward`; a non-None result replaces the args."""
        return add_hook(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook: Callable) -> RemovableHandle:
        """Call `hook(module, args, output)` after `forward`; a non-None result replaces it."""
        return add_hook(self._forward_hooks, hook)

    # -- traversal ---------------------------------------------------------------------------
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple]:
        """Yield `(qualified_name, module)` for this module and every descendant, once each."""
        memo = set() if memo is None else memo
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(memo, f"{prefix}.{name}" if prefix else name,
                                               remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen: set[int] = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self) -> Iterator[Module]:
        for _, child in self.named_children():
            yield child

    def _named_members(self, store: str, prefix: str, recurse: bool,
                       remove_duplicate: bool = True) -> Iterator[tuple]:
        seen: set[int] = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for module_prefix, module in modules:
            for name, value in getattr(module, store).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple]:
        """Yield `(qualified_name, parameter)`; a shared parameter is yielded once by default."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple]:
        return self._named_members("_buffers", prefix, recurse)

    def buffers(self, recurse: bool = True) -> Iterator[Any]:
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    # -- modes and gradients ----------------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode (affects Dropout) on this module and all children."""
        if not isinstance(mode, bool):
            raise ValueError(f"training mode is expected to be boolean, got {mode!r}")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> Module:
        """Same as `train(False)`."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset parameter gradients: to None by default, to zeros with `set_to_none=False`."""
        reset_grads(self.parameters(), set_to_none)

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call `fn` on every child (recursively, children first) and then on self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Convert parameters and buffers in place, e.g. `model.to(torch.float64)`.

        Parameters keep their identity (optimizers holding them stay valid); only floating
        point tensors change dtype, as in torch.
        """
        def convert(t: Any) -> Any:
            if t.dtype.is_floating_point:
                return t.to(*args, **kwargs)
            kept = {k: v for k, v in kwargs.items() if k != "dtype"}
            dtype_free = [a for a in args if not isinstance(a, type(torch.float32))]
            return t.to(*dtype_free, **kept) if dtype_free or kept else t

        with torch.no_grad():
            for module in self.modules():
                for param in module._parameters.values():
                    if param is not None:
                        param.data = convert(param.data)
                        if param.grad is not None:
                            param.grad = convert(param.grad)
                for name, buf in module._buffers.items():
                    if buf is not None:
                        module._buffers[name] = convert(buf)
        return self

    def cpu(self) -> Module:
        return self.to("cpu")

    def cuda(self, device: Any = None) -> Module:
        return self.to("cuda" if device is None else device)

    def double(self) -> Module:
        return self.to(torch.float64)

    def float(self) -> Module:
        return self.to(torch.float32)

    # -- checkpoints ---------------------------------------------------------------------------
    def state_dict(self, prefix: str = "", keep_vars: bool = False) -> OrderedDict[str, Any]:
        """Map qualified names to parameters and persistent buffers (detached by default)."""
        out: OrderedDict[str, Any] = OrderedDict()
        for module_prefix, module in self.named_modules(prefix=prefix.rstrip(".")):
            head = f"{module_prefix}." if module_prefix else ""
            for name, param in module._parameters.items():
                if param is not None:
                    out[head + name] = param if keep_vars else param.detach()
            for name, buf in module._buffers.items():
                if buf is not None and name not in module._non_persistent_buffers:
                    out[head + name] = buf if keep_vars else buf.detach()
        return out

    def load_state_dict(self, state_dict: Any, strict: bool = True,
                        assign: bool = False) -> IncompatibleKeys:
        """Copy values into this module's parameters and buffers (in place, under no_grad),
        each module loading its own entries through ``_load_from_state_dict``."""
        from gradcheck.ref.nn.state_loading import load_state_dict

        return load_state_dict(self, state_dict, strict, assign)

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        from gradcheck.ref.nn.state_loading import load_from_state_dict

        load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                             unexpected_keys, error_msgs)

    # -- printing ---------------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = [line for line in self.extra_repr().split("\n") if line]
        for name, child in self._modules.items():
            child_repr = repr(child).replace("\n", "\n  ")
            lines.append(f"({name}): {child_repr}")
        if not self._modules and len(lines) <= 1:
            return f"{type(self).__name__}({''.join(lines)})"
        body = "".join(f"\n  {line}" for line in lines)
        return f"{type(self).__name__}({body}\n)"


_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_with_kwargs: OrderedDict = OrderedDict()


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(module, args)`` before every module's forward (and its own pre-hooks)."""
    return add_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook: Callable, *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """Call ``hook(module, args, output)`` (``hook(module, args, kwargs, output)`` with
    ``with_kwargs``) after every module's forward; a non-None result replaces the output."""
    handle = add_hook(_global_forward_hooks, hook)
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    return handle


def _forget(name: str, *stores: dict | None) -> None:
    # Re-assigning a name to a different kind of member removes it from its old store.
    for store in stores:
        if store is not None:
            store.pop(name, None)
