"""``torch.library``: Python-defined operators, reachable as ``torch.ops.<ns>.<name>``.

``custom_op`` makes an operator of a type-annotated function: calling it runs the function
below autograd (no graph inside it), and a gradient comes only from the formula given to
``register_autograd``, as in torch; backward through an operator without one raises torch's
error. ``register_fake`` records the shape-only kernel torch uses while compiling; eager
calls, the only calls here, never use it. ``Library``/``define``/``impl`` register kernels
by name: a ``CompositeImplicitAutograd`` kernel is differentiated through the engine ops it
runs, and so is a device kernel, as torch's autograd fallback does (where it also warns).

>>> import gradcheck.ref as torch
>>> @torch.library.custom_op("demo::cube", mutates_args=())
... def cube(x: torch.Tensor) -> torch.Tensor:
...     return x ** 3
>>> cube.register_autograd(lambda ctx, g: g * 3 * ctx.x ** 2,
...                        setup_context=lambda ctx, inputs, output: setattr(ctx, "x", inputs[0]))
>>> x = torch.tensor([2.0], requires_grad=True)
>>> torch.ops.demo.cube(x).backward(); x.grad
tensor([12.])
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

_OPS: dict[str, _Operator] = {}
_IMPLICIT = "CompositeImplicitAutograd"


class _Operator:
    """One named operator: its kernels, its autograd formula and its fake kernel."""

    def __init__(self, qualname: str, signature: inspect.Signature | None = None) -> None:
        self.qualname = qualname
        self.namespace, self.name = qualname.split("::")
        self.signature = signature
        self.kernel: Callable | None = None
        self.by_name = False  # registered with impl/Library.impl rather than custom_op
        self.backward: Callable | None = None
        self.setup_context: Callable | None = None
        self.fake: Callable | None = None
        self.function: type | None = None
        self.function_def: CustomOpDef | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from gradcheck import ref

        if self.kernel is None:
            raise NotImplementedError(f"{self.namespace}.{self.name}.default has no kernel for "
                                      f"cpu: register one with torch.library.impl")
        if self.by_name and self.backward is None:
            # torch's autograd fallback: the kernel is differentiated through its own ops
            return self.kernel(*args, **kwargs)
        bound = self._bind(args, kwargs)
        tensors = [a for a in bound.arguments.values() if isinstance(a, ref.Tensor)]
        if not (ref.is_grad_enabled() and any(t.requires_grad for t in tensors)):
            with ref.no_grad():
                return self._run(bound)
        return self._autograd_function().apply(*bound.arguments.values())

    def _bind(self, args: tuple, kwargs: dict) -> inspect.BoundArguments:
        signature = self.signature or inspect.signature(self.kernel)
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return bound

    def _run(self, bound: inspect.BoundArguments) -> Any:
        output = self.kernel(*bound.args, **bound.kwargs)
        _refuse_aliases(self, bound, output)
        if self.function_def is not None:  # torch counts the declared mutation once more
            for name in self.function_def._mutates_args:
                if hasattr(bound.arguments.get(name), "_vc"):
                    bound.arguments[name]._vc[0] += 1
        return output

    def _autograd_function(self) -> type:
        """An autograd Function named as torch names the node of a custom op."""
        from gradcheck import ref

        if self.function is not None:
            return self.function
        op = self

        def forward(ctx: Any, *inputs: Any) -> Any:
            bound = op._bind(inputs, {})
            with ref.no_grad():
                output = op._run(bound)
            if op.setup_context is not None:
                op.setup_context(ctx, inputs, output)
            return output

        def backward(ctx: Any, *grads: Any) -> Any:
            if op.backward is None:
                raise RuntimeError(f"Trying to backward through {op.namespace}.{op.name}.default "
                                   f"but no autograd formula was registered. Please use "
                                   f"register_autograd to add one.")
            result = op.backward(ctx, *grads)
            return result if isinstance(result, tuple) else (result,)

        name = f"GeneratedBackwardFor_{self.namespace}_{self.name}_default"
        self.function = type(name, (ref.autograd.Function,),
                             {"forward": staticmethod(forward),
                              "backward": staticmethod(backward)})
        return self.function


def _refuse_aliases(op: _Operator, bound: inspect.BoundArguments, output: Any) -> None:
    """A custom op returns new tensors (torch checks this too): an input given back would
    share its autograd history in ways the op's formula does not describe."""
    import numpy as np

    from gradcheck import ref

    if op.function_def is None:
        return
    outputs = output if isinstance(output, (tuple, list)) else (output,)
    inputs = [a for a in bound.arguments.values() if isinstance(a, ref.Tensor)]
    for out in (o for o in outputs if isinstance(o, ref.Tensor)):
        if any(np.shares_memory(out._data, t._data) for t in inputs):
            raise RuntimeError(f"{op.name}: the output of this custom operator must not be an "
                               f"input or a view of one; return a copy (x.clone())")



def _operator(qualname: str) -> _Operator:
    if "::" not in qualname:
        raise ValueError(f"expected the operator's name as 'namespace::name', got {qualname!r}")
    return _OPS.setdefault(qualname, _Operator(qualname))


def _qualname(op: Any) -> str:
    if isinstance(op, str):
        return op
    if isinstance(op, (CustomOpDef, OpOverload, OpOverloadPacket)):
        return op._qualname
    raise TypeError(f"expected an operator name 'namespace::name' or a custom op, got {op!r}")


def _check_annotations(fn: Callable) -> inspect.Signature:
    signature = inspect.signature(fn)
    for param in signature.parameters.values():
        if param.annotation is param.empty:
            raise ValueError(f"infer_schema(func): Parameter {param.name} must have a type "
                             f"annotation. Got func with signature {signature})")
    if signature.return_annotation is signature.empty:
        raise ValueError("infer_schema(func): No return type annotation was provided. Please "
                         "add one.")
    return signature


class CustomOpDef:
    """What ``custom_op`` returns: callable, with the ``register_*`` methods."""

    def __init__(self, qualname: str, fn: Callable, mutates_args: Iterable[str]) -> None:
        self._qualname = qualname
        self._op = _operator(qualname)
        self._op.signature = _check_annotations(fn)
        self._op.kernel, self._op.function_def = fn, self
        self._mutates_args = tuple([mutates_args] if isinstance(mutates_args, str)
                                   else mutates_args)
        self._init_fn = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._op(*args, **kwargs)

    def register_fake(self, fn: Callable) -> Callable:
        self._op.fake = fn
        return fn

    def register_autograd(self, backward: Callable, /, *,
                          setup_context: Callable | None = None) -> None:
        self._op.backward, self._op.setup_context = backward, setup_context

    def register_kernel(self, device_types: Any, fn: Callable | None = None) -> Any:
        def register(kernel: Callable) -> Callable:
            if _runs_on_cpu(device_types):
                self._op.kernel = kernel
            return kernel

        return register(fn) if fn is not None else register

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._qualname})>"


def _runs_on_cpu(device_types: Any) -> bool:
    kinds = [device_types] if isinstance(device_types, str) or device_types is None \
        else list(device_types)
    return any(k is None or str(k).lower() in ("cpu", "default", "compositeexplicitautograd")
               for k in kinds)


def custom_op(name: str, fn: Callable | None = None, /, *, mutates_args: Any,
              device_types: Any = None, schema: str | None = None) -> Any:
    """``@custom_op("ns::name", mutates_args=())``: an operator from an annotated function."""
    def make(function: Callable) -> CustomOpDef:
        return CustomOpDef(name, function, mutates_args)

    return make(fn) if fn is not None else make


def register_fake(op: Any, fn: Callable | None = None, /, *, lib: Any = None,
                  _stacklevel: int = 1) -> Any:
    """Record a shape-only kernel (used by torch's compilers, never by eager calls)."""
    def register(kernel: Callable) -> Callable:
        _operator(_qualname(op)).fake = kernel
        return kernel

    return register(fn) if fn is not None else register


impl_abstract = register_fake


def register_autograd(op: Any, backward: Callable, /, *, setup_context: Callable | None = None,
                      lib: Any = None) -> None:
    """The gradient formula of an operator: ``backward(ctx, *grads)`` after
    ``setup_context(ctx, inputs, output)``."""
    target = _operator(_qualname(op))
    target.backward, target.setup_context = backward, setup_context


def register_kernel(op: Any, device_types: Any, func: Callable | None = None, /, *,
                    lib: Any = None) -> Any:
    def register(kernel: Callable) -> Callable:
        if _runs_on_cpu(device_types):
            _operator(_qualname(op)).kernel = kernel
        return kernel

    return register(func) if func is not None else register


def define(qualname: str, schema: str, *, lib: Any = None, tags: Any = ()) -> None:
    """Declare ``ns::name`` with a schema; kernels come from ``impl``."""
    _operator(qualname)


def _set_kernel(qualname: str, dispatch_key: str, fn: Callable) -> None:
    op = _operator(qualname)
    op.kernel, op.by_name = fn, True


def impl(qualname: Any, types: Any, func: Callable | None = None, *, lib: Any = None) -> Any:
    """``@impl("ns::name", "cpu")`` (or the older ``impl(lib, "name", key)``)."""
    if isinstance(qualname, Library):
        qualname, types = f"{qualname.ns}::{types}", func or "CompositeImplicitAutograd"
        func = None

    def register(kernel: Callable) -> Callable:
        _set_kernel(qualname, str(types), kernel)
        return kernel

    return register(func) if func is not None else register


class Library:
    """``Library("ns", "DEF" | "IMPL" | "FRAGMENT")``: define and implement ops in ``ns``."""

    def __init__(self, ns: str, kind: str, dispatch_key: str = "") -> None:
        if kind not in ("IMPL", "DEF", "FRAGMENT"):
            raise ValueError("Unsupported kind: ", kind)
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key

    def define(self, schema: str, alias_analysis: str = "", *, tags: Any = ()) -> str:
        name = schema.split("(", 1)[0].strip().split(".")[0]
        _operator(f"{self.ns}::{name}")
        return name

    def impl(self, op_name: Any, fn: Callable, dispatch_key: str = "", *,
             with_keyset: bool = False) -> None:
        name = op_name if isinstance(op_name, str) else _qualname(op_name).split("::")[1]
        _set_kernel(f"{self.ns}::{name}", dispatch_key or self.dispatch_key, fn)

    def _destroy(self) -> None:
        for qualname in [q for q in _OPS if q.startswith(f"{self.ns}::")]:
            del _OPS[qualname]


class OpOverload:
    """``torch.ops.ns.name.default``."""

    def __init__(self, qualname: str) -> None:
        self._qualname = qualname

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _OPS[self._qualname](*args, **kwargs)

    def name(self) -> str:
        return self._qualname

    def __str__(self) -> str:
        return self._qualname.replace("::", ".") + ".default"

    def __repr__(self) -> str:
        return f"<OpOverload(op='{self._qualname.replace('::', '.')}', overload='default')>"


class OpOverloadPacket(OpOverload):
    """``torch.ops.ns.name``: calls its default overload."""

    @property
    def default(self) -> OpOverload:
        return OpOverload(self._qualname)

    def overloads(self) -> list[str]:
        return ["default"]

    def __str__(self) -> str:
        return self._qualname.replace("::", ".")

    def __repr__(self) -> str:
        return f"<OpOverloadPacket(op='{self}')>"


class _OpNamespace:
    """``torch.ops.ns``: the operators defined in ``ns``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, op_name: str) -> OpOverloadPacket:
        qualname = f"{self.name}::{op_name}"
        if qualname not in _OPS:
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute "
                                 f"'{op_name}'")
        return OpOverloadPacket(qualname)


def op_namespace(name: str) -> _OpNamespace:
    """``torch.ops.<name>`` for a namespace that ``torch.library`` defined ops in."""
    if not any(q.startswith(f"{name}::") for q in _OPS):
        raise AttributeError(f"module 'torch.ops' has no attribute '{name}' (no operator "
                             f"was defined in it with torch.library)")
    return _OpNamespace(name)
