"""Gradient events: which calls are BACKWARD, STEP(optimizer) or ZERO(target).

A receiver is named by its dotted text (``self.opt_g``, ``optimizer``), which is how the
same optimizer is recognised across statements. Anything we cannot name is not an event:
the rules prefer silence to guessing.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

import ast

from lint_rules import syntax

BACKWARD, STEP, ZERO = "backward", "step", "zero"
ALL = "*"
NOTHING = "<none>"  # a parameter left at its default None: events on it do nothing
# Names of the calls that can be gradient events; anything else is skipped unanalysed.
EVENT_CALL_NAMES = frozenset(
    {"backward", "manual_backward", "step", "optimizer_step", "zero_grad", "clear_grad",
     "clear_gradients"}
)  # a ZERO whose exact optimizer is unknown clears every optimizer

# Class names of optimizers in torch.optim and the common third-party packages.
OPTIMIZER_CLASSES = frozenset(
    ["Adam", "AdamW", "SGD", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "LBFGS", "SparseAdam", "ASGD", "Rprop", "Lion", "Adafactor", "LAMB", "Lamb", "FusedAdam", "FusedLAMB", "FusedSGD", "AdamW8bit", "Adam8bit", "PagedAdamW", "Muon", "Shampoo", "SophiaG", "Adan", "Novograd", "Yogi", "AdaBelief", "Ranger", "DistributedOptimizer", "ZeroRedundancyOptimizer"]
)
_NOT_OPTIMIZER = re.compile(r"sched|scaler|engine|env|warmup|lr_|_lr|ema\b|ema_|swa|plateau", re.IGNORECASE)
_BACKWARD_CARRIERS = re.compile(r"accelerator|fabric|autograd|engine|deepspeed|amp$", re.IGNORECASE)


# Module methods that return the module itself.
_SAME_MODULE = frozenset({"cuda", "cpu", "to", "train", "eval", "float", "half", "double",
                          "bfloat16", "requires_grad_", "share_memory"})


def dotted(node: ast.AST) -> str | None:
    """Stable text for a receiver: ``a.b.c``, ``a.b()``, ``a[0]``; None when not nameable.

    >>> dotted(ast.parse("self.opt_g.step", mode="eval").body.value)
    'self.opt_g'
    """
    kind = type(node)
    if kind is ast.Name:
        return node.id
    if kind is ast.Attribute:
        base = dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    if kind is ast.Call and type(node.func) is ast.Attribute and node.func.attr in _SAME_MODULE:
        return dotted(node.func.value)  # `model.cuda()` is `model` (modules move in place)
    if kind is ast.Call and not node.args and not node.keywords:
        base = dotted(node.func)
        return None if base is None else f"{base}()"
    if kind is ast.Subscript:
        value = syntax.constant(node.slice)
        base = dotted(node.value) if syntax.has_value(value) else None
        return None if base is None else f"{base}[{value!r}]"
    return None


def member_key(node: ast.AST) -> str | None:
    """Like ``dotted``, and a member picked by a variable too: ``optimizers[a]``,
    ``self.agents[i].actor_optimizer`` (the index as written). Only receivers of a step or a
    reset are named this way: which member ``a`` picks is unknown, see ``member_prefix``.

    >>> member_key(ast.parse("self.agents[i].actor_optimizer", mode="eval").body)
    'self.agents[i].actor_optimizer'
    >>> member_key(ast.parse("optimizers[f(a)]", mode="eval").body) is None
    True
    """
    key = dotted(node)
    if key is not None or type(node) not in (ast.Subscript, ast.Attribute):
        return key
    if type(node) is ast.Attribute:
        base = member_key(node.value)
        return None if base is None else f"{base}.{node.attr}"
    base = dotted(node.value)
    index = node.slice
    if base is None or not all(type(n) in _INDEX_NODES for n in ast.walk(index)):
        return None
    return f"{base}[{ast.unparse(index)}]"


_INDEX_NODES = (ast.Name, ast.Attribute, ast.Load, ast.Constant, ast.BinOp, ast.Add, ast.Sub,
                ast.Mod, ast.Tuple)


def member_prefix(key: str) -> str | None:
    """``optimizers[`` for ``optimizers[a]``: the keys of every member of that collection
    start with it; None for a key with no variable index.

    >>> member_prefix("self.optimizers[a]"), member_prefix("opt_g"), member_prefix("opts[0]")
    ('self.optimizers[', None, None)
    """
    head, bracket, rest = key.partition("[")
    index = rest.partition("]")[0]
    variable = bool(re.search(r"[A-Za-z_]", index)) and not re.fullmatch(r"""(['"]).*\1""", index)
    return head + bracket if bracket and variable else None


def member_index_names(key: str) -> set[str]:
    """The names a member key's variable indices read.

    >>> sorted(member_index_names("optimizers[i + offset]"))
    ['i', 'offset']
    """
    return {name for inner in re.findall(r"\[([^\]]*)\]", key)
            for name in re.findall(r"[A-Za-z_]\w*", inner)} if member_prefix(key) else set()


def last_name(key: str) -> str:
    """The final component of a dotted key, without call parentheses or subscripts."""
    tail = re.split(r"\.", re.sub(r"\[[^\]]*\]", "", key))[-1]
    return tail.replace("()", "")


# Words that make a name about an optimizer something else than one: `optim_steps`,
# `opt_level`, `optimizer_state`, `optim_cfg` hold a count, a setting or a state.
_NOT_AN_OPTIMIZER_PART = frozenset({
    "step", "steps", "iter", "iters", "iteration", "iterations", "count", "num", "n",
    "epoch", "epochs", "level", "state", "states", "cfg", "config", "conf", "type", "name",
    "args", "kwargs", "kw", "params", "freq", "every", "interval", "idx", "index", "fn", "cls",
    "class", "path", "file", "ckpt",
})


def _optimizer_word(name: str) -> bool:
    lowered = name.lower()
    if not _NOT_AN_OPTIMIZER_PART.isdisjoint(lowered.split("_")):
        return False
    if "optimizer" in lowered or "optimiser" in lowered:
        return True
    if re.match(r"opt(im)?[A-Z0-9]", name):  # optG, optim1
        return True
    return any(re.fullmatch(r"opt(im)?s?\d*", part) for part in lowered.split("_"))


@functools.lru_cache(maxsize=8192)  # a pure function of the text, asked for every call
def looks_like_optimizer(key: str) -> bool:
    """Naming heuristic: ``optimizer``, ``opt_g``, ``d_optim``, ``optG``, ``state['optimizer']``;
    never ``scheduler``."""
    if key.startswith(NOTHING):
        return False
    keyed = _STRING_KEY.search(key)  # an entry of a dict: its key names what it holds
    return any(bool(name) and not _NOT_OPTIMIZER.search(name) and _optimizer_word(name)
               for name in (last_name(key), keyed.group(1) if keyed else ""))


_STRING_KEY = re.compile(r"""\[['"](\w+)['"]\]$""")


def is_group_name(key: str) -> bool:
    """A collection of optimizers (``optimizers``, ``self.opts``, ``self.optimizers()``)."""
    name = last_name(key).lower()
    return name.endswith("s") and looks_like_optimizer(key) and not name.endswith("ss")


@dataclass(frozen=True)
class Event:
    """One gradient event at one call or statement.

    Where it stands (``line``, ``col``) and how the code spells it (``text``) are looked up
    only when a message needs them: resolving positions walks the whole module, and most
    analysed files produce no finding at all.
    """

    kind: str
    node: ast.AST = field(compare=False)  # the call (or statement) reported on
    source: Any = field(compare=False, repr=False)  # the SourceText that locates ``node``
    target: str = ""  # optimizer key (STEP), receiver key (ZERO), loss text (BACKWARD)
    partial: bool = field(default=False, compare=False)  # a ZERO that may clear only some params
    closure: ast.AST | None = field(default=None, compare=False)  # step(closure)
    via: bool = field(default=False, compare=False)  # happens inside a call to another module
    # Identity: one event per node, kind and target. The node is known by its span in the
    # tree, not its address, so that sets of events iterate in the same order in every run.
    node_id: tuple = field(init=False, repr=False)

    def __post_init__(self) -> None:
        node = self.node
        span = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0),
                getattr(node, "end_lineno", 0), getattr(node, "end_col_offset", 0))
        object.__setattr__(self, "node_id", (*span, type(node).__name__))

    @property
    def order(self) -> tuple:
        """A key that sorts events by where they stand, the same in every run."""
        return (*self.node_id, self.kind, self.target)

    @property
    def line(self) -> int:
        return self.source.start(self.node)[0]

    @property
    def col(self) -> int:
        return self.source.start(self.node)[1]

    @property
    def text(self) -> str:
        return self.source.segment(self.node)


def backward_loss(call: ast.Call) -> ast.AST | None:
    """The expression a BACKWARD call backpropagates (``loss`` in ``accelerator.backward(loss)``)."""
    func = call.func
    args = syntax.positional(call)
    if type(func) is ast.Name:
        return args[0] if args else None
    if type(func) is not ast.Attribute:
        return None
    if func.attr == "manual_backward":
        return args[0] if args else None
    carrier = dotted(func.value) or ""
    if args and _BACKWARD_CARRIERS.search(last_name(carrier) or carrier):
        return args[0]
    return func.value


def is_backward_call(call: ast.Call) -> bool:
    """``x.backward()``, ``scaler.scale(l).backward()``, ``accelerator.backward(l)`` and kin."""
    func = call.func
    if type(func) is ast.Attribute:
        # Distributed autograd keeps gradients per context (`dist_autograd.backward(ctx, ...)`
        # with `DistributedOptimizer.step(ctx)`): nothing lands in `.grad`, nothing to reset.
        return func.attr in ("backward", "manual_backward") and \
            last_name(dotted(func.value) or "") != "dist_autograd"
    return type(func) is ast.Name and func.id == "backward" and bool(syntax.positional(call))


def is_grad_attr(node: ast.AST) -> bool:
    """``p.grad``, ``p.grad.data`` or ``p._grad`` (the same storage, set without checks)."""
    if type(node) is ast.Attribute and node.attr == "data":
        node = node.value
    return type(node) is ast.Attribute and node.attr in ("grad", "_grad")


def aliased_gradients(stmt: ast.AST, parents: dict[int, ast.AST]) -> tuple[str, str] | None:
    """(source model, destination model) for ``dst._grad = src.grad`` in a loop
    ``for src, dst in zip(a.parameters(), b.parameters()):``: ``b``'s gradients become the
    very tensors of ``a``'s, so resetting ``b``'s (to None) leaves ``a``'s untouched."""
    if type(stmt) is not ast.Assign or len(stmt.targets) != 1:
        return None
    target, value = stmt.targets[0], stmt.value
    if not (is_grad_attr(target) and is_grad_attr(value)):
        return None
    dst, src = dotted(target.value), dotted(value.value)
    loop = parents.get(id(stmt))
    while loop is not None and not isinstance(loop, syntax.FOR_LOOPS):
        loop = parents.get(id(loop))
    if loop is None or type(loop.target) is not ast.Tuple or type(loop.iter) is not ast.Call \
            or syntax.callee_name(loop.iter) != "zip" or len(loop.iter.args) != 2:
        return None
    names = [dotted(e) for e in loop.target.elts]
    owners = [param_source(a) for a in loop.iter.args]
    if len(names) != 2 or None in owners or {src, dst} != set(names):
        return None
    by_name = dict(zip(names, owners))
    return by_name[src], by_name[dst]


def param_source(node: ast.AST) -> str | None:
    """``model`` for ``model.parameters()``; None for anything else."""
    if type(node) is ast.Call and type(node.func) is ast.Attribute and node.func.attr == "parameters":
        return dotted(node.func.value)
    return None


def _expr_call(stmt: ast.AST) -> ast.Call | None:
    """The call of an expression statement ``f(...)``."""
    if type(stmt) is ast.Expr and type(stmt.value) is ast.Call:
        return stmt.value
    return None


def is_grad_zeroing(stmt: ast.AST) -> bool:
    """``p.grad = None``, ``p.grad.zero_()``, ``p.grad.data.zero_()``, ``p.grad.fill_(0)``."""
    if type(stmt) is ast.Assign:
        return all(is_grad_attr(t) for t in stmt.targets) and _is_none(stmt.value)
    call = _expr_call(stmt)
    if call is not None:
        func = call.func
        if type(func) is ast.Attribute and is_grad_attr(func.value):
            if func.attr == "zero_":
                return True
            args = syntax.positional(call)
            if func.attr == "fill_" and args and _is_zero(args[0]):
                return True
    return False


def grad_owner(stmt: ast.AST) -> str | None:
    """``W`` for ``W.grad = None`` / ``W.grad.zero_()`` / ``W.grad.data.zero_()``."""
    node = stmt.targets[0] if type(stmt) is ast.Assign else stmt.value.func.value
    if type(node) is ast.Attribute and node.attr == "data":
        node = node.value
    return dotted(node.value) if type(node) is ast.Attribute else None


def grad_values_read(test: ast.AST) -> set[str]:
    """The tensors whose gradient values ``test`` reads (``W`` in ``torch.isnan(W.grad)``),
    not counting whether there is one (``W.grad is not None``)."""
    presence = {id(c.left) for c in syntax.walk(test)
                if type(c) is ast.Compare and all(type(o) in (ast.Is, ast.IsNot) for o in c.ops)}
    found = set()
    for node in syntax.walk(test):
        if type(node) is ast.Attribute and is_grad_attr(node) and id(node) not in presence:
            inner = node.value if node.attr == "data" else node
            found.add(dotted(inner.value) or "")
    return found


def is_grad_write(stmt: ast.AST) -> bool:
    """``p.grad = g``, ``p.grad.copy_(g)``, ``p.grad.fill_(c)``: gradients replaced by hand
    (PCGrad, MAML, DDP, tests that fake gradients)."""
    if type(stmt) is ast.Assign:
        return all(is_grad_attr(t) for t in stmt.targets) and not _is_none(stmt.value) and \
            not _reads_own_grad(stmt)
    call = _expr_call(stmt)
    if call is None or type(call.func) is not ast.Attribute or not is_grad_attr(call.func.value):
        return False
    if call.func.attr == "copy_":
        return True
    # `p.grad.fill_(0.01)`: every entry overwritten (a zero fill is a reset instead).
    args = syntax.positional(call)
    return call.func.attr == "fill_" and bool(args) and not _is_zero(args[0])


def _reads_own_grad(stmt: ast.Assign) -> bool:
    """``p.grad = p.grad / scale``: the gradient rescaled, not replaced by another."""
    owners = {dotted(t.value if t.attr != "data" else t.value.value) for t in stmt.targets
              if type(t) is ast.Attribute}
    return any(is_grad_attr(n) and dotted(n.value if n.attr != "data" else n.value.value) in owners
               for n in syntax.walk(stmt.value) if type(n) is ast.Attribute)


def param_loop_zeroes(loop: ast.For) -> bool:
    """A ``for p in ...:`` whose body only zeroes ``p.grad`` (maybe under ``if p.grad is not None``)."""
    body = syntax.body_of(loop)
    if len(body) == 1 and type(body[0]) is ast.If and not body[0].orelse:
        if grad_values_read(body[0].test):
            return False  # `if torch.isnan(p.grad).any(): p.grad = None` repairs, not resets
        body = syntax.body_of(body[0])
    return bool(body) and all(is_grad_zeroing(s) or _is_detach_grad(s) for s in body) and any(
        is_grad_zeroing(s) for s in body
    )


def group_loop_optimizer(loop: ast.For) -> str | None:
    """``optim`` for ``for group in optim.param_groups: for p in group["params"]: p.grad =
    None`` (a reset of that optimizer's parameters written out); None for anything else."""
    it, target = loop.iter, loop.target
    if type(it) is not ast.Attribute or it.attr != "param_groups" or type(target) is not ast.Name:
        return None
    body = syntax.body_of(loop)
    if len(body) != 1 or type(body[0]) not in (ast.For, ast.AsyncFor) or not param_loop_zeroes(body[0]):
        return None
    inner = body[0].iter
    if type(inner) is not ast.Subscript or dotted(inner.value) != target.id:
        return None
    return dotted(it.value)


def param_loop_owner(loop: ast.For) -> str | None:
    """``model`` for ``for p in model.parameters():``; None for any other iterable."""
    it = loop.iter
    if (
        type(it) is ast.Call
        and type(it.func) is ast.Attribute
        and it.func.attr == "parameters"
        and type(it.func.value) is ast.Name
    ):
        return it.func.value.id
    return None


def _is_detach_grad(stmt: ast.AST) -> bool:
    call = _expr_call(stmt)
    func = call.func if call is not None else None
    return type(func) is ast.Attribute and func.attr in ("detach_", "requires_grad_") and (
        is_grad_attr(func.value)
    )


def _is_none(node: ast.AST) -> bool:
    return type(node) is ast.Constant and node.value is None


def _is_zero(node: ast.AST) -> bool:
    value = syntax.constant(node)
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0


def zero_call_receiver(call: ast.Call) -> str | None:
    """Receiver key of ``x.zero_grad()`` / ``x.clear_grad()`` / ``clear_grad(x)``; None if not one."""
    func = call.func
    if type(func) is ast.Attribute and func.attr in ("zero_grad", "clear_grad", "clear_gradients"):
        return member_key(func.value) or ALL
    if type(func) is ast.Name and func.id in ("zero_grad", "clear_grad"):
        args = syntax.positional(call)
        return (dotted(args[0]) if args else None) or ALL
    return None


def is_opaque_step(call: ast.Call) -> bool:
    """``helper.optimizer_step(opt, ...)`` from anyone but torch_xla (``xm.optimizer_step``,
    a plain step): what it does to the gradients is its own business."""
    func = call.func
    return type(func) is ast.Attribute and func.attr == "optimizer_step" and \
        last_name(dotted(func.value) or "") not in ("xm", "xla_model")


def step_target(call: ast.Call, is_optimizer) -> tuple[str, ast.AST | None] | None:
    """(optimizer key, closure) for ``opt.step(...)``, ``scaler.step(opt)``, ``xm.optimizer_step(opt)``."""
    func = call.func
    if type(func) is not ast.Attribute:
        return None
    args = syntax.positional(call)
    if func.attr == "optimizer_step" and args:
        key = member_key(args[0])
        return (key, None) if key and is_optimizer(key) else None
    if func.attr != "step":
        return None
    receiver = member_key(func.value)
    if receiver and is_optimizer(receiver):
        closure = args[0] if args else syntax.keyword(call, "closure")
        return receiver, closure
    if args:
        key = member_key(args[0])  # `scaler.step(self.optimizers[uid])` too
        if key and is_optimizer(key):
            return key, None
    return None
