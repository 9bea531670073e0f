"""The torch entry points a guard session wraps, each once torch itself imports that module.

Each ``patch_*`` function takes the session and the freshly imported module, replaces what it
must (in every namespace that re-exports it) and returns the functions that undo it. A program
that never imports a module pays nothing for its patch.

- ``Optimizer.__init__`` guards every optimizer as it is built; ``Optimizer.zero_grad`` sees resets
  through wrappers that inherit it (Lightning's ``LightningOptimizer`` subclasses the optimizer's
  class, so the optimizer's own ``zero_grad`` is never looked up);
- ``Module.register_parameter`` puts every parameter in the ledger; ``Module.zero_grad`` names the
  line of a reset behind the optimizers;
- ``autograd.backward``, for the first few calls, finds leaf tensors that are no module's
  parameters (weights written as plain tensors);
- ``destroy_process_group`` reports while the default group still exists;
- ``DistributedDataParallel.__init__`` tells the session which parameters DDP averages;
- ``GradScaler.scale``/``update`` and ``clip_grad_norm_``/``clip_grad_value_``: clipping on
  scaled gradients.
"""
from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

from gradcheck.runtime.findings import user_location
from gradcheck.runtime.scaling import CLIP_FUNCTIONS

Undo = Callable[[], None]
LEAF_SEARCHES = 3  # backward calls whose graph is searched for leaf tensors


def replace(module: Any, name: str, wrapper: Callable, namespaces: tuple[str, ...] = ()) -> list[Undo]:
    """Put ``wrapper`` in place of ``module.name`` and of its re-exports in ``namespaces``.

    >>> import types
    >>> module = types.SimpleNamespace(f=abs)
    >>> undo = replace(module, "f", round)
    >>> module.f(2.6), [u() for u in undo] and module.f(-2)
    (3, 2)
    """
    original = getattr(module, name)
    undo = []
    for namespace in (module, *(sys.modules.get(n) for n in namespaces)):
        if namespace is not None and getattr(namespace, name, None) is original:
            setattr(namespace, name, wrapper)
            undo.append(functools.partial(setattr, namespace, name, original))
    return undo


def patch_optimizer(session: Any, module: Any) -> list[Undo]:
    from gradcheck.integrations.frameworks import unwrap_optimizer

    optimizer_class = module.Optimizer
    init, zero_grad = optimizer_class.__init__, optimizer_class.zero_grad

    @functools.wraps(init)
    def __init__(optimizer: Any, *args: Any, **kwargs: Any) -> None:
        init(optimizer, *args, **kwargs)
        if not session.finished:
            session.watch(optimizer)

    @functools.wraps(zero_grad)
    def zero_grad_through_wrapper(optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        inner = unwrap_optimizer(optimizer)
        state = session.states.get(id(inner)) if inner is not optimizer else None
        if state is not None:
            state.on_zero_grad()
        return zero_grad(optimizer, *args, **kwargs)

    optimizer_class.__init__ = __init__
    optimizer_class.zero_grad = zero_grad_through_wrapper
    return [lambda: setattr(optimizer_class, "__init__", init),
            lambda: setattr(optimizer_class, "zero_grad", zero_grad)]


def patch_module_zero_grad(session: Any, module: Any) -> list[Undo]:
    module_class = module.Module
    zero_grad = module_class.zero_grad
    ledger = session.ledger

    @functools.wraps(zero_grad)
    def model_zero_grad(model: Any, *args: Any, **kwargs: Any) -> None:
        if any(ledger.fresh):  # it drops passes: remember where, for the report
            ledger.noted_reset = ("zero_grad()", user_location())
        return zero_grad(model, *args, **kwargs)

    module_class.zero_grad = model_zero_grad
    return [lambda: setattr(module_class, "zero_grad", zero_grad)]


def patch_register_parameter(session: Any, module: Any) -> list[Undo]:
    module_class = module.Module
    register = module_class.register_parameter

    @functools.wraps(register)
    def register_parameter(model: Any, name: str, param: Any) -> None:
        register(model, name, param)
        if param is not None and not session.finished:
            session.ledger.track(param, f"{type(model).__name__}.{name}")

    module_class.register_parameter = register_parameter
    return [lambda: setattr(module_class, "register_parameter", register)]


def patch_backward(session: Any, module: Any) -> list[Undo]:
    """Search the graph of the first backward calls for leaves no module registered."""
    original = module.backward
    calls = [0]

    @functools.wraps(original)
    def backward(tensors: Any, *args: Any, **kwargs: Any) -> Any:
        if calls[0] < LEAF_SEARCHES and not session.finished:
            calls[0] += 1
            for leaf in _leaves(tensors):
                session.ledger.track(leaf, f"a tensor of shape {tuple(leaf.shape)}")
            if calls[0] == LEAF_SEARCHES:  # enough: from now on, no cost at all
                for undo in undos:
                    undo()
        return original(tensors, *args, **kwargs)

    undos = replace(module, "backward", backward)
    return undos


def _leaves(tensors: Any) -> list[Any]:
    roots = [tensors] if hasattr(tensors, "grad_fn") else list(tensors)
    stack = [t.grad_fn for t in roots if getattr(t, "grad_fn", None) is not None]
    seen, leaves = set(), []
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        variable = getattr(node, "variable", None)
        if variable is not None:
            leaves.append(variable)
        stack.extend(next_node for next_node, _ in getattr(node, "next_functions", ()))
    return leaves


def patch_destroy_process_group(session: Any, module: Any) -> list[Undo]:
    """Report while the default group (and its store) still exists, then destroy it."""
    original = module.destroy_process_group

    @functools.wraps(original)
    def destroy_process_group(group: Any = None) -> None:
        if group is None or group is module.GroupMember.WORLD:
            session.finish()
        return original(group)

    return replace(module, "destroy_process_group", destroy_process_group,
                   ("torch.distributed",))


def patch_ddp(session: Any, module: Any) -> list[Undo]:
    ddp_class = module.DistributedDataParallel
    init = ddp_class.__init__

    @functools.wraps(init)
    def __init__(ddp: Any, *args: Any, **kwargs: Any) -> None:
        init(ddp, *args, **kwargs)
        session.consistency.add_model(ddp)

    ddp_class.__init__ = __init__
    return [lambda: setattr(ddp_class, "__init__", init)]


def patch_grad_scaler(session: Any, module: Any) -> list[Undo]:
    scaler_class = module.GradScaler
    scale, update = scaler_class.scale, scaler_class.update

    @functools.wraps(scale)
    def scaled(scaler: Any, outputs: Any) -> Any:
        session.clipping.scaled(scaler)
        return scale(scaler, outputs)

    @functools.wraps(update)
    def updated(scaler: Any, *args: Any, **kwargs: Any) -> None:
        session.clipping.updated(scaler)
        return update(scaler, *args, **kwargs)

    scaler_class.scale, scaler_class.update = scaled, updated
    return [lambda: setattr(scaler_class, "scale", scale),
            lambda: setattr(scaler_class, "update", update)]


def patch_clipping(session: Any, module: Any) -> list[Undo]:
    undos = []
    for name in CLIP_FUNCTIONS:
        undos += replace(module, name, _checked_clip(session, name, getattr(module, name)),
                         ("torch.nn.utils",))
    return undos


def _checked_clip(session: Any, name: str, original: Callable) -> Callable:
    @functools.wraps(original)
    def clip(parameters: Any, *args: Any, **kwargs: Any) -> Any:
        if session.clipping.scaling:
            if not hasattr(parameters, "grad"):  # a tensor is one parameter; else an iterable
                parameters = list(parameters)
            session.clipping.check(name, [parameters] if hasattr(parameters, "grad")
                                   else parameters, session.ledger)
        return original(parameters, *args, **kwargs)

    return clip


PATCHES: tuple[tuple[str, Callable[[Any, Any], list[Undo]]], ...] = (
    ("torch.optim.optimizer", patch_optimizer),
    ("torch.nn.modules.module", patch_module_zero_grad),
    ("torch.nn.modules.module", patch_register_parameter),
    ("torch.autograd", patch_backward),
    ("torch.distributed.distributed_c10d", patch_destroy_process_group),
    ("torch.nn.parallel.distributed", patch_ddp),
    ("torch.amp.grad_scaler", patch_grad_scaler),
    ("torch.nn.utils.clip_grad", patch_clipping),
)
