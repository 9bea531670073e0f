"""The autograd graph: nodes (grad_fn objects), saved tensors, and the backward walk.

Every gradient that reaches a leaf is accumulated into ``.grad`` by ``_accumulate`` and
nowhere else; every gradient is reduced to its input's shape by ``broadcast.sum_to`` in
``_run_node`` and nowhere else.
"""
from __future__ import annotations

import weakref

from gradcheck.ref import fperrors, grad_mode
from gradcheck.ref.broadcast import sum_to
from gradcheck.ref.dtypes import _BY_NP
from gradcheck.ref.tensors import _make

FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)


def _modified_error(tensor, node_name: str, expected: int):
    kind = f"torch.{tensor.dtype._tensor_type}"
    shape = ", ".join(str(s) for s in tensor.shape)
    where = f", which is output 0 of {node_name}," if node_name else ""
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [{kind} [{shape}]]{where} is at version {tensor._vc[0]}; expected version "
        f"{expected} instead. Hint: enable anomaly detection to find the operation that failed to "
        "compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
    )


# (pack, unpack) pairs of torch.autograd.graph.saved_tensors_hooks, innermost last
SAVED_TENSORS_HOOKS: list = []


class Packed:
    """A saved tensor as ``pack`` returned it; ``unpack`` gives the tensor back in backward."""

    __slots__ = ("value", "unpack")

    def __init__(self, tensor, hooks) -> None:
        pack, self.unpack = hooks
        self.value = pack(tensor)

    def tensor(self):
        return self.unpack(self.value)


def _packed_entries(saved) -> tuple:
    hooks = SAVED_TENSORS_HOOKS[-1]
    return tuple([(Packed(t, hooks) if t is not None else None, 0) for t in saved])


class Node:
    """One recorded operation (a ``grad_fn``); ``rule`` maps the output's grad to input grads.

    Rules are written with Tensor ops, so running them with grad mode on (``create_graph``)
    records the graph of the derivative itself.
    """

    def __init__(self, name: str, rule, inputs, saved=()):
        self._name = name
        self.rule = rule
        # NOTE: one plain loop, and a non-view input's grad_fn taken directly, not through
        # _edge: this runs once per recorded op.
        edges, meta = [], []
        for t in inputs:
            producer = t.grad_fn
            edges.append(producer if producer is not None and t._view is None else _edge(t))
            data = t._data
            meta.append((data.shape, _BY_NP[data.dtype]))
        self.next = edges = tuple(edges)
        self.needs_input_grad = tuple([e is not None for e in edges])
        self.in_meta = tuple(meta)
        if not saved:
            self._saved = ()
        elif SAVED_TENSORS_HOOKS:
            self._saved = _packed_entries(saved)
            self.packed = True
        else:
            self._saved = tuple([(t, t._vc[0] if t is not None else 0) for t in saved])
        self._saved_output = None
        self.pre_hooks = None  # tensor hooks registered on this node's output
        self.retained = None  # weak reference to the output when it called retain_grad()

    packed = False  # True when saved_tensors_hooks packed what this node saved

    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<{self._name} object at {hex(id(self))}>"

    @property
    def next_functions(self):
        return tuple((e, 0) for e in self.next)

    def save_output(self, out) -> None:
        # A detached alias avoids an output -> grad_fn -> output cycle; it shares the
        # version counter so in-place edits of the output are still caught.
        if SAVED_TENSORS_HOOKS:
            self._saved_output = (Packed(out, SAVED_TENSORS_HOOKS[-1]), 0)
            return
        self._saved_output = (_make(out._data, vc=out._vc), out._vc[0])

    @property
    def saved_tensors(self) -> tuple:
        """The tensors saved in forward, checked against their version counters."""
        if self._saved is None:
            raise RuntimeError(FREED)
        out = []
        for tensor, version in self._saved:
            if type(tensor) is Packed:
                out.append(tensor.tensor())
                continue
            if tensor is not None and tensor._vc[0] != version:
                gf = tensor.grad_fn
                raise _modified_error(tensor, gf.name().split("Backward")[0] if gf else "", version)
            out.append(tensor)
        return tuple(out)

    @property
    def result(self):
        """The saved output; re-attached to this node when building a higher-order graph."""
        if self._saved is None:
            raise RuntimeError(FREED)
        alias, version = self._saved_output
        if type(alias) is Packed:
            return alias.tensor()
        if alias._vc[0] != version:
            raise _modified_error(alias, self._name.split("Backward")[0], version)
        if grad_mode._enabled[0]:
            return _make(alias._data, grad_fn=self, vc=alias._vc)
        return alias

    def release(self) -> None:
        self._saved = None
        self._saved_output = None

    def register_hook(self, fn) -> None:
        raise NotImplementedError("grad_fn.register_hook is unsupported; use Tensor.register_hook")


class AccumulateGrad:
    """The sink node of a leaf that requires grad; ``variable`` is the leaf."""

    needs_input_grad = ()
    next = ()
    retained = None

    def __init__(self, variable):
        self.variable = variable

    @property
    def pre_hooks(self):
        return self.variable._hooks

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {hex(id(self))}>"

    @property
    def next_functions(self):
        return ()


def _edge(tensor):
    """The node a gradient for ``tensor`` flows into (None when it needs no grad)."""
    view = tensor._view
    if view is not None and view[3] != tensor._vc[0]:
        from gradcheck.ref.dispatch import refresh_view

        refresh_view(tensor)
    if not tensor._rg:
        return None
    if tensor.grad_fn is not None:
        return tensor.grad_fn
    acc = tensor._acc() if tensor._acc is not None else None
    if acc is None:
        acc = AccumulateGrad(tensor)
        tensor._acc = weakref.ref(acc)
    return acc


def _accumulate(tensor, grad) -> None:
    """THE accumulation: a fresh tensor the first time, in-place ``+=`` afterwards."""
    if tensor._grad is None:
        # NOTE: never store the upstream tensor itself, later in-place `+=` would alias it.
        tensor._grad = grad.clone() if grad_mode._enabled[0] else _make(grad._data.copy())
    elif grad_mode._enabled[0]:
        tensor._grad = tensor._grad + grad  # create_graph: keep the sum differentiable
    else:
        tensor._grad._data += grad._data
        tensor._grad._vc[0] += 1


def _dependencies(roots) -> dict:
    """In-degree of every node reachable from ``roots``."""
    deps = {}
    seen = set()
    stack = [r for r in roots if r is not None]
    for r in stack:
        seen.add(r)
    while stack:
        node = stack.pop()
        for nxt in node.next:
            if nxt is None:
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return deps


def _needed(roots, targets) -> set:
    """Nodes from which some target can be reached (autograd.grad runs only those)."""
    targets = set(targets)
    order, seen = [], set()
    for root in roots:
        if root is None or root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(root.next))]
        while stack:  # iterative post-order, so deep graphs do not hit the recursion limit
            node, children = stack[-1]
            for nxt in children:
                if nxt is not None and nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, iter(nxt.next)))
                    break
            else:
                stack.pop()
                order.append(node)
    needed = set()
    for node in order:  # children come before their parents
        if node in targets or any(n in needed for n in node.next if n is not None):
            needed.add(node)
    return needed


def _run_hooks(node, grad, accumulate: bool):
    if node.pre_hooks:
        for hook in node.pre_hooks:
            new = hook(grad)
            if new is not None:
                grad = new
    if accumulate and node.retained is not None:
        owner = node.retained()
        if owner is not None:
            _accumulate(owner, grad)
    return grad


# rule -> the rule to run on a complex grad (complex_numbers fills it): holomorphic rows get
# conj(rule(conj(grad))), torch's convention for the gradient of a real loss
COMPLEX_RULES: dict = {}


def _real_part(g):
    """A complex grad reaching a real input keeps its real part (torch does the same)."""
    return COMPLEX_RULES["real"](g)


def _run_node(node, grad, retain_graph: bool):
    try:
        complex_grad = grad._data.dtype.kind == "c"
    except AttributeError:  # the bundled grads of a multi-output Function's outputs
        complex_grad = False
    if complex_grad:
        grads = COMPLEX_RULES.get(node.rule, node.rule)(node, grad)
    else:
        grads = node.rule(node, grad)
    if type(grads) is not tuple:
        grads = (grads,)
    if not retain_graph:
        node.release()
    if node.in_meta is None:  # one output of a multi-output Function (see autograd)
        return grads
    out = []
    for g, (shape, dtype), needed in zip(grads, node.in_meta, node.needs_input_grad):
        if g is None or not needed:
            out.append(None)
            continue
        if g._data.shape != shape:
            g = sum_to(g, shape)  # THE un-broadcasting
        if g.dtype is not dtype:
            g = _real_part(g) if dtype.np.kind != "c" and g._data.dtype.kind == "c" else g.to(
                dtype)
        out.append(g)
    return out


def run_backward(roots, grads, retain_graph: bool, create_graph: bool, capture=None,
                 accumulate: bool = True, only=None):
    """Propagate ``grads`` from ``roots`` through the graph.

    ``capture`` maps nodes to a list that receives the total grad arriving there (autograd.grad);
    ``only`` limits leaf accumulation to those AccumulateGrad nodes (backward(inputs=...)).
    """
    _in_backward[0] += 1
    outer_task, outer_node = _task[0], _task[1]
    _task[0], _task[2] = _task[2], _task[2] + 1
    try:
        _run_backward(roots, grads, retain_graph, create_graph, capture, accumulate, only)
    except BaseException:
        if _in_backward[0] == 1:
            _final_callbacks.clear()  # a failed pass runs none of its callbacks
        raise
    finally:
        _in_backward[0] -= 1
        _task[0], _task[1] = outer_task, outer_node
    if _in_backward[0] == 0 and _final_callbacks:
        _run_final_callbacks()


_in_backward = [0]
_final_callbacks: list = []
# the running backward pass's id (-1 outside one), the node being run, the next id to give
_task: list = [-1, None, 0]


def current_graph_task_id() -> int:
    return _task[0]


def current_autograd_node():
    return _task[1]


def queue_callback(callback) -> None:
    """Run ``callback()`` when the current backward pass ends (torch's final callbacks)."""
    if not _in_backward[0]:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _final_callbacks.append(callback)


def _run_final_callbacks() -> None:
    while _final_callbacks:  # a callback may queue another; it runs in the same pass
        _final_callbacks.pop(0)()


def _run_backward(roots, grads, retain_graph, create_graph, capture, accumulate, only):
    deps = _dependencies(roots)
    buffers = {}
    for root, g in zip(roots, grads):
        if root is not None:
            buffers[root] = buffers[root] + g if root in buffers else g
    needed = _needed(roots, capture.keys()) if capture is not None and not accumulate else None
    ready = [r for r in dict.fromkeys(roots) if r is not None and deps.get(r, 0) == 0]
    quiet = fperrors.ignore()  # rules and accumulation add raw arrays (inf + -inf is silent)
    try:
        _walk(ready, deps, buffers, needed, retain_graph, create_graph, capture, accumulate,
              only)
    finally:
        fperrors.restore(quiet)


def _walk(ready, deps, buffers, needed, retain_graph, create_graph, capture, accumulate, only):
    capturing = capture is not None
    with grad_mode.set_grad_enabled(create_graph):
        while ready:
            node = ready.pop()
            _task[1] = node
            grad = buffers.pop(node)
            if node.pre_hooks or node.retained is not None:  # most nodes have neither
                grad = _run_hooks(node, grad, accumulate)
            if capturing and node in capture:
                capture[node].append(grad)
            if type(node) is AccumulateGrad:
                if accumulate and (only is None or node in only):
                    _accumulate_leaf(node.variable, grad)
                continue
            if needed is not None and not any(n in needed for n in node.next if n is not None):
                in_grads = [None] * len(node.next)
            else:
                in_grads = _run_node(node, grad, retain_graph)
            for nxt, g in zip(node.next, in_grads):
                if nxt is None:
                    continue
                if g is not None:
                    buffers[nxt] = buffers[nxt] + g if nxt in buffers else g
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    if nxt in buffers:
                        ready.append(nxt)
                    else:
                        _skip(nxt, deps, ready, buffers)


def _skip(node, deps, ready, buffers) -> None:
    """A node that received no gradient at all: release its children's dependency on it."""
    stack = [node]
    while stack:
        n = stack.pop()
        for nxt in n.next:
            if nxt is None:
                continue
            deps[nxt] -= 1
            if deps[nxt] == 0:
                if nxt in buffers:
                    ready.append(nxt)
                else:
                    stack.append(nxt)


def _accumulate_leaf(tensor, grad) -> None:
    _accumulate(tensor, grad)
    hooks = tensor._post_hooks
    if hooks:
        for hook in hooks:
            hook(tensor)
