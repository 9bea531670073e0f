"""Evidence: whether a GC001 or GC002 finding rests on what the file shows, or on what the
analysis could not see.

Held-out code showed where the two oldest forms go wrong. On test6 to test8, a loop that
"never resets" its optimizer had, each time it was a false alarm, a reset somewhere in the
file the analysis could not tie to an optimizer: a helper on `self`, a collection, a
wrapper, a write to `.grad`; test9 and test10 added a step helper whose caller, out of
sight, resets before each call. A reset "between backward and step" was, each time, a reset
of something else than the stepped optimizer (a part of the network frozen on purpose),
gradients written back before the step, or a step that takes arguments and computes its
own. So the default forms ask for proof of the opposite; the rest is reported with
``--preview`` only, as the ``unproven`` form of each rule.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from lint_rules import rebinding, syntax
from lint_rules.analysis import REPEATED_HOOKS, Analysis
from lint_rules.effects import Issue
from lint_rules.events import dotted
from lint_rules.narrowing import hollowed_attribute_values, mentioned_in_hollowed
from lint_rules.rules.base import crosses_modules
from lint_rules.summaries import names_an_optimizer_class

# In-place methods that clear or replace a gradient tensor: `p.grad.zero_()`, `.detach_()`.
_GRAD_REWRITES = frozenset({"zero_", "fill_", "detach_", "copy_", "mul_", "set_", "requires_grad_"})
# Calls between a reset and a step that only read or rescale gradients, or switch the tape
# (any name with `clip` in it rescales too).
_HARMLESS = frozenset({"unscale_", "no_grad", "enable_grad", "set_grad_enabled",
                       "requires_grad_"})


def nothing_else_resets(analysis: Analysis, issue: Issue) -> bool:
    """A GC002 ``stale`` finding stands on evidence when every reset in the file is tied to
    something other than the stepped optimizer: nothing the analysis could not follow may be
    the missing reset."""
    if crosses_modules(issue) or not _carried_by_a_loop(analysis, issue) \
            or _a_project_object_of_no_optimizer_class(analysis, issue):
        return False
    stepped = _Stepped(
        names=_names_of_stepped(analysis, issue),
        weighed={id(analysis.function_of(e.node))
                 for e in (issue.step, *issue.backwards, *issue.applied_by, *issue.also)},
        owner=_class_of(analysis, issue.step.node),
        loop=next((n for n in reversed(issue.loops) if isinstance(n, syntax.LOOPS)), None))
    return all(_tied_elsewhere(analysis, node, stepped) for node in _resets(analysis.tree))


def _a_project_object_of_no_optimizer_class(analysis, issue) -> bool:
    """Whether the stepped object is built by a class of the project that derives from no
    optimizer (a wrapper, a weight average, a meta-learning step): its ``step()`` and what
    resets it are that class's own, which torch's semantics do not tell."""
    index = analysis.index
    keys = {k for k in _names_of_stepped(analysis, issue) | set(issue.names.values()) if k}
    for key in keys:
        cls = index.instance_class(key)
        if cls is not None and not index.is_optimizer_class(cls) or \
                index.built_by_a_class_from_elsewhere(key):
            return True
    return any(_built_by_a_callable_handed_in(analysis, node) for node in syntax.walk(analysis.tree)
               if type(node) is ast.Assign and len(node.targets) == 1
               and dotted(node.targets[0]) in keys)


def _built_by_a_callable_handed_in(analysis, assign: ast.Assign) -> bool:
    """``self.opt = self.opt_func(params, lr)`` or ``opt = make(params)`` with ``make`` a
    parameter: the optimizer's class is whatever the caller passed (a course's own `SGD`
    whose `step()` clears the gradients, say), which the file does not show."""
    call = assign.value
    if type(call) is not ast.Call:
        return False
    func, scope = call.func, analysis.function_of(assign)
    params = set(syntax.parameter_names(scope.args)) if isinstance(scope, syntax.FUNCTIONS) and \
        type(scope) is not ast.Lambda else set()
    if type(func) is ast.Name:
        return func.id in params and not _defaults_to_a_torch_optimizer(analysis, scope, func.id)
    if type(func) is not ast.Attribute or type(func.value) is not ast.Name \
            or func.value.id != "self":
        return False
    # `self.opt_func(...)` in a class whose every base is in this file, and no method of that
    # name: an attribute holding a callable (a framework's `self.optimizers()` is inherited)
    owner = _class_of(analysis, assign)
    classes = _classes_up(analysis, owner) if owner is not None else []
    return bool(classes) and not any(
        isinstance(item, syntax.FUNCTIONS) and item.name == func.attr
        for cls in classes for item in cls.body)


def _defaults_to_a_torch_optimizer(analysis, function: ast.AST, name: str) -> bool:
    """``def training(..., opt_func=torch.optim.Adam)``: the parameter's default is one of
    torch's optimizer classes, the class the function is written for (not an exercise's own
    `Adam` imported from its package)."""
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return any(arg.arg == name and names_an_optimizer_class(spelled := dotted(default) or "")
               and not analysis.index.class_from_elsewhere(spelled) for arg, default in pairs)


def _classes_up(analysis, cls: ast.ClassDef) -> list[ast.ClassDef]:
    """``cls`` and its bases, when every one of them is a class of this file (else the
    bases are unknown and ``[]``: anything may be inherited)."""
    found, pending = [], [cls]
    while pending:
        current = pending.pop()
        found.append(current)
        for base in current.bases:
            name = dotted(base) or ""
            if name == "object":
                continue
            known = analysis.index.classes.get(name)
            if known is None or known in found:
                return []
            pending.append(known)
    return found


def _carried_by_a_loop(analysis, issue) -> bool:
    """Whether the gradients are carried across the iterations of a loop the file shows
    (not one over the members of a list of optimizers), or of a hook a framework calls once
    per batch. A function judged alone, as if something elsewhere ran it once per batch,
    may have a caller that resets before each call."""
    for node in issue.loops:
        if type(node) is ast.While or isinstance(node, syntax.FOR_LOOPS) and not \
                rebinding.loop_members(node, dotted, analysis.index.is_optimizer):
            return True
        if isinstance(node, syntax.FUNCTIONS) and node.name in REPEATED_HOOKS:
            return True
    return False


@dataclass(frozen=True)
class _Stepped:
    names: set[str]  # how the analysis and the code spell the stepped optimizer
    weighed: set[int]  # ids of the functions the analysis followed to the finding
    owner: ast.ClassDef | None  # the class whose method steps
    loop: ast.AST | None  # the innermost loop the stale gradients are carried across


def resets_the_stepped_optimizer(analysis: Analysis, issue: Issue) -> bool:
    """A GC001 ``straight`` finding stands on evidence when the reset is the stepped
    optimizer's own (or that of the network it was built over), the step takes no
    argument of its own, and nothing between the two touches a gradient."""
    if issue.loop_carried or issue.at.partial:
        return False
    zero, step = issue.at.node, issue.step.node
    if not issue.at.via and (type(zero) is not ast.Call or type(zero.func) is not ast.Attribute):
        return False  # a loop over the parameters, a `.grad` write: what it covers is a guess
    stepped = _names_of_stepped(analysis, issue)
    reset = {issue.at.target, dotted(zero.func.value) if type(zero) is ast.Call
             and type(zero.func) is ast.Attribute else ""} - {""}
    held = {m for name in stepped for m in analysis.index.models_of(name)}
    if reset.isdisjoint(stepped | held) and not _the_only_network(analysis, reset, held, zero):
        return False
    if not _plain_step(analysis, step):
        return False
    if analysis.function_of(zero) is not analysis.function_of(step):
        return False
    return not any(_touches_gradients(node) for node in _between(analysis, zero, step))


def _resets(tree: ast.AST):
    """Every statement or call in ``tree`` that may clear or replace gradients."""
    for node in syntax.walk(tree):
        kind = type(node)
        if kind is ast.Call:
            name = syntax.callee_name(node)
            if ("zero" in name and "grad" in name) or name == "zero" or (
                    name in _GRAD_REWRITES and _on_a_gradient(node.func)):
                yield node
        elif kind in (ast.Assign, ast.AugAssign, ast.AnnAssign):
            targets = node.targets if kind is ast.Assign else [node.target]
            if any(type(t) is ast.Attribute and t.attr in ("grad", "_grad") for t in targets):
                yield node


def _names_of_stepped(analysis, issue) -> set[str]:
    """The stepped optimizer as the analysis keys it and as the step's own code spells it
    (``trainer.optimizer`` when reached from a caller, ``self.optimizer`` in the method)."""
    call = issue.step.node
    spelled = analysis.optimizer_text(issue.step) \
        if type(call) is ast.Call and type(call.func) is ast.Attribute else ""
    return {issue.optimizer, issue.step.target, spelled}


def _tied_elsewhere(analysis, node: ast.AST, stepped: _Stepped) -> bool:
    """Whether ``node`` can only reset something other than the stepped optimizer:
    - a value local to its own function (a parameter, a name it binds), which that function
      cannot hand to the loop;
    - state on ``self`` in a method of a class unrelated to the stepping one (another object);
    - the stepped optimizer's own spelling, or another plainly named optimizer, in a function
      the analysis followed (it judged that reset there);
    - another optimizer built in this file, or a network only another one holds.
    State kept on ``self`` or in a global otherwise outlives the call, a collection is read
    by a key the file may not show, and a helper named for zeroing may reach anything:
    those may be the missing reset."""
    target = _reset_target(node)
    if target is None:
        return False
    receiver, scope, root = dotted(target) or "", analysis.function_of(node), _root_name(target)
    if root not in (None, "self", "cls") and isinstance(scope, syntax.FUNCTIONS) \
            and root in syntax.bound_names(scope):
        return True
    if root == "self" and _unrelated(analysis, _class_of(analysis, node), stepped.owner):
        return True
    index, followed = analysis.index, id(scope) in stepped.weighed
    if not followed and (_runs_apart(analysis, scope, stepped.loop)
                         or _overrides_the_followed(analysis, scope, stepped)):
        return True
    if receiver in stepped.names:
        return followed
    if followed and dotted(target) and index.is_optimizer(receiver):
        # `self.critic.optimizer` beside the actor's: no key, no collection; unless the two
        # may be one object under two names
        return not _may_be_the_stepped(analysis, node, receiver, stepped)
    return receiver in index.optimizers or any(
        receiver in index.models_of(other) for other in index.optimizers - stepped.names) and not any(
        receiver in index.models_of(name) for name in stepped.names)


def _may_be_the_stepped(analysis, node: ast.AST, receiver: str, stepped: _Stepped) -> bool:
    """Whether an attribute reset beside the stepped one may hold the same optimizer: both
    bound from one name (``self.optimizer_D = optimizer_D`` in a base class,
    ``self.Discriminator_opt = optimizer_D`` here), or the reset one bound nowhere in this
    file while its class derives from another, which may bind it to anything."""
    owner, _, _ = receiver.rpartition(".")
    siblings = {n for n in stepped.names if n and n.rpartition(".")[0] == owner}
    if not owner or not siblings:
        return False
    sources = _attribute_sources(analysis)
    if receiver not in sources:
        cls = _class_of(analysis, node)
        return cls is not None and any(dotted(base) != "object" for base in cls.bases)
    handed = sources[receiver] - {None}
    return any(not handed.isdisjoint(sources.get(name, ())) for name in siblings)


def _attribute_sources(analysis) -> dict[str, set[str | None]]:
    """What this file assigns to each dotted attribute: the names it hands over
    (``self.opt = opt``), None for any other value; what hollowed bodies assigned counts."""
    def index(tree: ast.AST) -> dict[str, set[str | None]]:
        found = {key: set(values) for key, values in hollowed_attribute_values(tree).items()}
        for n in syntax.walk(tree):
            if type(n) is ast.Assign:
                for target in n.targets:
                    for element, value in syntax.paired(target, n.value):
                        if type(element) is ast.Attribute and (key := dotted(element)):
                            found.setdefault(key, set()).add(value.id if type(value) is ast.Name else None)
        return found
    return syntax.memoised("attribute sources", analysis.tree, index)


def _runs_apart(analysis, scope: ast.AST | None, loop: ast.AST | None) -> bool:
    """Whether ``scope`` runs only where the script's top level calls it, outside the
    loop that carries the stale gradients: ``train()`` and ``distill()`` of one script, each
    with its own loop, called in turn. Its reset cannot run inside those loops. Any other
    mention of its name (handed to a framework, a hook, ``getattr``) may run it anywhere."""
    if loop is None or not isinstance(scope, syntax.FUNCTIONS) or type(scope) is ast.Lambda:
        return False
    index, holder = analysis.index, analysis.index.parents.get(id(scope))
    if type(holder) is ast.ClassDef:
        if not _classes_up(analysis, holder) or index.parents.get(id(holder)) is not analysis.tree:
            return False  # a base out of sight may call the method
    elif holder is not analysis.tree:
        return False
    name, sites = scope.name, []
    if mentioned_in_hollowed(analysis.tree, name):
        return False
    for node in syntax.walk(analysis.tree):
        kind = type(node)
        if kind is ast.Constant and node.value == name:
            return False
        if kind is ast.Name and node.id == name or kind is ast.Attribute and node.attr == name:
            call = index.parents.get(id(node))
            if type(call) is not ast.Call or call.func is not node:
                return False
            if kind is ast.Attribute and not index.may_run_own_code(call):
                continue  # `self.encoder.train()`: nn.Module's method, not this one
            sites.append(call)
    return bool(sites) and all(
        analysis.function_of(site) is None and not index.is_inside(site, loop) for site in sites)


def _overrides_the_followed(analysis, scope: ast.AST | None, stepped: _Stepped) -> bool:
    """Whether ``scope`` and a method the analysis followed to the finding are one method of
    two classes, one derived from the other, so that an object runs only one of them
    (``Peer.train`` beside ``Binary.train``, unless one calls the other through ``super()``):
    the subclass's objects are judged on their own."""
    index, owner = analysis.index, stepped.owner
    holder = index.parents.get(id(scope)) if scope is not None else None
    if owner is None or type(holder) is not ast.ClassDef or holder is owner or (
            holder.name not in index.subclasses(owner.name)
            and owner.name not in index.subclasses(holder.name)):
        return False
    followed = index.class_method(owner.name, scope.name)  # `scope` itself where inherited
    return followed not in (None, scope) and id(followed) in stepped.weighed and not any(
        _calls_super(method, scope.name) for method in (followed, scope))


def _calls_super(method: ast.AST, name: str) -> bool:
    return any(type(n) is ast.Call and type(n.func) is ast.Attribute and n.func.attr == name
               and type(n.func.value) is ast.Call and syntax.callee_name(n.func.value) == "super"
               for n in syntax.walk(method))


def _class_of(analysis, node: ast.AST) -> ast.ClassDef | None:
    while node is not None and type(node) is not ast.ClassDef:
        node = analysis.index.parents.get(id(node))
    return node


def _unrelated(analysis, one: ast.ClassDef | None, other: ast.ClassDef | None) -> bool:
    """Two different classes of this file, neither derived from the other here."""
    if one is None or other is None or one is other:
        return False
    index = analysis.index
    return one.name not in index.subclasses(other.name) and other.name not in index.subclasses(one.name)


def _reset_target(node: ast.AST) -> ast.AST | None:
    """What a reset acts on: ``opt`` in ``opt.zero_grad()``, ``p`` in ``p.grad = None`` or
    ``p.grad.zero_()``; None for a helper called for the purpose (``zero_grads(model)``)."""
    if type(node) is ast.Call:
        func = node.func
        if type(func) is not ast.Attribute or (func.attr != "zero_grad" and not _on_a_gradient(func)):
            return None
        return func.value
    targets = node.targets if type(node) is ast.Assign else [node.target]
    return next((t.value for t in targets if type(t) is ast.Attribute), None)


def _root_name(node: ast.AST) -> str | None:
    while type(node) in (ast.Attribute, ast.Subscript, ast.Call):
        node = node.func if type(node) is ast.Call else node.value
    return node.id if type(node) is ast.Name else None


def _the_only_network(analysis, reset: set[str], held: set[str], zero: ast.AST) -> bool:
    """A whole network reset where the file does not say what the stepped optimizer holds
    (built by a helper, from parameter groups), and its function runs no other network on
    data: the network it trains is that one."""
    index = analysis.index
    networks = [r for r in reset if index.is_a_network(r) and not index.part_of_a_model(r)]
    if held or len(networks) != 1:
        return False
    network, scope = networks[0], analysis.function_of(zero) or analysis.tree
    return all(_related(k, network) for k in index.networks_run(scope))


def _related(one: str, other: str) -> bool:
    return one == other or one.startswith(f"{other}.") or other.startswith(f"{one}.")


def _plain_step(analysis, step: ast.AST) -> bool:
    """``opt.step()``, or ``scaler.step(opt)``: no objective or flag of the step's own."""
    if type(step) is not ast.Call or step.keywords:
        return False
    args = syntax.positional(step)
    receiver = dotted(step.func.value) if type(step.func) is ast.Attribute else None
    return not args or (len(args) == 1 and not analysis.index.is_optimizer(receiver or ""))


def _between(analysis, first: ast.AST, last: ast.AST):
    """The nodes of the function holding both that lie after ``first`` and before ``last``."""
    scope = analysis.function_of(first) or analysis.tree
    start = (first.end_lineno, first.end_col_offset)
    stop = (last.lineno, last.col_offset)
    for node in syntax.walk(scope):
        at = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        if start <= at < stop:
            yield node


def _touches_gradients(node: ast.AST) -> bool:
    """Whether ``node`` may change what the step applies: a write to a gradient
    (``p.grad = g``, ``p.grad.copy_(g)``), a backward pass, or a helper named for gradients
    that neither clips nor only reads them. Reading a gradient (its norm, a log) changes
    nothing."""
    if type(node) is ast.Attribute and node.attr in ("grad", "_grad"):
        return type(node.ctx) is not ast.Load
    if type(node) is ast.Call:
        name = syntax.callee_name(node)
        if name.endswith("_") and _on_a_gradient(node.func) or name == "backward":
            return True
        return "grad" in name and "clip" not in name and name not in _HARMLESS
    return False


def _on_a_gradient(func: ast.AST) -> bool:
    """``p.grad.zero_``, ``p.grad.data.zero_``: a method called on a gradient."""
    value = getattr(func, "value", None)
    while type(value) is ast.Attribute:
        if value.attr in ("grad", "_grad"):
            return True
        value = value.value
    return False
