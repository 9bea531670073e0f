"""Names that stop meaning the same optimizer: loop targets and reassignments.

Gradient state is tracked per optimizer *name*. When a name is bound to another object,
what the old object went through says nothing about the new one:

- ``for lib, model, opt in pairs:`` / ``for model, opt in zip(models, opts):`` binds ``opt``
  to a different optimizer on every iteration, so nothing it did is carried to the next one;
- ``for opt in optimizers:`` (or ``enumerate(optimizers)``, ``optimizers.items()``, a literal
  list of optimizers) visits each optimizer of a known collection once: that inner loop does
  not carry state between its iterations, while the loop around it carries it for all of them;
- ``opt = optimizers[i]`` / ``opt = make_opt()`` in a loop body rebinds the name on that path.

When unsure which object a name holds, its state restarts clean: the rules stay silent.
"""
from __future__ import annotations

import ast

from lint_rules import events as ev
from lint_rules import syntax
from lint_rules.states import CLEAN, State

# Getters that hand back the optimizer(s) the object already owns (Lightning's `optimizers()`).
SAME_OBJECT_GETTERS = frozenset({"optimizers", "optimizer"})


def root(key: str) -> str:
    """The first name of a dotted key: ``opt`` for ``opt``, ``opt.param_groups``, ``opts[0]``.

    >>> root("opts[0].step")
    'opts'
    """
    for i, char in enumerate(key):
        if not (char.isalnum() or char == "_"):
            return key[:i]
    return key


def unwrapped(key: str, is_optimizer) -> str:
    """The wrapper for its wrapped optimizer: ``self.opt`` for ``self.opt.optimizer`` (NoamOpt,
    LightningOptimizer, AMP wrappers share one set of gradients with what they wrap).

    >>> unwrapped("model_opt.optimizer", lambda k: k.endswith("opt"))
    'model_opt'
    """
    while key.endswith(".optimizer") and is_optimizer(key[: -len(".optimizer")]):
        key = key[: -len(".optimizer")]
    return key


def restart(state: State, names: set[str], optimizer_names: set[str]) -> State:
    """Every optimizer key rooted at one of ``names`` starts clean (a new, unknown object);
    ``optimizer_names`` are the ones to set even where no key for them exists yet.

    >>> restart({frozenset(): {None: frozenset(), "opt": frozenset({("applied", 0)})}}, {"opt"}, set())
    {frozenset(): {None: frozenset(), 'opt': frozenset({('clean',)})}}
    """
    if not names:
        return state
    out: State = {}
    for assumptions, facts in state.items():
        facts = dict(facts)
        for key in [k for k in facts if k is not None and root(k) in names] + sorted(optimizer_names):
            facts[key] = frozenset({(CLEAN,)})
        out[assumptions] = facts
    return out


def restore(state: State, keys: set[str], entry: State) -> State:
    """Give ``keys`` back the facts they had when the loop was entered (next member's turn).

    >>> entry = {frozenset(): {None: frozenset({("clean",)})}}
    >>> restore({frozenset(): {None: frozenset(), "opts": frozenset({("fresh", 1)})}}, {"opts"}, entry)
    {frozenset(): {None: frozenset(), 'opts': frozenset({('clean',)})}}
    """
    if not keys:
        return state
    before = {k: frozenset().union(*(f.get(k, f[None]) for f in entry.values())) for k in keys}
    out: State = {}
    for assumptions, facts in state.items():
        facts = dict(facts)
        facts.update(before)
        out[assumptions] = facts
    return out


def loop_members(loop: ast.For | ast.comprehension, key_of, is_optimizer) -> dict[str, tuple[str, ...]]:
    """Loop-target names that stand for members of a known set of optimizers.

    ``key_of`` names an expression (None when it cannot); ``is_optimizer`` tests a key.
    ``for opt in optimizers`` -> {"opt": ("optimizers",)};
    ``for opt in [opt_g, opt_d]`` -> {"opt": ("opt_g", "opt_d")}.

    >>> loop = ast.parse("for i, opt in enumerate(optimizers): opt.step()").body[0]
    >>> loop_members(loop, ev.dotted, ev.looks_like_optimizer)
    {'opt': ('optimizers',)}
    """
    target, it = loop.target, loop.iter
    if type(target) is ast.Name:
        keys = _members(it, key_of, is_optimizer)
        return {target.id: keys} if keys else {}
    if type(target) is not ast.Tuple and type(target) is not ast.List:
        return {}
    names = [e.id if type(e) is ast.Name else None for e in target.elts]
    out: dict[str, tuple[str, ...]] = {}
    for position, name in enumerate(names):
        keys = _column(it, position, len(names), key_of, is_optimizer) if name else None
        if keys:
            out[name] = keys
    return out


def _members(it: ast.AST, key_of, is_optimizer) -> tuple[str, ...] | None:
    if type(it) is ast.List or type(it) is ast.Tuple:
        keys = tuple(key_of(e) or "" for e in syntax.elements(it))
        return keys if keys and all(k and is_optimizer(k) for k in keys) else None
    if type(it) is ast.Call and syntax.callee_name(it) == "values" and not it.args \
            and type(it.func) is ast.Attribute:
        it = it.func.value  # `for opt in optimizers.values()`
    key = key_of(it)
    return (key,) if key and ev.is_group_name(key) else None


def _column(it: ast.AST, position: int, width: int, key_of, is_optimizer) -> tuple[str, ...] | None:
    """The optimizers at ``position`` of each item: ``zip(a, optimizers)``, ``enumerate(opts)``,
    ``opts.items()``, or a literal tuple of tuples ``((m1, o1), (m2, o2))``."""
    if type(it) is ast.List or type(it) is ast.Tuple:
        rows = syntax.elements(it)
        if not rows or not all(isinstance(r, (ast.List, ast.Tuple)) for r in rows):
            return None
        cells = [syntax.elements(r) for r in rows]
        if any(len(c) != width for c in cells):
            return None
        return _members(ast.Tuple([c[position] for c in cells], ast.Load()), key_of, is_optimizer)
    if type(it) is not ast.Call:
        return None
    name = syntax.callee_name(it)
    args = syntax.positional(it)
    if name == "zip" and len(args) == width:
        return _members(args[position], key_of, is_optimizer)
    if name == "enumerate" and args and width == 2 and position == 1:
        return _members(args[0], key_of, is_optimizer)
    if name == "items" and width == 2 and position == 1 and type(it.func) is ast.Attribute:
        return _members(it.func.value, key_of, is_optimizer)
    return None


def reassigned_optimizers(stmt: ast.AST, is_optimizer) -> set[str]:
    """Optimizer-like names that an assignment binds to an object of unknown history:
    ``opt = optimizers[i]``, ``opt = make_opt()``, ``model, opt = pairs[k]``.

    An alias (``opt = self.optimizer``), a constant index (``opts[0]``) or an owner's getter
    (``self.optimizers()``) hands back the same optimizer every time, so it keeps its state.

    >>> stmt = ast.parse("optimizer = optimizers[i]").body[0]
    >>> reassigned_optimizers(stmt, ev.looks_like_optimizer)
    {'optimizer'}
    """
    if type(stmt) is not ast.Assign and type(stmt) is not ast.AnnAssign or stmt.value is None:
        return set()
    if type(stmt.value) is ast.Tuple or type(stmt.value) is ast.List:
        # `opt_a, opt_b = SGD(...), Adam(...)`: each name takes its own element
        return {name for target in syntax.assignment_targets(stmt)
                if type(target) is ast.Tuple or type(target) is ast.List
                and len(syntax.elements(target)) == len(syntax.elements(stmt.value))
                for element, value in zip(syntax.elements(target), syntax.elements(stmt.value))
                if _unknown_object(value)
                for name in syntax.stored_names(element) if is_optimizer(name)}
    if not _unknown_object(stmt.value):
        return set()
    names = {n for t in syntax.assignment_targets(stmt) for n in syntax.stored_names(t)}
    return {n for n in names if is_optimizer(n)}


def optimizer_alias(stmt: ast.AST, key_of, is_optimizer) -> tuple[str, str] | None:
    """(name, optimizer key) for ``optimizer = self.optimizer``: a second name for one optimizer.

    >>> stmt = ast.parse("optimizer = self.optimizer").body[0]
    >>> optimizer_alias(stmt, ev.dotted, ev.looks_like_optimizer)
    ('optimizer', 'self.optimizer')
    """
    if type(stmt) is not ast.Assign or len(stmt.targets) != 1:
        return None
    target, value = stmt.targets[0], stmt.value
    if type(target) is not ast.Name or type(value) not in (ast.Name, ast.Attribute):
        return None
    key = key_of(value)
    if not key or key == target.id or not is_optimizer(key) or ev.is_group_name(key):
        return None
    return target.id, key


def _unknown_object(value: ast.AST) -> bool:
    if type(value) is ast.Subscript:
        return ev.dotted(value) is None  # opts[i]; opts[0] names one fixed element
    if type(value) is ast.Call:
        return ev.last_name(ev.dotted(value.func) or "") not in SAME_OBJECT_GETTERS
    return False


def returned_argument(fn: ast.AST, call: ast.Call) -> ast.AST | None:
    """The argument of ``call`` that ``fn`` hands back: every ``return`` of ``fn`` returns the
    same parameter, which its body never rebinds (a learning-rate helper that edits
    ``param_groups`` and returns the optimizer it was given).

    >>> fn = ast.parse("def adjust(cfg, opt):\\n    opt.lr = 1\\n    return opt").body[0]
    >>> call = ast.parse("adjust(cfg, optimizer)").body[0].value
    >>> ast.unparse(returned_argument(fn, call))
    'optimizer'
    """
    returns = _own_returns(fn)
    names = {r.value.id if type(r.value) is ast.Name else None for r in returns}
    if len(names) != 1 or None in names:
        return None
    (param,) = names
    if param not in syntax.parameter_names(fn.args) or any(
            param in syntax.stored_names(t) for n in syntax.walk(fn)
            for t in syntax.assignment_targets(n)):
        return None
    return dict(syntax.call_arguments(fn, call)).get(param)


def _own_returns(fn: ast.AST) -> list[ast.Return]:
    """The ``return`` statements of ``fn`` itself, not of functions nested in it."""
    found, stack = [], list(syntax.children(fn))
    while stack:
        node = stack.pop()
        if type(node) is ast.Return:
            found.append(node)
        elif not isinstance(node, syntax.SCOPES):
            stack.extend(syntax.children(node))
    return found
