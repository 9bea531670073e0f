"""Gradient events: which calls are BACKWARD, STEP(optimizer) or ZERO(target).

A receiver is named by its dotted text (``self.opt_g``, ``optimizer``), which is how the
same optimizer is recognised across statements. Anything we cannot name is not an event:
the rules prefer silence to guessing.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

BACKWARD, STEP, ZERO = "backward", "step", "zero"
ALL = "*"
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


def dotted(node: ast.AST) -> str | None:
    """Stable text for a receiver: ``a.b.c``, ``a.b()``, ``a[0]``; None when not nameable.

    >>> import ast
    >>> dotted(ast.parse("self.opt_g.step").body[0].value.value)
    'self.opt_g'
    """
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    if isinstance(node, ast.Call) and not node.args and not node.keywords:
        base = dotted(node.func)
        return None if base is None else f"{base}()"
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        base = dotted(node.value)
        return None if base is None else f"{base}[{node.slice.value!r}]"
    return None


def last_name(key: str) -> str:
    """The final component of a dotted key, without call parentheses or subscripts."""
    tail = re.split(r"\.", re.sub(r"\[[^\]]*\]", "", key))[-1]
    return tail.replace("()", "")


def _optimizer_word(name: str) -> bool:
    lowered = name.lower()
    if "optimizer" in lowered or "optimiser" in lowered:
        return True
    if re.match(r"opt(im)?[A-Z0-9]", name):  # optG, optim1
        return True
    return any(re.fullmatch(r"opt(im)?s?\d*", part) for part in lowered.split("_"))


def looks_like_optimizer(key: str) -> bool:
    """Naming heuristic: ``optimizer``, ``opt_g``, ``d_optim``, ``optG``; never ``scheduler``."""
    name = last_name(key)
    return bool(name) and not _NOT_OPTIMIZER.search(name) and _optimizer_word(name)


def is_group_name(key: str) -> bool:
    """A collection of optimizers (``optimizers``, ``self.opts``, ``self.optimizers()``)."""
    name = last_name(key).lower()
    return name.endswith("s") and looks_like_optimizer(key) and not name.endswith("ss")


@dataclass(frozen=True)
class Event:
    """One gradient event at one call or statement."""

    kind: str
    node: ast.AST = field(compare=False)  # the call (or statement) reported on
    line: int
    col: int
    text: str = field(compare=False)  # how the code spells it, for messages
    target: str = ""  # optimizer key (STEP), receiver key (ZERO), loss text (BACKWARD)
    partial: bool = field(default=False, compare=False)  # a ZERO that may clear only some params
    closure: ast.AST | None = field(default=None, compare=False)  # step(closure)


def backward_loss(call: ast.Call) -> ast.AST | None:
    """The expression a BACKWARD call backpropagates (``loss`` in ``accelerator.backward(loss)``)."""
    func = call.func
    if isinstance(func, ast.Name):
        return call.args[0] if call.args else None
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr == "manual_backward":
        return call.args[0] if call.args else None
    carrier = dotted(func.value) or ""
    if call.args and _BACKWARD_CARRIERS.search(last_name(carrier) or carrier):
        return call.args[0]
    return func.value


def is_backward_call(call: ast.Call) -> bool:
    """``x.backward()``, ``scaler.scale(l).backward()``, ``accelerator.backward(l)`` and kin."""
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr in ("backward", "manual_backward")
    return isinstance(func, ast.Name) and func.id == "backward" and bool(call.args)


def is_grad_attr(node: ast.AST) -> bool:
    """``p.grad`` or ``p.grad.data``."""
    if isinstance(node, ast.Attribute) and node.attr == "data":
        node = node.value
    return isinstance(node, ast.Attribute) and node.attr == "grad"


def is_grad_zeroing(stmt: ast.stmt) -> bool:
    """``p.grad = None``, ``p.grad.zero_()``, ``p.grad.data.zero_()``, ``p.grad.fill_(0)``."""
    if isinstance(stmt, ast.Assign):
        return all(is_grad_attr(t) for t in stmt.targets) and _is_none(stmt.value)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        func = call.func
        if isinstance(func, ast.Attribute) and is_grad_attr(func.value):
            if func.attr == "zero_":
                return True
            if func.attr == "fill_" and call.args and _is_zero(call.args[0]):
                return True
    return False


def grad_owner(stmt: ast.stmt) -> str | None:
    """``W`` for ``W.grad = None`` / ``W.grad.zero_()`` / ``W.grad.data.zero_()``."""
    node = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.value.func.value
    if isinstance(node, ast.Attribute) and node.attr == "data":
        node = node.value
    return dotted(node.value) if isinstance(node, ast.Attribute) else None


def is_grad_write(stmt: ast.stmt) -> bool:
    """``p.grad = g`` or ``p.grad.copy_(g)``: gradients replaced by hand (PCGrad, MAML, DDP)."""
    if isinstance(stmt, ast.Assign):
        return all(is_grad_attr(t) for t in stmt.targets) and not _is_none(stmt.value)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        return isinstance(func, ast.Attribute) and func.attr == "copy_" and is_grad_attr(func.value)
    return False


def param_loop_zeroes(loop: ast.For) -> bool:
    """A ``for p in ...:`` whose body only zeroes ``p.grad`` (maybe under ``if p.grad is not None``)."""
    body = list(loop.body)
    if len(body) == 1 and isinstance(body[0], ast.If) and not body[0].orelse:
        body = list(body[0].body)
    return bool(body) and all(
        is_grad_zeroing(s) or (isinstance(s, ast.Expr) and _is_detach_grad(s)) for s in body
    ) and any(is_grad_zeroing(s) for s in body)


def param_loop_owner(loop: ast.For) -> str | None:
    """``model`` for ``for p in model.parameters():``; None for any other iterable."""
    it = loop.iter
    if (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Attribute)
        and it.func.attr == "parameters"
        and isinstance(it.func.value, ast.Name)
    ):
        return it.func.value.id
    return None


def _is_detach_grad(stmt: ast.Expr) -> bool:
    func = getattr(stmt.value, "func", None)
    return isinstance(func, ast.Attribute) and func.attr in ("detach_", "requires_grad_") and (
        is_grad_attr(func.value)
    )


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _is_zero(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in (0, 0.0) and node.value is not False


def zero_call_receiver(call: ast.Call) -> str | None:
    """Receiver key of ``x.zero_grad()`` / ``x.clear_grad()`` / ``clear_grad(x)``; None if not one."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in ("zero_grad", "clear_grad", "clear_gradients"):
        return dotted(func.value) or ALL
    if isinstance(func, ast.Name) and func.id in ("zero_grad", "clear_grad"):
        return (dotted(call.args[0]) if call.args else None) or ALL
    return None


def step_target(call: ast.Call, is_optimizer) -> tuple[str, ast.AST | None] | None:
    """(optimizer key, closure) for ``opt.step(...)``, ``scaler.step(opt)``, ``xm.optimizer_step(opt)``."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr == "optimizer_step" and call.args:
        key = dotted(call.args[0])
        return (key, None) if key and is_optimizer(key) else None
    if func.attr != "step":
        return None
    receiver = dotted(func.value)
    if receiver and is_optimizer(receiver):
        closure = call.args[0] if call.args else _keyword(call, "closure")
        return receiver, closure
    if call.args:
        key = dotted(call.args[0])
        if key and is_optimizer(key):
            return key, None
    return None


def _keyword(call: ast.Call, name: str) -> ast.AST | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None
