"""``torch.autograd``: backward, grad, custom Functions and the grad-mode switches."""
from __future__ import annotations

import warnings

import numpy as np

from gradcheck.ref import grad_mode
from gradcheck.ref.grad_mode import (  # noqa: F401 - re-exported as torch.autograd.*
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from gradcheck.ref.graph import Node, _accumulate, _edge, run_backward
from gradcheck.ref.tensors import Tensor, _make


def _tuple(x) -> tuple:
    if x is None:
        return ()
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _grads_for(outputs, grad_outputs) -> list:
    """Default grad_outputs: ones for scalar outputs, torch's errors otherwise."""
    grad_outputs = _tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(
            f"got {len(grad_outputs)} tensors and {len(outputs)} gradients"
        )
    grads = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None:
            if out._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if out._data.dtype.kind != "f":
                raise RuntimeError(
                    "grad can be implicitly created only for real scalar outputs but got "
                    f"{out.dtype!r}"
                )
            g = _make(np.ones_like(out._data))
        elif not isinstance(g, Tensor):
            g = _make(np.full(out._data.shape, g, dtype=out._data.dtype))
        elif g._data.shape != out._data.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}] "
                f"has a shape of {out.shape}."
            )
        grads.append(g)
    return grads


def _roots(outputs) -> list:
    roots = []
    for i, out in enumerate(outputs):
        if not out._rg:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
            )
        roots.append(_edge(out))
    return roots


CREATE_GRAPH_CYCLE = (
    "Using backward() with create_graph=True will create a reference cycle between the "
    "parameter and its gradient which can cause a memory leak. We recommend using autograd.grad "
    "when creating the graph to avoid this. If you have to use this function, make sure to reset "
    "the .grad fields of your parameters to None after use to break the cycle and avoid the leak."
)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of the graph's leaves.

    >>> from gradcheck.ref import tensor
    >>> x = tensor(2.0, requires_grad=True)
    >>> backward(3 * x ** 2); x.grad
    tensor(12.)
    """
    outputs = _tuple(tensors)
    roots = _roots(outputs)
    grads = _grads_for(outputs, grad_tensors)
    if create_graph:
        # torch's text, without its "(Triggered internally at <C++ file>)" suffix
        warnings.warn(CREATE_GRAPH_CYCLE, UserWarning, stacklevel=3)
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is None:
        run_backward(roots, grads, retain_graph, create_graph)
        return
    targets = _tuple(inputs)
    if not targets:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    leaves = {_edge(t) for t in targets if t.grad_fn is None}
    inner = {t.grad_fn: [] for t in targets if t.grad_fn is not None}
    run_backward(roots, grads, retain_graph, create_graph, capture=inner, only=leaves)
    for t in targets:
        if t.grad_fn is not None and inner[t.grad_fn]:
            total = inner[t.grad_fn][0]
            for g in inner[t.grad_fn][1:]:
                total = total + g
            with grad_mode.set_grad_enabled(create_graph):
                _accumulate(t, total)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs``; never touches ``.grad``.

    >>> from gradcheck.ref import tensor
    >>> x = tensor(3.0, requires_grad=True)
    >>> grad(x ** 2, x)
    (tensor(6.),)
    """
    outputs, targets = _tuple(outputs), _tuple(inputs)
    roots = _roots(outputs)
    grads = _grads_for(outputs, grad_outputs)
    for t in targets:
        if not t._rg:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    if retain_graph is None:
        retain_graph = create_graph
    if allow_unused is None:
        allow_unused = materialize_grads
    capture = {}
    for t in targets:
        capture.setdefault(_edge(t), [])
    run_backward(roots, grads, retain_graph, create_graph, capture=capture, accumulate=False)
    result = []
    for i, t in enumerate(targets):
        found = capture[_edge(t)]
        if not found:
            if materialize_grads:
                result.append(_make(np.zeros_like(t._data)))
                continue
            if not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior."
                )
            result.append(None)
            continue
        total = found[0]
        for g in found[1:]:
            total = total + g
        result.append(total)
    return tuple(result)


class FunctionCtx(Node):
    """The ``ctx`` of a custom Function: it is also the Function's node in the graph."""

    _materialize = True
    _non_diff = ()

    def save_for_backward(self, *tensors) -> None:
        self._to_save = tensors

    def mark_dirty(self, *tensors) -> None:
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_diff = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self._materialize = value


class _OutputGrads:
    """The grads reaching a multi-output Function, one slot per output (None: none arrived).

    Each output's own node hands one of these to the Function's node; ``+`` merges them, so
    the graph walk's ordinary buffer accumulation collects all outputs' grads in one place.
    """

    __slots__ = ("grads",)

    def __init__(self, grads: list):
        self.grads = grads

    def __add__(self, other: _OutputGrads) -> _OutputGrads:
        merged = []
        for a, b in zip(self.grads, other.grads):
            merged.append(b if a is None else a if b is None else a + b)
        return _OutputGrads(merged)


class _OutputNode(Node):
    """The grad_fn of output ``index`` of a multi-output Function.

    It keeps per-output state (tensor hooks, retain_grad) and forwards its grad to the
    Function's node; name, saved tensors and other attributes are the Function's own.
    """

    def __init__(self, ctx: FunctionCtx, index: int, count: int):
        self._ctx, self._index, self._count = ctx, index, count
        self.next = (ctx,)
        self.needs_input_grad = (True,)
        self.in_meta = None  # the graph walk passes our _OutputGrads through unchanged
        self.pre_hooks = None
        self.retained = None

    def rule(self, node, grad):
        grads = [None] * self._count
        grads[self._index] = grad
        return (_OutputGrads(grads),)

    def release(self) -> None:
        pass

    def name(self) -> str:
        return self._ctx.name()

    @property
    def next_functions(self):
        return self._ctx.next_functions

    def __repr__(self) -> str:
        return repr(self._ctx)

    def __getattr__(self, attr):
        return getattr(self._ctx, attr)


def _output_node_class(cls) -> type:
    """Per-Function subclass, so ``type(out.grad_fn).__name__`` reads ``<Name>Backward``."""
    node_cls = cls.__dict__.get("_output_node_class")
    if node_cls is None:
        node_cls = type(f"{cls.__name__}Backward", (_OutputNode,), {})
        cls._output_node_class = node_cls
    return node_cls


def _materialized(ctx, grads: list, metas: list) -> list:
    """torch's set_materialize_grads(True) default: a missing grad of a Tensor output is zeros."""
    if not ctx._materialize:
        return grads
    out = []
    for g, meta in zip(grads, metas):
        if g is None and meta is not None:
            g = _make(np.zeros(meta[0], dtype=meta[1]))
        out.append(g)
    return out


def _is_non_diff(ctx, tensor) -> bool:
    return any(tensor is t for t in ctx._non_diff)


class Function:
    """Base class for custom ops: define static ``forward(ctx, ...)`` and ``backward(ctx, ...)``.

    ``forward`` may return one Tensor or a tuple; ``backward`` then receives one grad per
    output (zeros for outputs that got none, unless ``ctx.set_materialize_grads(False)``).

    >>> from gradcheck.ref import tensor
    >>> class Cube(Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x ** 3
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return 3 * x ** 2 * g
    >>> x = tensor(2.0, requires_grad=True)
    >>> Cube.apply(x).backward(); x.grad
    tensor(12.)
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("a custom Function must implement forward(ctx, ...)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("a custom Function must implement backward(ctx, grad)")

    @classmethod
    def apply(cls, *args, **kwargs):
        tensors = [(i, a) for i, a in enumerate(args) if isinstance(a, Tensor)]
        node_cls = cls.__dict__.get("_node_class")
        if node_cls is None:  # torch names the node class after the Function: CubeBackward
            node_cls = type(f"{cls.__name__}Backward", (FunctionCtx,), {})
            cls._node_class = node_cls
        ctx = node_cls.__new__(node_cls)
        ctx._to_save = ()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._rg for a in args)
        with grad_mode.no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        if not (grad_mode._enabled[0] and any(t._rg for _, t in tensors)):
            return out
        single = isinstance(out, Tensor)
        outputs = (out,) if single else out
        if not isinstance(outputs, tuple) or not any(isinstance(o, Tensor) for o in outputs):
            raise TypeError(
                f"{cls.__name__}.forward returned {type(out).__name__}: a custom Function's "
                "forward must return a Tensor or a tuple containing Tensors"
            )
        metas = [(o._data.shape, o._data.dtype) if isinstance(o, Tensor) else None
                 for o in outputs]
        positions = [i for i, _ in tensors]

        def rule(node, g):
            grads = [g] if single else list(g.grads)
            grads = cls.backward(node, *_materialized(node, grads, metas))
            grads = grads if isinstance(grads, tuple) else (grads,)
            if len(grads) > len(args) and all(x is None for x in grads[len(args):]):
                grads = grads[:len(args)]  # torch ignores trailing Nones
            if len(grads) != len(args):
                raise RuntimeError(
                    f"function {cls.__name__}Backward returned an incorrect number of gradients "
                    f"(expected {len(args)}, got {len(grads)})"
                )
            return tuple(grads[i] for i in positions)

        Node.__init__(ctx, f"{cls.__name__}Backward", rule, [t for _, t in tensors],
                      ctx._to_save)
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._rg for a in args)
        results = []
        for i, o in enumerate(outputs):
            if not isinstance(o, Tensor):
                results.append(o)
            elif _is_non_diff(ctx, o):
                results.append(_make(o._data, vc=o._vc))
            else:
                grad_fn = ctx if single else _output_node_class(cls)(ctx, i, len(outputs))
                results.append(_make(o._data, grad_fn, o._vc))
        return results[0] if single else tuple(results)


def once_differentiable(fn):
    """Accepted for compatibility; the engine does not enforce it."""
    return fn


class _Anomaly:
    def __init__(self, mode: bool = True, check_nan: bool = True):
        self.mode = mode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


detect_anomaly = set_detect_anomaly = _Anomaly


class _FunctionModule:
    Function = Function
    FunctionCtx = FunctionCtx
    once_differentiable = staticmethod(once_differentiable)


function = _FunctionModule
class _VariableMeta(type):
    # Every tensor is a Variable, as in torch since 0.4: `isinstance(t, Variable)` holds.
    def __instancecheck__(cls, instance) -> bool:
        return isinstance(instance, Tensor)


class Variable(metaclass=_VariableMeta):
    """torch's legacy wrapper: a new leaf sharing the tensor's data, dtype kept.

    >>> from gradcheck.ref import tensor
    >>> Variable(tensor([1, 2])).dtype
    torch.int64
    """

    def __new__(cls, data: Tensor, requires_grad: bool = False, volatile=None) -> Tensor:
        if volatile is not None:
            warnings.warn(VOLATILE_REMOVED, UserWarning, stacklevel=2)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        return out.requires_grad_(True) if requires_grad else out


VOLATILE_REMOVED = "volatile was removed and now has no effect. Use `with torch.no_grad():` instead."
