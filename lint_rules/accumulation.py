"""Places where a loop keeps the backpropagated loss, and with it its autograd graph (GC004).

Within one unit (the module body or a function, nested definitions excluded), a *loss* is the
value that a ``backward()`` call backpropagates: a name bound by one assignment (a name bound
twice is two values, so a validation ``loss`` is not the training one), reached through
arithmetic and graph-keeping tensor methods (``loss.div(k).backward()`` backpropagates
``loss``). A function whose ``return`` hands back the tensor it backpropagated makes its
callers' results losses too. A loop *keeps* a loss when, on every iteration,

- it adds it to a running total (``total += loss``, ``total = total + loss``),
- appends it to a list, alone or inside a dict or tuple (``outputs.append({"loss": loss})``),
- or hands it to a method of the file's own class that adds it to an attribute
  (``meter.update(loss)`` with ``def update(self, val): self.sum += val``),

and nothing in that loop starts the total or the list again. Nothing is kept under
``torch.no_grad()`` or ``inference_mode()``, and ``.item()``, ``.detach()``, ``float(...)``
and their kin drop the graph.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import ast

from lint_rules import events as ev
from lint_rules import syntax
from lint_rules.bindings import Bindings, graph_free_context, own_nodes as _own_nodes
from lint_rules.narrowing import hollowed_attribute_values

_LOOPS = syntax.LOOPS
# Tensor methods whose result still references the graph of the tensor they are called on.
_GRAPH_KEEPING = frozenset({
    "div", "mul", "add", "sub", "mean", "sum", "float", "double", "half", "bfloat16", "to",
    "view", "reshape", "squeeze", "unsqueeze", "clone", "contiguous", "neg", "abs", "pow",
    "sqrt", "exp", "log", "div_", "mul_", "add_", "sub_", "cuda",
})
_KEEPERS = frozenset({"append", "extend", "insert"})
MAX_DERIVATIONS = 64  # bindings followed back from a backward's loss (a sum of many terms)
HANDFUL = 16  # `range(n)` with a literal n up to this is a fixed handful of iterations


@dataclass(frozen=True)
class RunningTotal:
    """``statement`` keeps the loss ``name`` (at the ``hits`` expressions) in ``target``; ``how``
    says which way: ``"sum"``, ``"append"`` or ``"method"``."""

    statement: ast.AST
    target: ast.AST
    name: str
    backward: ast.Call
    hits: tuple[ast.expr, ...]  # the names, or the entries read from them (`losses["total"]`)
    how: str = "sum"


def running_totals(analysis) -> Iterator[RunningTotal]:
    """Every place a loop keeps a loss, unit by unit, in source order."""
    units: dict[int, ast.AST] = {}
    for call in analysis.index.backward_calls:
        unit = analysis.function_of(call)
        if isinstance(unit, (ast.Lambda, ast.ClassDef)):
            continue
        unit = unit or analysis.tree
        units[id(unit)] = unit
    returners = _loss_returners(analysis, units)
    for unit in _callers_of(analysis, returners):
        units.setdefault(id(unit), unit)
    found = [t for unit in units.values() for t in _Unit(analysis, unit, returners).totals()]
    yield from sorted(found, key=lambda t: (t.statement.lineno, t.statement.col_offset))


def _loss_returners(analysis, units: dict[int, ast.AST]) -> dict[str, ast.Call]:
    """Functions of the module whose ``return`` hands back the tensor they backpropagated,
    with that backward call."""
    out = {}
    for unit in units.values():
        if isinstance(unit, syntax.FUNCTIONS) and analysis.index.parents.get(id(unit)) is analysis.tree \
                and id(unit) in analysis.index.returning():
            backward = _Unit(analysis, unit, {}).returned_loss()
            if backward is not None:
                out[unit.name] = backward
    return out


def _callers_of(analysis, functions: dict[str, ast.Call]) -> list[ast.AST]:
    if not functions:
        return []
    callers = []
    for node in ast.walk(analysis.tree):
        if type(node) is ast.Call and type(node.func) is ast.Name and node.func.id in functions:
            unit = analysis.function_of(node)
            if not isinstance(unit, (ast.Lambda, ast.ClassDef)):
                callers.append(unit or analysis.tree)
    return callers


def _keeping_positions(cls: ast.ClassDef, method: str) -> tuple[int, ...]:
    """Positions of the arguments that ``cls.method`` adds into an attribute of ``self``
    (``def update(self, val, n=1): self.sum += val * n`` keeps argument 0)."""
    for item in cls.body:
        if isinstance(item, syntax.FUNCTIONS) and item.name == method:
            params = [a.arg for a in item.args.args][1:]
            kept = {n.id for node in syntax.walk(item)
                    if type(node) is ast.AugAssign and type(node.op) is ast.Add
                    and (ev.dotted(node.target) or "").startswith("self.")
                    for n in _value_names(node.value)}
            # `value = float(value)` first: what is added is no longer what was passed
            rebound = {name for node in syntax.walk(item) if type(node) is ast.Assign
                       for target in node.targets for name in syntax.stored_names(target)}
            return tuple(i for i, p in enumerate(params) if p in kept - rebound)
    return ()


class _Unit:
    """One function (or the module body) and the losses it backpropagates."""

    def __init__(self, analysis, unit: ast.AST, returners: dict[str, ast.Call]) -> None:
        self.analysis = analysis
        self.unit = unit
        self.returners = returners
        self.nodes = list(_own_nodes(unit))
        # (binding, name) of a loss -> its backward: in `loss, n_word = f(...)` the two names
        # are two values, and so are two parameters (both bound before the function runs)
        self.losses: dict[tuple[ast.AST | None, str], ast.Call] = {}
        self.loss_names: set[str] = set()
        self._carriers: set[tuple] = set()  # losses reached other than as a product's factor
        self._backprop_names: set[str] | None = None
        if not any(map(_may_keep, self.nodes)):
            return  # nothing here could keep a value, nor hand one back: no bindings needed
        self.bindings = Bindings(unit, analysis.index.parents, self.nodes)
        for node in self.nodes:
            if type(node) is ast.Call and ev.is_backward_call(node) and \
                    not analysis.index.own_backward(node):
                self._note_backward(node)
        self._note_loss_returning_calls()

    def _note_backward(self, call: ast.Call) -> None:
        loss = ev.backward_loss(call)
        pending = _with_factors(loss, call, False, self._computed) if loss is not None else []
        seen: set[tuple] = set()
        while pending and len(seen) < MAX_DERIVATIONS:
            name, at, factor = pending.pop()
            # each binding that may reach the backward (`if a: loss = f(x) else: loss = g(x)`)
            for binding in self.bindings.reaching_all(name.id, at):
                if (binding, name.id, factor) in seen or self._detached(binding) \
                        or self._other_arm(binding, at):
                    continue
                seen.add((binding, name.id, factor))
                self.losses.setdefault((binding, name.id), call)
                self.loss_names.add(name.id)
                if not factor:
                    self._carriers.add((binding, name.id))
                # `loss = loss / k` before the backward: the loss it was computed from is in
                # the same graph (`total += loss` above that line keeps it)
                value = getattr(binding, "value", None)
                if type(binding) is ast.Assign and value is not None:
                    pending += [(n, b, f) for n, b, f in _with_factors(value, binding, factor, self._computed)
                                if self._computed(n, binding)]

    def _other_arm(self, binding: ast.AST | None, use: ast.AST) -> bool:
        """Whether ``binding`` sits in one arm of an ``if`` and ``use`` in the other: the
        fp16 branch's backward never sees the loss the other branch bound."""
        parents = self.analysis.index.parents
        child, node = binding, parents.get(id(binding)) if binding is not None else None
        while node is not None:
            if type(node) is ast.If and self.analysis.index.is_inside(use, node):
                in_body = any(child is s for s in node.body)
                return any(self.analysis.index.is_inside(use, s) for s in (node.orelse if in_body else node.body))
            child, node = node, parents.get(id(node))
        return False

    def _only_a_factor(self, name: ast.Name, at: ast.AST) -> bool:
        """Whether every way ``name`` reaches a backpropagated loss at ``at`` is as a factor
        of a product (``-log_prob * reward``, ``weights["kl"] * kl``, ``loss * mask``):
        such a value may be a plain number or a mask, so keeping it is no evidence."""
        return all((binding, name.id) not in self._carriers
                   for binding in self.bindings.reaching_all(name.id, at))

    def _note_loss_returning_calls(self) -> None:
        returners = self.returners
        for node in self.nodes:
            if type(node) is ast.Assign and len(node.targets) == 1 and type(node.targets[0]) is ast.Name \
                    and type(node.value) is ast.Call and type(node.value.func) is ast.Name \
                    and node.value.func.id in returners:
                self.losses.setdefault((node, node.targets[0].id), returners[node.value.func.id])
                self.loss_names.add(node.targets[0].id)

    def _computed(self, name: ast.Name, at: ast.AST, depth: int = 3) -> bool:
        """Whether ``name`` holds a value computed here (a model's output, a loss, a field of
        one: ``outputs.loss``), not a parameter or a setting such as ``k`` in ``loss = loss
        / k`` or ``k = args.accum``."""
        binding = self.bindings.reaching(name.id, at)
        value = getattr(binding, "value", None)
        if type(binding) not in (ast.Assign, ast.AugAssign) or value is None or depth == 0:
            return False
        while type(value) in (ast.Attribute, ast.Subscript):
            value = value.value
        if type(value) is ast.Name:  # `loss = outputs.loss`: as computed as `outputs` is
            return self._computed(value, binding, depth - 1)
        if type(value) in (ast.BinOp, ast.UnaryOp):
            # `ratio = self.gen_batch_size / self.batch_size` is arithmetic on settings:
            # computed only where it calls something or reads a computed name
            return any(type(n) is ast.Call and not _plain_number_call(n)
                       or type(n) is ast.Name and n.id != "self" and self._computed(n, binding, depth - 1)
                       for n in syntax.walk(value))
        return type(value) is ast.Call and not _plain_number_call(value)

    def _detached(self, binding: ast.AST | None) -> bool:
        if binding is None:
            return False
        value = getattr(binding, "value", None)
        return (value is not None and _detaches(value)) or graph_free_context(binding, self.analysis.index.parents)

    def returned_loss(self) -> ast.Call | None:
        """The backward call of the tensor a ``return`` hands back, if any."""
        for node in self.nodes:
            if type(node) is ast.Return and node.value is not None:
                backward = self._backward_of(self._loss_hits(node.value, node), node)
                if backward is not None:
                    return backward
        return None

    def totals(self) -> Iterator[RunningTotal]:
        if not self.losses or graph_free_context(self.unit, self.analysis.index.parents):
            return
        repeated = isinstance(self.unit, syntax.FUNCTIONS) and self.unit.name == "training_step"
        for node in self.nodes:
            kept = self._kept_value(node)
            if kept is None:
                continue
            target, value, how = kept
            if ev.dotted(target) in self.loss_names or ev.dotted(target) in self._backpropagated():
                continue  # the total (or the list) is backpropagated itself: kept on purpose
            loop, within_step = self._loop_of(node)
            if loop is None and not repeated:
                continue
            if graph_free_context(node, self.analysis.index.parents, stop=self.unit):
                continue
            if loop is not None and (self._restarted_in(loop, target, node)
                                     or self._first_iteration_only(loop, node)):
                continue
            hits = self._loss_hits(value, node)
            backward = self._backward_of(hits, node)
            if hits and backward is not None and (loop is None or self.analysis.index.is_inside(backward, loop)):
                # (a loop that does not run the backward keeps one graph, not one per step)
                if within_step and self._scaled(backward):
                    continue  # k micro-batches of one step (`loss / k`), freed at the step
                if all(self._only_a_factor(h, node) for h in hits):
                    continue  # a reward, a mask or a weight kept per step, not the loss
                kept_exprs = tuple(map(self._entry_of, hits))
                yield RunningTotal(node, target, self._text(kept_exprs[0]), backward, kept_exprs, how)

    def _entry_of(self, name: ast.Name) -> ast.expr:
        """The whole entry read from ``name`` (``losses["total"]`` for ``losses``): that is
        the tensor kept, and what a ``.detach()`` belongs after."""
        parents = self.analysis.index.parents
        node: ast.expr = name
        parent = parents.get(id(node))
        while type(parent) is ast.Subscript and parent.value is node:
            node, parent = parent, parents.get(id(parent))
        return node

    def _text(self, node: ast.expr) -> str:
        return node.id if type(node) is ast.Name else " ".join(self.analysis.text.segment(node).split())

    def _scaled(self, backward: ast.Call) -> bool:
        """Whether the backpropagated loss is divided (`loss / k`, `loss.div(k)`), here or
        where it was bound: the idiom of a window of k micro-batches."""
        loss = ev.backward_loss(backward)
        if loss is None:
            return False
        values = [loss] + [binding.value for name in _value_names(loss)
                           for binding in self.bindings.reaching_all(name.id, backward)
                           if type(binding) is ast.Assign]
        return any(type(n) is ast.BinOp and type(n.op) is ast.Div
                   or type(n) is ast.Call and syntax.callee_name(n) in ("div", "div_")
                   for value in values for n in syntax.walk(value))

    def _backward_of(self, hits: list[ast.Name], at: ast.AST) -> ast.Call | None:
        for name in hits:
            backward = self._loss_at(name.id, at)
            if backward is not None:
                return backward
        return None

    def _loss_at(self, name: str, at: ast.AST) -> ast.Call | None:
        """The backward of the loss ``name`` may hold at ``at``: on some path, a binding that
        reaches there is one (a detach on one branch leaves the other branch's loss), unless
        that path also skips the backward (`if with_backward: loss.backward(); loss =
        loss.detach()` keeps, on the other path, a graph nobody backpropagated here)."""
        bindings = self.bindings.reaching_all(name, at)
        for position, binding in enumerate(bindings):
            backward = self.losses.get((binding, name))
            if backward is not None and (
                    position == 0 or not self._skipped_with(bindings[0], backward, at)):
                return backward
        return None

    def _skipped_with(self, rebinding: ast.AST | None, backward: ast.Call, use: ast.AST) -> bool:
        """Whether the branch that holds ``rebinding`` (and not ``use``) holds ``backward``."""
        parents = self.analysis.index.parents
        branch = parents.get(id(rebinding)) if rebinding is not None else None
        while branch is not None and (type(branch) is not ast.If or self.analysis.index.is_inside(use, branch)):
            branch = parents.get(id(branch))
        return branch is not None and self.analysis.index.is_inside(backward, branch)

    def _backpropagated(self) -> set[str]:
        """Every name read by an expression a backward call backpropagates, calls included
        (`torch.stack(task_losses).mean().backward()` backpropagates `task_losses`), or by
        the bindings it was derived from (`meta_loss = torch.stack(task_losses).mean()`)."""
        if self._backprop_names is None:
            losses = [ev.backward_loss(node) for node in self.nodes
                      if type(node) is ast.Call and ev.is_backward_call(node)]
            losses += [binding.value for binding, _ in self.losses if type(binding) is ast.Assign]
            self._backprop_names = {n.id for loss in losses if loss is not None
                                    for n in syntax.walk(loss) if type(n) is ast.Name}
        return self._backprop_names

    def _first_iteration_only(self, loop: ast.AST, node: ast.AST) -> bool:
        """``if step == 0: outputs.append(loss)``, on the carrying loop's own counter."""
        counter = _counter_of(loop)
        if counter is None:
            return False
        parents = self.analysis.index.parents
        child, parent = node, parents.get(id(node))
        while parent is not None and parent is not loop:
            if type(parent) is ast.If and syntax.first_iteration_test(parent.test, counter) and \
                    syntax.first_iteration_test(parent.test, counter, False) is False and \
                    any(stmt is child for stmt in parent.body):
                return True
            child, parent = parent, parents.get(id(parent))
        return False

    def _kept_value(self, node: ast.AST) -> tuple[ast.AST, ast.AST, str] | None:
        """(where it is kept, the value kept, how) for a statement that keeps a value."""
        kind = type(node)
        if kind is ast.AugAssign and type(node.op) is ast.Add:
            return node.target, node.value, "sum"
        if kind is ast.Assign and len(node.targets) == 1 and type(node.value) is ast.BinOp \
                and type(node.value.op) is ast.Add and ev.dotted(node.targets[0]) is not None \
                and _the_total_scaled(node.value.left, ev.dotted(node.targets[0])):
            return node.targets[0], node.value.right, "sum"
        if kind is not ast.Expr or type(node.value) is not ast.Call \
                or type(node.value.func) is not ast.Attribute:
            return None
        call = node.value
        args = syntax.positional(call)
        if call.func.attr in _KEEPERS and args:
            if not self._holds_a_list(call.func.value, node):
                return None  # a meter, a queue or an object we cannot see: unknown, so silent
            return call.func.value, args[-1], "append"
        cls = self._class_of(call.func.value)
        positions = _keeping_positions(cls, call.func.attr) if cls is not None else ()
        kept = [args[i] for i in positions if i < len(args)]
        return (call.func.value, kept[0], "method") if kept else None

    def _holds_a_list(self, receiver: ast.AST, at: ast.AST) -> bool:
        """Whether ``receiver`` is shown to be a list (or a deque) that keeps what it is
        given: a name or attribute every assignment of which builds one, or an entry of a
        dict or list built of them. MONAI's ``CumulativeAverage().append`` detaches."""
        if type(receiver) is ast.Subscript:  # an entry: what the container was built of
            return self._holds_lists(receiver.value, at)
        values = self._assigned_values(receiver, at)
        return bool(values) and all(_makes_a_list(v) for v in values)

    def _holds_lists(self, container: ast.AST, at: ast.AST) -> bool:
        """``{"train": [], "val": []}``, ``defaultdict(list)``, ``[[] for _ in heads]``."""
        values = self._assigned_values(container, at)
        return bool(values) and all(_makes_lists(v) for v in values)

    def _assigned_values(self, receiver: ast.AST, at: ast.AST) -> list[ast.AST]:
        """What this file assigns to ``receiver`` as ``at`` sees it: the binding that reaches
        it for a local name, every assignment in the file for a global or an attribute; an
        empty list where one of them is not an assignment we can read (a parameter, a loop
        target, a body the prefilter hollowed)."""
        key = ev.dotted(receiver)
        if key is None:
            return []
        tree, index = self.analysis.tree, self.analysis.index
        if type(receiver) is ast.Name:
            binding = self.bindings.reaching(key, at)
            if binding is not None:
                candidates = [binding]
            elif isinstance(self.unit, syntax.FUNCTIONS) and \
                    key in syntax.parameter_names(self.unit.args):
                return []  # what the caller hands in
            else:  # a global: the module's own bindings of it
                candidates = [n for n in _binders(tree, key) if index.scope_of(n) is tree]
        else:
            candidates = _binders(tree, key)
        if not candidates or key in hollowed_attribute_values(tree):
            return []
        values = []
        for statement in candidates:
            value = _value_for(statement, key)
            if value is None:
                return []
            values.append(value)
        return values

    def _class_of(self, receiver: ast.AST) -> ast.ClassDef | None:
        """The class of this file or project that built ``receiver``: ``meter =
        AverageMeter()`` or ``meter = utils.AverageMeter()`` here."""
        if type(receiver) is not ast.Name:
            return None
        binding = self.bindings.reaching(receiver.id, receiver)
        value = getattr(binding, "value", None)
        if type(binding) is ast.Assign and len(binding.targets) == 1 \
                and type(binding.targets[0]) is ast.Tuple and type(value) is ast.Tuple:
            # `losses, top1 = AverageMeter(), AverageMeter()`: the value at the same position
            names = [getattr(t, "id", None) for t in binding.targets[0].elts]
            value = value.elts[names.index(receiver.id)] \
                if receiver.id in names and len(names) == len(value.elts) else None
        if type(binding) is not ast.Assign or type(value) is not ast.Call:
            return None
        index = self.analysis.index
        name = ev.last_name(ev.dotted(value.func) or "")
        if name not in index.classes:
            index.import_class(value.func)
        return index.classes.get(name)

    def _loss_hits(self, value: ast.AST, at: ast.AST) -> list[ast.Name]:
        """Names in ``value`` that may hold a loss at ``at`` (see :meth:`_loss_at`)."""
        indexed = {id(n.value) for n in syntax.walk(value) if type(n) is ast.Subscript}
        return [name for name in _value_names(value, containers=True)
                if self._loss_at(name.id, at) is not None
                and not (id(name) in indexed and self._entries_replaced(name.id, at))]

    def _entries_replaced(self, name: str, at: ast.AST) -> bool:
        """Whether, after ``name`` was bound and before ``at``, its entries are overwritten
        with plain numbers (``for k, v in losses.items(): losses[k] = v.item()``): what an
        entry holds at ``at`` is then a number or unknown, never a graph we can show."""
        binding = self.bindings.reaching(name, at)
        start = _position(binding) if binding is not None else (0, 0)
        return any(
            type(node) is ast.Assign and _detaches(node.value)
            and any(type(t) is ast.Subscript and type(t.value) is ast.Name and t.value.id == name
                    for t in node.targets)
            and start < _position(node) < _position(at)
            for node in self.nodes)

    def _loop_of(self, node: ast.AST) -> tuple[ast.AST | None, bool]:
        """The loop whose iterations would carry what ``node`` keeps: the nearest around it
        that steps an optimizer (what a list restarted once per step holds is bounded by
        the micro-batches of a step), else the nearest that is not over a fixed handful
        (``for opt in optimizers:``, ``range(2)``); and whether the unit steps after that
        loop, so that what it keeps lives for one step."""
        parents = self.analysis.index.parents
        loops = []
        parent = parents.get(id(node))
        while parent is not None and parent is not self.unit:
            if isinstance(parent, _LOOPS) and not self._fixed_handful(parent):
                loops.append(parent)
            parent = parents.get(id(parent))
        stepping = [loop for loop in loops if self.analysis.index.holds_step(loop)]
        if stepping:
            return stepping[0], False
        return (loops[0] if loops else None), self.analysis.index.holds_step(self.unit)

    def _fixed_handful(self, loop: ast.AST) -> bool:
        """``for clf, opt in zip(classifiers, optimizers):`` (one pass per optimizer),
        ``for i in range(2):`` or over a literal tuple: a bounded number of iterations."""
        if not isinstance(loop, syntax.FOR_LOOPS):
            return False
        index = self.analysis.index
        if any(index.is_optimizer(n) for n in syntax.stored_names(loop.target)):
            return True
        it = loop.iter
        if type(it) in (ast.Tuple, ast.List) or self._selects_optimizer(loop):
            return True
        if type(it) is ast.Call and type(it.func) is ast.Name and it.func.id == "range" and it.args:
            bounds = [self._literal(arg, loop) for arg in it.args]
            return all(n is not None and 0 <= n <= HANDFUL for n in bounds)
        return False

    def _selects_optimizer(self, loop: ast.For) -> bool:
        """``for i in range(len(nets)): ... optimizers[i].step()``: the loop variable picks
        the optimizer that steps, so there is one pass per optimizer, not per batch."""
        names = set(syntax.stored_names(loop.target))
        return bool(names) and any(
            type(node) is ast.Call and syntax.callee_name(node) == "step"
            and type(node.func) is ast.Attribute and type(node.func.value) is ast.Subscript
            and type(node.func.value.slice) is ast.Name and node.func.value.slice.id in names
            and self._holds_optimizers(ev.dotted(node.func.value.value))
            for node in syntax.walk(loop))

    def _holds_optimizers(self, key: str | None) -> bool:
        index = self.analysis.index
        return key is not None and (index.is_group(key) or index.is_optimizer(key))

    def _literal(self, node: ast.AST, at: ast.AST) -> int | None:
        """The integer ``node`` holds (a literal, or a name bound to one here), else None."""
        value = syntax.constant(node)
        if type(node) is ast.Name:
            binding = self.bindings.reaching(node.id, at)
            value = syntax.constant(getattr(binding, "value", None)) if type(binding) is ast.Assign else None
        return value if type(value) is int else None

    def _restarted_in(self, loop: ast.AST, target: ast.AST, site: ast.AST) -> bool:
        """Whether the loop binds the total (or clears the list) again somewhere other than
        at ``site``: then what it keeps lasts a window, not the whole run."""
        key = ev.dotted(target)
        for node in syntax.walk(loop):
            if node is site:
                continue
            if type(node) in (ast.Assign, ast.AnnAssign):
                targets = node.targets if type(node) is ast.Assign else [node.target]
                if any(ev.dotted(t) == key for t in targets) and not _adds_to(node, key):
                    return True
            if type(node) is ast.Call and syntax.callee_name(node) in ("clear", "reset") \
                    and type(node.func) is ast.Attribute and ev.dotted(node.func.value) == key:
                return True
            if type(node) is ast.Delete and any(
                    ev.dotted(getattr(t, "value", t)) == key for t in node.targets):
                return True
        return False


def _plain_number_call(call: ast.Call) -> bool:
    return type(call.func) is ast.Name and call.func.id in ("int", "float", "len", "max", "min", "round")


def _counter_of(loop: ast.AST) -> str | None:
    """``i`` of ``for i, x in enumerate(...)`` or ``for i in range(...)``."""
    if not isinstance(loop, syntax.FOR_LOOPS) or type(loop.iter) is not ast.Call:
        return None
    name, target = syntax.callee_name(loop.iter), loop.target
    if name == "enumerate" and type(target) is ast.Tuple and target.elts and type(target.elts[0]) is ast.Name:
        return target.elts[0].id
    return target.id if name == "range" and type(target) is ast.Name else None


def _may_keep(node: ast.AST) -> bool:
    """A statement that could keep a value (a sum, a method call) or hand one back."""
    kind = type(node)
    return kind is ast.AugAssign or kind is ast.Return or (
        kind is ast.Expr and type(node.value) is ast.Call and type(node.value.func) is ast.Attribute) \
        or kind is ast.Assign and type(node.value) is ast.BinOp



def _the_total_scaled(expr: ast.AST, key: str) -> bool:
    """``total`` itself, or ``total * 0.99`` / ``0.99 * total`` (a running average such as
    ``smooth = smooth * 0.99 + loss * 0.01`` keeps every step's graph as a sum does)."""
    if ev.dotted(expr) == key:
        return True
    if type(expr) is not ast.BinOp or type(expr.op) is not ast.Mult:
        return False
    return any(ev.dotted(side) == key and isinstance(syntax.constant(other), (int, float))
               for side, other in ((expr.left, expr.right), (expr.right, expr.left)))


def _adds_to(node: ast.AST, key: str | None) -> bool:
    value = getattr(node, "value", None)
    return type(value) is ast.BinOp and ev.dotted(value.left) == key


def _with_factors(expr: ast.AST, at: ast.AST, factor: bool, computed) -> list[tuple[ast.Name, ast.AST, bool]]:
    """``_value_names(expr)``, each with whether it enters ``expr`` only as a factor: an
    operand of ``*`` whose other operand is computed here too, or what divides (``loss / k``
    keeps ``loss`` a carrier)."""
    factors: set[int] = set()
    stack = [(expr, factor)]
    reads_computed = lambda e: any(type(n) is ast.Name and computed(n, at) for n in syntax.walk(e))
    while stack:
        node, inside = stack.pop()
        if type(node) is ast.Name and inside:
            factors.add(id(node))
        if type(node) is ast.BinOp and type(node.op) is ast.Mult:
            # `alpha * kl` (a setting) keeps `kl` a carrier; in `reward * log_prob` either
            # may be the plain number
            stack += [(node.left, inside or reads_computed(node.right)),
                      (node.right, inside or reads_computed(node.left))]
        elif type(node) is ast.BinOp and type(node.op) in (ast.Div, ast.FloorDiv):
            stack += [(node.left, inside), (node.right, True)]
        else:
            stack += [(child, inside) for child in syntax.children(node)]
    return [(name, at, id(name) in factors) for name in _value_names(expr)]


def _value_names(expr: ast.AST, containers: bool = False) -> list[ast.Name]:
    """Names whose tensor flows into ``expr`` through arithmetic, graph-keeping methods or
    ``scaler.scale(...)``; with ``containers``, also through dict, list and tuple displays."""
    kind = type(expr)
    if kind is ast.Name:
        return [expr]
    if kind is ast.BinOp:
        return _value_names(expr.left, containers) + _value_names(expr.right, containers)
    if kind is ast.UnaryOp:
        return _value_names(expr.operand, containers)
    if kind is ast.Subscript:  # `loss[0]`, `loss.data[0]`... (`.data` is cut below)
        return _value_names(expr.value, containers)
    if kind is ast.Attribute and expr.attr == "data":
        return []  # `loss.data` shares storage but no graph
    if kind is ast.Call and type(expr.func) is ast.Attribute:
        if expr.func.attr == "scale":
            return [n for a in syntax.positional(expr) for n in _value_names(a, containers)]
        if expr.func.attr in _GRAPH_KEEPING:
            return _value_names(expr.func.value, containers)
        return []
    if containers and kind is ast.Dict:
        return [n for v in expr.values for n in _value_names(v, containers)]
    if containers and kind in (ast.Tuple, ast.List):
        return [n for e in expr.elts for n in _value_names(e, containers)]
    return []


def _position(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


def _detaches(value: ast.AST) -> bool:
    """``x.item()``, ``x.detach()``, ``float(x)``, ``x.cpu().numpy()`` and their kin."""
    if type(value) is not ast.Call:
        return False
    func = value.func
    if type(func) is ast.Name:
        return func.id in ("float", "int", "bool")
    return type(func) is ast.Attribute and func.attr in ("item", "detach", "tolist", "numpy")


def _binders(tree: ast.AST, key: str) -> list[ast.AST]:
    """Every node of the file that binds the dotted name ``key`` (an assignment, a loop, a
    ``with ... as``, a comprehension), tuples unpacked."""
    def index(module: ast.AST) -> dict[str, list[ast.AST]]:
        found: dict[str, list[ast.AST]] = {}
        for node in syntax.walk(module):
            pending = list(syntax.assignment_targets(node))
            while pending:
                target = pending.pop()
                if type(target) in (ast.Tuple, ast.List):
                    pending.extend(target.elts)
                elif (name := ev.dotted(target.value if type(target) is ast.Starred
                                        else target)) is not None:
                    found.setdefault(name, []).append(node)
        return found
    return syntax.memoised("binders", tree, index).get(key, [])


def _value_for(statement: ast.AST, key: str) -> ast.AST | None:
    """The value ``statement`` gives ``key``: an assignment's, paired by position in a tuple
    (``train_losses, val_losses = [], []``); None for a loop target, a ``with``, an
    augmented assignment or an unpacking we cannot pair."""
    if type(statement) is ast.AnnAssign:
        return statement.value
    if type(statement) is not ast.Assign:
        return None
    for target in statement.targets:
        for element, value in syntax.paired(target, statement.value):
            if ev.dotted(element) == key:
                return value
    return None


_LIST_MAKERS = frozenset({"list", "deque"})


def _makes_a_list(value: ast.AST) -> bool:
    """``[]``, ``[x]``, ``[... for ...]``, ``list(...)``, ``deque(...)``, ``[] * n``, or
    ``a = b = []``: a value whose ``append`` keeps what it is handed."""
    kind = type(value)
    if kind in (ast.List, ast.ListComp):
        return True
    if kind is ast.BinOp and type(value.op) in (ast.Mult, ast.Add):
        return _makes_a_list(value.left) or _makes_a_list(value.right)
    if kind is ast.Call:
        return ev.last_name(ev.dotted(value.func) or "") in _LIST_MAKERS
    return False


def _makes_lists(value: ast.AST) -> bool:
    """A dict or list whose entries are lists: ``{"a": [], "b": []}``, ``defaultdict(list)``,
    ``{k: [] for k in keys}``, ``[[] for _ in heads]``."""
    kind = type(value)
    if kind is ast.Dict:
        return bool(value.values) and all(_makes_a_list(v) for v in value.values)
    if kind is ast.DictComp:
        return _makes_a_list(value.value)
    if kind is ast.ListComp:
        return _makes_a_list(value.elt)
    if kind is ast.List:
        return bool(value.elts) and all(_makes_a_list(v) for v in value.elts)
    if kind is ast.Call and ev.last_name(ev.dotted(value.func) or "") == "defaultdict":
        return bool(value.args) and ev.dotted(value.args[0]) in ("list", "collections.deque", "deque")
    return False
