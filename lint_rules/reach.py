"""Which models a backward pass reaches: evidence for gradients that cross networks.

A GAN's generator loss is computed through the discriminator (``netD(netG(z))``), so its
backward pass leaves gradients in the discriminator's parameters too; an actor's loss goes
through the critic. When the code resets the discriminator only after its own step, those
gradients are still there when the discriminator's next backward adds to them, and its
next step applies both. Telling this from two unrelated models trained side by side needs
evidence of where a loss came from: the calls of models (``netD(...)``, ``self.critic(...)``)
in the expressions that bound it, followed back through the names they read, and cut at
``.detach()``, ``torch.no_grad()`` and ``requires_grad`` switches. Without evidence the
answer is "unknown", and the rules treat an unknown crossing as no crossing.

>>> tree = ast.parse("fake = netG(z)\\ng_loss = bce(netD(fake), ones)\\ng_loss.backward()\\n")
>>> backward = tree.body[2].value
>>> models_feeding(backward, tree, {"netD", "netG"}, {})
{'netD': frozenset({'netG'}), 'netG': frozenset()}
"""
from __future__ import annotations

import ast

from lint_rules import events as ev
from lint_rules import syntax
from lint_rules.bindings import Bindings, graph_free_context

MAX_DEPTH = 8  # bindings followed back from the backward call
# Methods of a model that do not run it. Any other method called on a model whose result
# feeds a loss (`policy.evaluate_action(s)`, `vae.encode(x)`, `actor.sample(s)`) runs some of
# its layers: a module's own methods are how RL and generative code call their networks.
_DOES_NOT_RUN = frozenset({
    "parameters", "named_parameters", "buffers", "named_buffers", "modules", "named_modules",
    "children", "named_children", "state_dict", "load_state_dict", "train", "eval", "to",
    "cuda", "cpu", "half", "float", "double", "bfloat16", "type", "zero_grad", "apply",
    "requires_grad_", "share_memory", "register_buffer", "register_parameter",
    "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
    "add_module", "get_parameter", "get_buffer", "get_submodule", "extra_repr",
})
_CUTS = frozenset({"detach", "item", "detach_", "numpy", "tolist"})


def models_feeding(call: ast.Call, scope: ast.AST, models: set[str],
                   parents: dict[int, ast.AST], bindings: Bindings | None = None,
                   resolve=None, switches=None) -> dict[str, frozenset[str]]:
    """Each model in ``models`` whose calls feed the loss that ``call`` backpropagates,
    within ``scope`` (a function or module), with the models whose outputs went into its
    inputs on the way (``{"netD": {"netG"}, "netG": set()}`` for ``bce(netD(netG(z)))``):
    a discriminator's loss reaches the generator only through the discriminator. Empty
    when there is no evidence. ``resolve`` names the method of the same object that a
    ``self.policy_loss(s)`` call runs (its returned values are followed too). ``switches``
    answers ``switches_requires_grad`` for a scope (a caller asking about many backward
    passes of one scope keeps the answers)."""
    switches = switches or switches_requires_grad
    loss = ev.backward_loss(call)
    if loss is None or switches(scope):
        return {}
    upstream: dict[str, set[str]] = {}
    _follow([(loss, call, 0, frozenset())], scope, models, parents,
            bindings or Bindings(scope, parents), upstream, (resolve, switches), MAX_METHOD_HOPS)
    return {model: frozenset(fed) for model, fed in upstream.items()}


MAX_METHOD_HOPS = 2  # methods of the same object followed into, one inside the other


def _follow(pending: list, scope: ast.AST, models: set[str], parents: dict[int, ast.AST],
            bindings: Bindings, upstream: dict[str, set[str]], resolve, hops: int) -> None:
    # `resolve`: (the method a `self.f(...)` call runs, or None; switches_requires_grad)
    seen: set[tuple[int, frozenset[str]]] = set()
    while pending:
        expr, at, depth, consumers = pending.pop()
        if resolve[0] is not None and hops:
            _into_methods(expr, consumers, models, parents, upstream, resolve, hops)
        for name, model, around in _reads(expr, models):
            around = consumers | around
            if model is not None:
                upstream.setdefault(model, set())
                for consumer in around - {model}:
                    upstream.setdefault(consumer, set()).add(model)
                continue
            binding = bindings.reaching(name, at)
            value = getattr(binding, "value", None)
            if value is None or (id(binding), around) in seen or depth >= MAX_DEPTH:
                continue
            seen.add((id(binding), around))
            if not graph_free_context(binding, parents, stop=scope):
                pending.append((value, binding, depth + 1, around))


def _into_methods(expr: ast.AST, consumers: frozenset[str], models: set[str],
                  parents: dict[int, ast.AST], upstream: dict[str, set[str]], resolve,
                  hops: int) -> None:
    """``policy_loss = self.get_policy_loss(states)``: what that method returns is followed
    in its own body (``return -self.q(s, self.policy(s)).mean()``)."""
    for node in syntax.walk(expr):
        if type(node) is not ast.Call or type(node.func) is not ast.Attribute \
                or type(node.func.value) is not ast.Name or node.func.value.id != "self" \
                or node.func.attr in _CUTS:
            continue
        method = resolve[0](node)
        if method is None or resolve[1](method):
            continue
        returned = [(r.value, r, 0, consumers) for r in syntax.walk(method)
                    if type(r) is ast.Return and r.value is not None
                    and not graph_free_context(r, parents, stop=method)]
        if returned:
            _follow(returned, method, models, parents, Bindings(method, parents), upstream,
                    resolve, hops - 1)


def _reads(expr: ast.AST, models: set[str]) -> list[tuple[str, str | None, frozenset[str]]]:
    """(name read, None, models it is fed to) and (name, model called, models that model's
    output is fed to) in ``expr``, not below a cut."""
    out: list[tuple[str, str | None, frozenset[str]]] = []
    stack: list[tuple[ast.AST, frozenset[str]]] = [(expr, frozenset())]
    while stack:
        node, consumers = stack.pop()
        kind = type(node)
        if kind is ast.Call:
            func = node.func
            if type(func) is ast.Attribute and func.attr in _CUTS:
                continue  # `fake.detach()`: nothing flows back through it
            called = ev.dotted(func)
            model = None
            if called in models:
                model = called
            elif type(func) is ast.Attribute and func.attr not in _DOES_NOT_RUN \
                    and ev.dotted(func.value) in models:
                model = ev.dotted(func.value)
            if model is not None:
                out.append((model, model, consumers))
            inner = consumers | {model} if model is not None else consumers
            stack.extend((a, inner) for a in node.args)
            stack.extend((k.value, inner) for k in node.keywords)
            if type(func) is ast.Attribute:
                stack.append((func.value, consumers))  # `loss.mean()` reads loss
            continue
        if kind is ast.Name:
            out.append((node.id, None, consumers))
            continue
        if kind is ast.Attribute and node.attr == "data":
            continue  # `fake.data`: the tensor without its history, as `fake.detach()`
        if isinstance(node, syntax.SCOPES):
            continue
        stack.extend((c, consumers) for c in syntax.children(node))
    return out


_SWITCHES = frozenset({"requires_grad_", "set_requires_grad", "freeze", "unfreeze",
                       "toggle_optimizer"})


def switches_requires_grad(scope: ast.AST) -> bool:
    """Whether the scope turns gradients of some parameters off and on (``requires_grad =
    False``, ``requires_grad_(False)``, CycleGAN's ``set_requires_grad(net, False)``): then which
    network a loss reaches depends on the moment, and we claim nothing."""
    inputs = input_tensors(scope)
    for node in syntax.walk(scope):
        kind = type(node)
        if kind is ast.Assign and any(type(t) is ast.Attribute and t.attr == "requires_grad"
                                      and not (type(t.value) is ast.Name and t.value.id in inputs)
                                      for t in node.targets):
            return True
        if kind is ast.Call and syntax.callee_name(node) in _SWITCHES \
                and not _on_a_computed_tensor(node, scope):
            return True
    return False


def _on_a_computed_tensor(call: ast.Call, scope: ast.AST) -> bool:
    """``(alpha * real + (1 - alpha) * fake).requires_grad_(True)``, or the same on a name the
    scope binds only to arithmetic: a gradient penalty's interpolates, never a parameter."""
    func = call.func
    if type(func) is not ast.Attribute or func.attr != "requires_grad_":
        return False
    receiver = func.value
    if type(receiver) in (ast.BinOp, ast.UnaryOp):
        return True
    return type(receiver) is ast.Name and receiver.id in _arithmetic_names(scope)


def _arithmetic_names(scope: ast.AST) -> set[str]:
    """Names every binding of which in ``scope`` is an arithmetic expression's value."""
    arithmetic, other = set(), set()
    for node in syntax.walk(scope):
        if isinstance(node, syntax.FUNCTIONS):
            other.update(syntax.parameter_names(node.args))
        arithmetic_value = type(node) is ast.Assign and type(node.value) in (ast.BinOp, ast.UnaryOp)
        for target in syntax.assignment_targets(node):
            (arithmetic if arithmetic_value else other).update(syntax.stored_names(target))
    return arithmetic - other


def input_tensors(scope: ast.AST) -> set[str]:
    """Names this scope binds only by computing a value (``interpolates = x + alpha * d``),
    never as a loop's target (``for p in model.parameters():``) nor by naming an attribute
    (``w = model.fc.weight``): switching their ``requires_grad`` (a gradient penalty's input)
    leaves every parameter as it was."""
    computed, other = set(), set()
    for node in syntax.walk(scope):
        if type(node) is ast.Assign:
            names = {t.id for t in node.targets if type(t) is ast.Name}
            (computed if type(node.value) in (ast.BinOp, ast.Call) else other).update(names)
        elif isinstance(node, syntax.FOR_LOOPS):
            other.update(syntax.stored_names(node.target))
    return computed - other


def made_to_require_grad(scope: ast.AST, name: str) -> bool:
    """Whether ``scope`` sets ``name.requires_grad = True`` or calls ``name.requires_grad_()``."""
    for node in syntax.walk(scope):
        if type(node) is ast.Assign and syntax.constant(node.value) is True and any(
                type(t) is ast.Attribute and t.attr == "requires_grad" and ev.dotted(t.value) == name
                for t in node.targets):
            return True
        if type(node) is ast.Call and type(node.func) is ast.Attribute and node.func.attr == "requires_grad_" \
                and ev.dotted(node.func.value) == name \
                and (not node.args or syntax.constant(node.args[0]) is True):
            return True
    return False
