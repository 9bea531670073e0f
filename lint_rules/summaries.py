"""What one module tells us before any flow analysis: its functions, methods and optimizers.

The flow analysis analyses a call to a function or method defined in the same file by
walking the callee's body in place (with its parameters renamed to the caller's
arguments), so ``train_step(model, opt)``, ``self.backward_G()`` and LBFGS closures are
seen exactly as if they were written inline.
"""
from __future__ import annotations

import ast

from lint_rules import syntax
from lint_rules.events import (
    _NOT_OPTIMIZER,
    is_group_name,
    EVENT_CALL_NAMES,
    OPTIMIZER_CLASSES,
    dotted,
    is_backward_call,
    is_grad_write,
    is_grad_zeroing,
    last_name,
    looks_like_optimizer,
    member_key,
)
from lint_rules.frameworks import PYTORCH_FAMILY
from lint_rules.imports import ImportedCode
from lint_rules.narrowing import hollowed_calls
from lint_rules.parameter_sources import constructor_models
from lint_rules.rebinding import SAME_OBJECT_GETTERS
from lint_rules.source import SourceText

FunctionNode = syntax.FunctionNode
_OPT_FACTORY_WORDS = ("optimizer", "optimiser")
# Methods that only a torch module has: a receiver of one is a network.
_MODULE_ONLY_METHODS = ("train", "eval", "state_dict", "load_state_dict", "named_parameters",
                        "parameters", "requires_grad_", "named_modules", "children")
# `ddp_model.module`, `compiled._orig_mod`, `peft_model.base_model`: the whole network again
_WHOLE_NETWORK_ATTRIBUTES = frozenset({"module", "_orig_mod", "_module", "model", "base_model", "net"})
# Methods that torch / Lightning objects already have; a same-named method in this file is
# not evidence that the receiver is an instance of the file's class.
_FRAMEWORK_METHODS = frozenset(
    ["train", "eval", "forward", "to", "cuda", "cpu", "step", "zero_grad", "parameters", "named_parameters", "state_dict", "load_state_dict", "backward", "apply", "float", "half", "double", "modules", "children", "register_buffer", "update", "item", "detach", "clone", "copy_", "fit", "predict", "test", "validate", "log", "save", "load", "run", "close"]
)


# Packages whose optimizer classes have torch's semantics (a class named `Adam` imported from
# anywhere else is that module's own).
TORCH_OPTIMIZER_PACKAGES = PYTORCH_FAMILY | {
    "torch_optimizer", "pytorch_optimizer", "bitsandbytes", "fairscale", "colossalai", "megatron",
    "lion_pytorch", "adabelief_pytorch", "ranger", "ranger21", "dadaptation", "prodigyopt",
    "schedulefree", "galore_torch", "heavyball", "came_pytorch", "muon", "sophia", "optimi"}
STEP_NAMES = ("step", "optimizer_step")  # the stepping names of events.EVENT_CALL_NAMES


# nn.Module methods that return the module itself: `Net(...).to(device)` is still a `Net`.
_RETURN_SELF = frozenset({"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "train",
                          "eval", "requires_grad_", "share_memory", "type"})


class ModuleIndex(ImportedCode):
    """Functions, methods, optimizer names and their models, for one parsed module.

    >>> source = "opt = torch.optim.SGD(net.parameters(), lr=0.1)"
    >>> index = ModuleIndex(ast.parse(source), SourceText(source))
    >>> sorted(index.optimizers), index.models_of("opt")
    (['opt'], {'net'})
    """

    def __init__(self, tree: ast.Module, text: SourceText, project=None, path=None,
                 finder=None) -> None:
        self.tree = tree
        self.text = text
        self.project = project  # lint_rules.project.Project: where imports lead, or None
        # the project that loaded this module for another one: it tells which of this
        # module's imports are the project's own, though they are not followed from here
        self._finder = project or finder
        self.path = path
        self.imports: dict[str, tuple[str, str | None, int]] = {}  # name -> (module, attr, level)
        self._star_imports: list[tuple[str, int]] = []  # `from pkg.utils import *`: (module, level)
        self._unread_bases: dict[str, bool] = {}  # class -> whether a base is the project's, unread
        self._called_keys: set[str] | None = None  # receivers called like functions: `self.model(x)`
        self._wrappers: dict[str, set[str]] | None = None  # optimizer -> objects built around it
        self._owners: dict[int, ModuleIndex] = {}  # a definition of another module -> its index
        self._foreign: dict[tuple[str, str | None], ast.AST | None] = {}
        self.functions: dict[str, FunctionNode] = {}
        self.methods: dict[str, list[tuple[str, FunctionNode]]] = {}
        self.optimizers: set[str] = set()
        self._models: dict[str, set[str]] = {}
        self._networks_run: dict[int, frozenset[str]] = {}  # scope -> the networks it calls
        self.built_by: dict[str, str] = {}  # optimizer key -> the class or factory that built it
        self._built_by_spelled: dict[str, str] = {}  # ... as the call spells it (`optim.Adam`)
        self.built_by_class: set[str] = set()  # keys built by calling an optimizer class
        self._params: dict[str, set[str]] = {}  # tensors listed explicitly: SGD([W, b])
        self._aliases: dict[str, set[str]] = {}  # self.model = model, net = DDP(model)
        self.parents: dict[int, ast.AST] = {}
        self.constructions: dict[int, list[str]] = {}  # assignment -> optimizers it builds
        self._construction_nodes: list[ast.AST] = []  # those assignments: they start a new story
        self.call_cache: dict[int, list[ast.Call]] = {}  # statement -> its relevant calls
        self.class_of: dict[int, str] = {}
        self._counter_flags: set[str] | None = None  # computed on first use
        self._model_keys: set[str] | None = None
        self._optimizer_builds: list[ast.Call] = []  # every call of an optimizer class
        self._trained: set[str] | None = None  # the models those calls are handed
        # name -> the scopes (function nodes, or the module) that bind it to an object of its own
        self._built: dict[str, set[int]] = {}
        self._built_at: list[tuple[str, ast.AST]] = []  # resolved into _built once parents are known
        self._opt_site: dict[str, ast.AST] = {}  # optimizer key -> the statement that built it
        self._repeated_tests: set[str] | None = None
        self._ifs: list[ast.If] = []
        self._assignments: list[ast.Assign] = []
        self._index(tree)

    def _index(self, tree: ast.Module) -> None:
        # One pass over the tree (walking it is the main cost after parsing).
        for stmt in tree.body:
            if isinstance(stmt, syntax.FUNCTIONS):
                self.functions[stmt.name] = stmt
        self.backward_calls: list[ast.Call] = []
        self.step_calls: list[ast.Call] = []  # every `x.step(...)`, schedulers' included
        self._holding_steps: set[int] | None = None
        self._optimizer_usage: set[str] | None = None
        self._group_members: dict[str, set[str]] | None = None
        events: list[ast.AST] = []
        local_calls: list[tuple[str, ast.Call]] = []
        self.referenced: set[str] = set()  # names read, and attributes read on `self`/`cls`
        self.passed_along: set[str] = set()  # names handed to a call as an argument
        self.zeroed: set[str] = set()  # receivers of a `zero_grad()` call somewhere here
        self.annotated: set[str] = set()  # parameters annotated as optimizers
        self.classes: dict[str, ast.ClassDef] = {}
        self._nested_names: set[str] = set()  # names of every function, at any depth
        self._returns: list[ast.Return] = []  # every `return <value>`
        self.modules: set[str] = set()  # receivers of `.parameters()`: torch modules
        self.instances: dict[str, str] = {}  # `x = Cls(...)` with Cls a class of this file
        constructed: list[tuple[list[ast.AST], ast.Call]] = []
        parents = self.parents
        referenced = self.referenced
        children = syntax.children
        stack: list[ast.AST] = [tree]
        while stack:
            node = stack.pop()
            kids = children(node)
            for child in kids:
                parents[id(child)] = node
            stack += kids
            kind = type(node)
            if kind is ast.Name:
                referenced.add(node.id)
            elif kind is ast.Attribute:
                # `self.update` may refer to a method of this file; `self.optimizer.step` or
                # `opt.step` never refers to a method named `step` that the file defines
                if type(node.value) is ast.Name and node.value.id in ("self", "cls"):
                    referenced.add(node.attr)
            elif kind is ast.Call:
                self._index_call(node, events, local_calls)
            elif kind is ast.If:
                self._ifs.append(node)
            elif kind is ast.ImportFrom:
                for alias in node.names:
                    if alias.name == "*":
                        self._star_imports.append((node.module or "", node.level))
                        continue
                    self.imports[alias.asname or alias.name] = (node.module or "", alias.name, node.level)
            elif kind is ast.Import:
                for alias in node.names:
                    local = alias.asname or alias.name.split(".")[0]
                    self.imports[local] = (alias.name if alias.asname else local, None, 0)
            elif kind in (ast.FunctionDef, ast.AsyncFunctionDef):
                self._nested_names.add(node.name)
            elif kind is ast.Return and node.value is not None:
                self._returns.append(node)
            elif kind is ast.ClassDef:
                self.classes.setdefault(node.name, node)
                for item in node.body:
                    if isinstance(item, syntax.FUNCTIONS):
                        self.methods.setdefault(item.name, []).append((node.name, item))
                        self.class_of[id(item)] = node.name
            elif kind is ast.Assign:
                if is_grad_zeroing(node) or is_grad_write(node):
                    events.append(node)
                else:
                    self._assignments.append(node)
                    self._note_alias(node)
                    if type(node.value) is ast.Call:
                        self._note_optimizer(node, node.targets, node.value)
                        constructed.append((node.targets, node.value))
            elif kind is ast.AnnAssign and type(node.value) is ast.Call:
                self._note_optimizer(node, [node.target], node.value)
                constructed.append(([node.target], node.value))
            elif kind is ast.Expr and (is_grad_zeroing(node) or is_grad_write(node)):
                events.append(node)
            elif kind is ast.arg and node.annotation is not None and _names_optimizer(node.annotation):
                self.annotated.add(node.arg)
        for targets, call in constructed:
            call = self._constructor_under_moves(call)
            cls = last_name(dotted(call.func) or "")
            if cls not in self.classes:
                self.import_class(call.func)
            if cls in self.classes:
                for key in filter(None, map(dotted, targets)):
                    self.instances[key] = cls
        self._restore_optimizer_steps(events, local_calls)
        self.called = {name for name, _ in local_calls}  # names of every non-event call
        self._local_calls = local_calls
        self._called_functions: set[int] | None = None
        self._mark(events, local_calls)

    def _index_call(self, node: ast.Call, events: list, local_calls: list) -> None:
        name = syntax.callee_name(node)
        if name in STEP_NAMES:
            self.step_calls.append(node)
        if name in ("parameters", "named_parameters") and type(node.func) is ast.Attribute:
            self.modules.add(dotted(node.func.value) or "")
        if _builds_an_optimizer(node):
            self._optimizer_builds.append(node)
        if name in EVENT_CALL_NAMES and not _not_an_optimizer_step(node):
            events.append(node)
            if name == "zero_grad" and type(node.func) is ast.Attribute:
                self.zeroed.add(dotted(node.func.value) or "")
            if is_backward_call(node):
                self.backward_calls.append(node)
            return
        local_calls.append((name, node))
        if name in EVENT_CALL_NAMES:
            return  # `scheduler.step(...)`: not an event, and hands on no callback
        for arg in (*node.args, *(k.value for k in node.keywords if k.arg is None)):
            if type(arg) is ast.Starred:
                arg = arg.value
            if type(arg) is ast.Name:
                self.passed_along.add(arg.id)  # Engine(update): a callback
            elif type(arg) is ast.Attribute and type(arg.value) is ast.Name and \
                    arg.value.id in ("self", "cls"):
                self.passed_along.add(arg.attr)  # Engine(self.update)

    def _restore_optimizer_steps(self, events: list, local_calls: list) -> None:
        """A step whose receiver is named like a scheduler (`optimizer_D_LR.step()`) but that
        this file builds with an optimizer class, or annotates as one, is an optimizer's step:
        the construction is evidence, the name only a guess."""
        known = self.optimizers | self.annotated
        restored = [(name, call) for name, call in local_calls
                    if name == "step" and type(call.func) is ast.Attribute
                    and dotted(call.func.value) in known and _not_an_optimizer_step(call)]
        for name, call in restored:
            local_calls.remove((name, call))
            events.append(call)

    def _mark(self, events: list[ast.AST], local_calls: list[tuple[str, ast.Call]]) -> None:
        """Mark every node that contains a gradient event, directly or through a call to a
        function of this file that does; the flow analysis skips everything unmarked."""
        self.marked: set[int] = set()
        self.eventful: set[str] = set()
        pending = list(events) + self._construction_nodes + [
            call for _, call in local_calls
            if self._calls_eventful_import(call) or self.hands_optimizer_to_unread_code(call)
            or self.calls_unread_inherited_method(call)]
        # every function of the file by name, nested ones too (`def update(data):` inside
        # `ddpg(...)`, called from its loop)
        known = set(self.functions) | set(self.methods) | self._nested_names
        waiting = [(name, call) for name, call in local_calls
                   if name in known and self.may_run_own_code(call)]
        while pending:
            for node in pending:
                self._mark_ancestors(node)
            pending = [call for name, call in waiting if name in self.eventful
                       and id(call) not in self.marked]

    def may_run_own_code(self, call: ast.Call) -> bool:
        """Whether ``call`` may run a function of this file: not ``self.encoder.train()`` or
        ``model.eval()``, nn.Module's methods whatever this file defines under those names,
        nor ``self.task.step_fn()``, some other object's. ``resolve`` and the marking of
        eventful code both ask this, so an `if` around such a call holds no event."""
        func = call.func
        if type(func) is not ast.Attribute:
            return True
        receiver = func.value
        if type(receiver) is ast.Name and (receiver.id == "self" or receiver.id in self.imports):
            return True
        if self.instance_class(dotted(receiver)) is not None:
            return True
        return type(receiver) is ast.Name and func.attr not in _FRAMEWORK_METHODS

    def _mark_ancestors(self, node: ast.AST) -> None:
        current: ast.AST | None = node
        while current is not None and id(current) not in self.marked:
            self.marked.add(id(current))
            if isinstance(current, syntax.FUNCTIONS):
                self.eventful.add(current.name)
            current = self.parents.get(id(current))

    def subclasses(self, cls: str) -> list[str]:
        """Classes of this file that derive from ``cls``, directly or not, in source order."""
        found: list[str] = []
        frontier = [cls]
        while frontier:
            parent = frontier.pop()
            for node in self.classes.values():
                if node.name not in found and node.name != cls and id(node) not in self._owners \
                        and any(last_name(dotted(b) or "") == parent for b in node.bases):
                    found.append(node.name)
                    frontier.append(node.name)
        return found

    def is_called(self, function: FunctionNode) -> bool:
        """Whether some call in this file runs ``function`` (``model.train()`` does not run a
        function of the file named ``train``)."""
        if self._called_functions is None:
            # `def update(data):` inside `ddpg(...)`, which its loop calls by plain name; a
            # method is no such function (`train(args)` does not run `Trainer.train`)
            nested: dict[str, list[FunctionNode]] = {}
            for node in self.parents.values():
                if isinstance(node, syntax.FUNCTIONS) and self._defined_in_a_function(node):
                    nested.setdefault(node.name, []).append(node)
            self._called_functions = set()
            for name, call in self._local_calls:
                if name not in self.functions and name not in self.methods and name not in nested:
                    continue
                around = self._class_around(call)
                callee = self.resolve(call, around, {})
                targets = [callee] if callee is not None else []
                if around is not None and type(call.func) is ast.Attribute and \
                        type(call.func.value) is ast.Name and call.func.value.id == "self":
                    # `self.batch_update()` in a base class runs a subclass's override
                    targets += [m for sub in self.subclasses(around)
                                if (m := self.class_method(sub, call.func.attr)) is not None]
                if type(call.func) is ast.Name:
                    targets += nested.get(name, [])
                self._called_functions.update(map(id, targets))
        return id(function) in self._called_functions

    def is_inside(self, node: ast.AST, outer: ast.AST) -> bool:
        """Whether ``node`` is ``outer`` or lies within it."""
        while node is not None and node is not outer:
            node = self.parents.get(id(node))
        return node is outer

    def _defined_in_a_function(self, node: ast.AST) -> bool:
        """Whether the innermost function or class around ``node`` is a function."""
        current = self.parents.get(id(node))
        while current is not None and not isinstance(current, (ast.ClassDef, *syntax.FUNCTIONS)):
            current = self.parents.get(id(current))
        return isinstance(current, syntax.FUNCTIONS)

    def _class_around(self, node: ast.AST) -> str | None:
        current = self.parents.get(id(node))
        while current is not None:
            if isinstance(current, syntax.FUNCTIONS) and id(current) in self.class_of:
                return self.class_of[id(current)]
            current = self.parents.get(id(current))
        return None

    def steps_a_parameter(self, function: FunctionNode) -> bool:
        """Whether ``function`` steps an optimizer that its caller passes in (a parameter
        other than ``self``): ``def __call__(self, loss, optimizer): ... optimizer.step()``."""
        params = set(syntax.parameter_names(function.args)) - {"self", "cls"}
        if not params:
            return False
        for node in syntax.walk(function):
            if type(node) is ast.Call and syntax.callee_name(node) in ("step", "optimizer_step"):
                receivers = [node.func.value] if type(node.func) is ast.Attribute else []
                receivers += syntax.positional(node)[:1]
                if any(type(r) is ast.Name and r.id in params for r in receivers):
                    return True
        return False

    def holds_step(self, node: ast.AST) -> bool:
        """Whether ``node``'s code (nested functions included) calls a ``step``."""
        if self._holding_steps is None:
            self._holding_steps = set()
            for call in self.step_calls:
                current = call
                while current is not None and id(current) not in self._holding_steps:
                    self._holding_steps.add(id(current))
                    current = self.parents.get(id(current))
        return id(node) in self._holding_steps

    def contains_events(self, node: ast.AST) -> bool:
        """Whether ``node`` holds a gradient event or a call that reaches one."""
        return id(node) in self.marked

    def imported_modules(self) -> set[str]:
        """The modules this file imports by absolute name (``jax.numpy``, ``torch``)."""
        named = {module for module, _, level in self.imports.values() if not level}
        return named | {module for module, level in self._star_imports if not level}

    def trained_by_an_optimizer(self, model: str) -> bool:
        """Whether some optimizer class built in this file, kept under any name or none
        (``[SGD(matrices), AdamW(others)]``), is handed parameters of ``model``, of a part
        of it or of a network it is part of: evidence that a step trains it."""
        if self._trained is None:
            self._trained = set()
            for call in self._optimizer_builds:
                self._trained |= constructor_models(call, self.scope_of(call))
        names = {model} | self._aliases.get(model, set())
        return any(_covers(n, m) or _covers(m, n) for n in names for m in self._trained)

    def _note_optimizer(self, stmt: ast.AST, targets: list[ast.AST], call: ast.Call) -> None:
        callee = dotted(call.func) or ""
        name = last_name(callee)
        by_class = _builds_an_optimizer(call)
        creates = by_class or (
            not _NOT_OPTIMIZER.search(callee) and any(w in name.lower() for w in _OPT_FACTORY_WORDS))
        # `self.optimizers(use_pl_optimizer=True)` hands back the module's own optimizers.
        getter = name in SAME_OBJECT_GETTERS
        for target in targets:
            if type(target) is ast.Tuple:
                if name in _PREPARERS:  # `scheduler, msg = build_scheduler(optimizer)` is not
                    self._note_prepared(target, call)
                continue
            key = dotted(target)
            if key and (creates or looks_like_optimizer(key)) and (call.args or call.keywords) \
                    and not getter:
                # Built here from arguments (not `self.optimizers()`, which hands back the same one).
                self.constructions.setdefault(id(stmt), []).append(key)
                self._construction_nodes.append(stmt)
            if key and by_class:
                self.built_by_class.add(key)
            if key and creates and not getter:
                self.optimizers.add(key)
                self.built_by[key] = name
                self._built_by_spelled[key] = callee
                self._models[key] = constructor_models(call, self.scope_of(stmt))
                self._params[key] = _listed_tensors(call)
                self._opt_site[key] = stmt

    def _note_prepared(self, target: ast.Tuple, call: ast.Call) -> None:
        # `model, opt = accelerator.prepare(model, opt)`: positions keep their roles.
        for element, arg in zip(syntax.elements(target), syntax.positional(call)):
            key, source = dotted(element), dotted(arg)
            if key and source and (source in self.optimizers or looks_like_optimizer(source)):
                self.optimizers.add(key)
                self._models.setdefault(key, self._models.get(source, set()))

    def shares_parameters(self) -> bool:
        """Whether two optimizers built here hold parameters of the same model."""
        held = [models for models in self._models.values() if models]
        return any(a & b for i, a in enumerate(held) for b in held[i + 1:])

    def can_zero(self, key: str) -> bool:
        """Whether ``key.zero_grad()`` may be called: not when the file built it with a class
        that has none; yes with evidence (``zero_grad_evidence``), or a name that reads as an
        optimizer's (never a scheduler's, scaler's or EMA's: `looks_like_optimizer` rules
        those out)."""
        if self.built_by.get(key) in NO_ZERO_GRAD:
            return False
        return self.zero_grad_evidence(key) or looks_like_optimizer(key)

    def zero_grad_evidence(self, key: str) -> bool:
        """Whether the file itself shows that ``key`` has a ``zero_grad()``: it builds it with
        an optimizer class, annotates a parameter of that name as an optimizer, or calls
        ``zero_grad`` on it somewhere. A name alone is no evidence.

        >>> source = "def f(o: torch.optim.Optimizer, optimizer):\\n    pass\\n"
        >>> index = ModuleIndex(ast.parse(source), SourceText(source))
        >>> index.zero_grad_evidence("o"), index.zero_grad_evidence("optimizer")
        (True, False)
        """
        if self.built_by.get(key) in NO_ZERO_GRAD:
            return False
        return key in self.optimizers or key in self.zeroed or key in self.annotated or \
            key in self.modules  # a module, which `model.parameters()` shows, has one too

    def is_optimizer(self, key: str) -> bool:
        """Built by an optimizer constructor in this file, annotated as an optimizer, or
        (the last resort) named like one."""
        if key in self.optimizers or key in self.annotated:
            return True
        head, _, rest = key.partition(".")
        if rest and head != "self" and f"self.{rest}" in self.optimizers:
            return True  # `updater.optimizer`, where a method here sets `self.optimizer = Adam(...)`
        owner = self.instance_class(key)
        if owner is not None:  # built by a class of this file: its bases decide, not its name
            return self.is_optimizer_class(owner)
        return looks_like_optimizer(key) or key in self._used_as_optimizer()

    def _used_as_optimizer(self) -> set[str]:
        """Receivers of both ``zero_grad()`` and a bare ``step()`` that are neither models
        (no ``.parameters()``) nor engines that run their own backward (``engine.backward``):
        an optimizer by what the code does with it (``opti`` handed to a client's update)."""
        if self._optimizer_usage is None:
            steppers = {dotted(c.func.value) for c in self.step_calls
                        if type(c.func) is ast.Attribute and c.func.attr == "step"
                        and not c.args and not c.keywords}
            engines = {dotted(c.func.value) for c in self.backward_calls
                       if type(c.func) is ast.Attribute and c.args}
            self._optimizer_usage = (self.zeroed & steppers) - self.modules - engines - {None, ""}
        return self._optimizer_usage

    def returning(self) -> set[int]:
        """Ids of the functions that hold a ``return <value>`` of their own."""
        found = set()
        for node in self._returns:
            current = self.parents.get(id(node))
            while current is not None and not isinstance(current, syntax.SCOPES):
                current = self.parents.get(id(current))
            if current is not None:
                found.add(id(current))
        return found

    def is_group(self, key: str) -> bool:
        """A collection of optimizers by its name (``optimizers``, ``self.opts``), unless this
        file built one optimizer under that name (``opt_heads = Adam(...)``)."""
        return is_group_name(key) and key not in self.optimizers and key not in self.annotated \
            and not key.endswith("]")  # `self.optimizers["critic"]` is one member of it

    def groups_holding(self, optimizers: set[str]) -> set[str]:
        """Collections of optimizers that this file lists with one of ``optimizers`` among
        their members (``optimizers = [opt_body, opt_head]``): a reset of the model that
        member holds reaches the collection's steps too."""
        if not optimizers:
            return set()
        return {group for group, members in self._groups().items() if members & optimizers}

    def wrappers_of(self, optimizer: str) -> set[str]:
        """Objects built around ``optimizer`` (``mask = Masking(optimizer, ...)``,
        ``opt = Lookahead(base)``): their ``step()`` steps it, so its reset is theirs too."""
        if self._wrappers is None:
            self._wrappers = {}
            for node in self._assignments:
                value = node.value
                if type(value) is not ast.Call or not value.args or len(node.targets) != 1:
                    continue
                inner, outer = dotted(value.args[0]), dotted(node.targets[0])
                if inner and outer and inner != outer and self.is_optimizer(inner):
                    self._wrappers.setdefault(inner, set()).add(outer)
        return self._wrappers.get(optimizer, set())

    def group_members(self, group: str) -> set[str]:
        """The optimizers this file lists in the collection ``group``."""
        return self._groups().get(group, set())

    def _groups(self) -> dict[str, set[str]]:
        """Collections of optimizers by what this file puts in them: list and tuple
        literals, a dict literal's values, ``opts[name] = opt``."""
        if self._group_members is None:
            self._group_members = {}
            for node in self._assignments:
                value = node.value
                if type(value) in (ast.List, ast.Tuple):
                    elements = value.elts
                elif type(value) is ast.Dict:
                    elements = value.values
                else:
                    elements = [value]
                members = {dotted(e) for e in elements} - {None}
                for target in node.targets:
                    if type(value) not in (ast.List, ast.Tuple, ast.Dict):
                        if type(target) is not ast.Subscript:
                            continue
                        target = target.value  # `self._optimizers[name] = opt`
                    key = dotted(target)
                    if key and self.is_group(key):
                        self._group_members.setdefault(key, set()).update(members)
        return self._group_members

    def models_of(self, optimizer: str) -> set[str]:
        """Receivers whose ``.parameters()`` went into ``optimizer``'s constructor."""
        return self._models.get(optimizer, set())

    def optimizers_of_param(self, tensor: str) -> set[str]:
        """Optimizers built from an explicit list that names ``tensor``."""
        return {opt for opt, params in self._params.items() if tensor in params}

    def models_all_known(self) -> bool:
        """Every optimizer built in this file says which models' parameters it holds."""
        return bool(self._models) and all(self._models.values())

    def model_keys(self) -> set[str]:
        """Every receiver whose parameters an optimizer here holds, and its aliases."""
        if self._model_keys is None:
            held = {m for models in self._models.values() for m in models}
            self._model_keys = held | {a for m in held for a in self._aliases.get(m, ())}
        return self._model_keys

    def part_of_a_model(self, key: str) -> bool:
        """``self.model.base`` where ``self.model`` is a network here (an optimizer holds it,
        its ``parameters()`` are read, or it is called on data): a reset of it clears part
        of that network's gradients (freezing the body while the head trains), not all of
        them. A wrapper's ``.module`` is the whole network, not a part."""
        parent, _, attr = key.rpartition(".")
        if not parent or attr in _WHOLE_NETWORK_ATTRIBUTES or "(" in key or "[" in key:
            return False
        return parent != "self" and (self.is_a_network(parent) or parent in self._called())

    def is_a_network(self, key: str) -> bool:
        """Whether ``key`` shows itself a network here: an optimizer holds it, its
        ``parameters()`` are read, or a method only a module has is called on it."""
        called = self._called()
        return key in self.model_keys() or key in self.modules or any(
            f"{key}.{method}" in called for method in _MODULE_ONLY_METHODS)

    def networks_run(self, scope: ast.AST) -> frozenset[str]:
        """The networks that ``scope`` (a function, or the module) calls on data."""
        found = self._networks_run.get(id(scope))
        if found is None:
            found = self._networks_run[id(scope)] = frozenset(
                k for node in syntax.walk(scope) if type(node) is ast.Call
                for k in [dotted(node.func)] if k and self.is_a_network(k))
        return found

    def _called(self) -> set[str]:
        """Every name called in this file (``model``, ``self.net.train``)."""
        if self._called_keys is None:
            self._called_keys = ({dotted(call.func) for _, call in self._local_calls}
                                 | hollowed_calls(self.tree)) - {None}
        return self._called_keys

    def holds_more_than(self, optimizer: str, model: str) -> bool:
        """Whether ``optimizer`` is known to hold parameters outside ``model`` too (groups
        over ``model.base`` and ``model.classifier``, ``model.base`` reset)."""
        names = {model} | self._aliases.get(model, set())
        return any(not any(_covers(n, m) for n in names) for m in self.models_of(optimizer))

    def optimizers_of_model(self, model: str) -> set[str]:
        """Optimizers known to hold ``model``'s parameters, or those of a part of it
        (``model.backbone``): ``model.zero_grad()`` resets them (empty when unknown)."""
        names = {model} | self._aliases.get(model, set())
        return {opt for opt, models in self._models.items()
                if any(_covers(n, m) for n in names for m in models)}

    def built_in(self, optimizer: str, scope: ast.AST) -> bool:
        """Whether this file builds ``optimizer`` inside ``scope``."""
        site = self._opt_site.get(optimizer)
        return site is not None and self.is_inside(site, scope)

    def optimizers_apart_from(self, model: str) -> set[str]:
        """Optimizers known to hold only parameters of other models than ``model``: a reset
        of ``model`` leaves them alone. Two names are two objects only when this file builds
        each of them (``teacher = Net()``, ``student = Net()``); an optimizer whose models are
        unknown, or merely named differently, may hold some of ``model``'s parameters."""
        names = {model} | self._aliases.get(model, set())
        built = self._built_scopes()
        apart = set()
        for opt, models in self._models.items():
            site = self._opt_site.get(opt)
            if not models or site is None:
                continue
            # Names are not values: only within the scope that built the optimizer do two
            # names that this scope binds to objects of their own stand for two objects.
            scope = id(self.scope_of(site))
            if any(scope in built.get(n, ()) for n in names) and \
                    all(scope in built.get(m, ()) for m in models) and \
                    not any(_covers(n, m) or _covers(m, n) for n in names for m in models):
                apart.add(opt)
        return apart

    def _built_scopes(self) -> dict[str, set[int]]:
        if self._built_at:
            for key, node in self._built_at:
                self._built.setdefault(key, set()).add(id(self.scope_of(node)))
            self._built_at = []
        return self._built

    def scope_of(self, node: ast.AST) -> ast.AST:
        """The innermost function around ``node``, else the module."""
        current = self.parents.get(id(node))
        while current is not None and not isinstance(current, syntax.FUNCTIONS):
            current = self.parents.get(id(current))
        return current if current is not None else self.tree

    def _note_alias(self, node: ast.Assign) -> None:
        if len(node.targets) != 1:
            return
        if type(node.targets[0]) is ast.Tuple and type(node.value) is ast.Tuple:
            # `netG, netD = Generator(), Discriminator()`: each name its own object
            for element, value in zip(node.targets[0].elts, node.value.elts):
                key = dotted(element)
                if key and _new_object(value):
                    self._built_at.append((key, node))
            return
        target, source = dotted(node.targets[0]), _wrapped_model(node.value)
        if target and source and target != source and not source.endswith(")"):
            self._aliases.setdefault(target, set()).add(source)
            self._aliases.setdefault(source, set()).add(target)
        elif target and _new_object(node.value):
            self._built_at.append((target, node))  # `teacher = Net()`: an object of its own

    def own_backward(self, call: ast.Call) -> bool:
        """``self.backward(...)`` inside a class of this file that defines ``backward``."""
        func = call.func
        if type(func) is not ast.Attribute or func.attr != "backward" or \
                type(func.value) is not ast.Name or func.value.id != "self":
            return False
        cls = self._class_around(call)
        return cls is not None and self.class_method(cls, "backward") is not None

    def _constructor_under_moves(self, call: ast.Call) -> ast.Call:
        """``Cls(...)`` for ``Cls(...).to(device)``: a module's moves return the module itself,
        unless the class (or a base of the project) defines a method of that name."""
        while type(call.func) is ast.Attribute and call.func.attr in _RETURN_SELF \
                and type(call.func.value) is ast.Call:
            inner = call.func.value
            cls = last_name(dotted(inner.func) or "")
            if cls in self.classes and self.class_method(cls, call.func.attr) is not None:
                break
            call = inner
        return call

    def instance_class(self, key: str | None) -> str | None:
        """The class of this file that built the object ``key`` names (``x = Cls(...)``, or
        ``self.x = Cls(...)`` in any method)."""
        if not key:
            return None
        found = self.instances.get(key)
        if found is None and "." in key:
            found = self.instances.get("self." + key.split(".", 1)[1])
        return found

    def class_method(self, cls: str, name: str, seen: frozenset = frozenset()) -> FunctionNode | None:
        """Method ``name`` of the class ``cls`` of this file or of another module of the
        project, inherited from the classes of either too."""
        node = self.classes.get(cls)
        if node is None or cls in seen:
            return None
        owner = self._owners.get(id(node))
        if owner is not None:  # another module's class: its own index knows its bases
            found = owner.class_method(node.name, name)
            if found is not None:
                self._owners[id(found)] = owner._owners.get(id(found), owner)
            return found
        for item in node.body:
            if isinstance(item, syntax.FUNCTIONS) and item.name == name:
                return item
        for base in node.bases:
            base_name = last_name(dotted(base) or "")
            if base_name not in self.classes:
                self.import_class(base)
            found = self.class_method(base_name, name, seen | {cls})
            if found is not None:
                return found
        return None

    def is_torch_optimizer(self, key: str) -> bool:
        """Whether the file shows that ``key`` is an optimizer of torch's kind: built by
        calling an optimizer class (or a class of the project derived from one), or annotated
        as one. A factory's result or a name is no such evidence."""
        if self.built_by_a_class_from_elsewhere(key):
            return False
        if key in self.built_by_class or key in self.annotated:
            return True
        owner = self.instance_class(key)
        return owner is not None and self.is_optimizer_class(owner)

    def built_by_a_class_from_elsewhere(self, key: str) -> bool:
        """Whether ``key`` was built by an optimizer's class name that this file imports from
        neither torch nor a library of torch optimizers, for a class that is no torch
        optimizer (``from mytorch.optim import Adam``, a course's own NumPy optimizer): its
        ``step()`` is its own. The project's module says so where it is read (a class derived
        from none); where it is not, a file that imports nothing of PyTorch's does."""
        return key in self.built_by_class and \
            self.class_from_elsewhere(self._built_by_spelled.get(key, ""))

    def class_from_elsewhere(self, spelled: str) -> bool:
        """Whether the optimizer's class name ``spelled`` is imported from neither torch nor
        a library of torch optimizers, for a class that is no torch optimizer (see
        ``built_by_a_class_from_elsewhere``)."""
        head = spelled.partition(".")[0]
        if head not in self.imports:
            return False
        module, _, level = self.imports[head]
        if not level and module.partition(".")[0] in TORCH_OPTIMIZER_PACKAGES:
            return False
        self.import_class(ast.parse(spelled, mode="eval").body)
        name = last_name(spelled)
        if name in self.classes:
            return not self.is_optimizer_class(name)
        if self.plain_project_definition(spelled):
            return True  # the project's own class, whose text names no optimizer it derives from
        return not any(m.partition(".")[0] in PYTORCH_FAMILY for m in self.imported_modules())

    def is_optimizer_class(self, cls: str, seen: frozenset = frozenset()) -> bool:
        """Whether the class ``cls`` derives from an optimizer class."""
        node = self.classes.get(cls)
        if node is None or cls in seen:
            return False
        owner = self._owners.get(id(node))
        if owner is not None:
            return owner.is_optimizer_class(node.name)
        for base in node.bases:
            name = last_name(dotted(base) or "")
            if name not in self.classes and name not in OPTIMIZER_CLASSES:
                self.import_class(base)
            if name in OPTIMIZER_CLASSES or name.endswith("Optimizer") or \
                    self.is_optimizer_class(name, seen | {cls}):
                return True
        return False

    def resolve(
        self, call: ast.Call, class_name: str | None, local: dict[str, FunctionNode]
    ) -> FunctionNode | None:
        """The same-file function a call runs, or None for anything else."""
        func = call.func
        if type(func) is ast.Name:
            return local.get(func.id) or self.functions.get(func.id) or self._imported_callee(call)
        if type(func) is not ast.Attribute:
            return None
        attr = func.attr
        if not self.may_run_own_code(call):
            return None
        if type(func.value) is ast.Name and func.value.id in self.imports:
            return self._imported_callee(call)  # `helpers.reset(opt)`
        owner = self.instance_class(dotted(func.value))
        if owner is not None:  # `updater.step(loss)` with `updater = Updater(...)` here
            return self.class_method(owner, attr)
        candidates = self.methods.get(attr, [])
        if type(func.value) is ast.Name and func.value.id == "self":
            # the method of the class this code runs for, inherited or overridden
            own = self.class_method(class_name, attr) if class_name else None
            if own is not None:
                return own
        # Another object's method: only when this file defines exactly one method by that name.
        return candidates[0][1] if len(candidates) == 1 else None

    def is_counter_test(self, test: ast.AST) -> bool:
        """``i % k == 0``, or a test of a flag bound from one (``if should_step:``)."""
        return syntax.has_modulo(test) or not self.counter_flags().isdisjoint(syntax.names_in(test))

    def counter_flags(self) -> set[str]:
        """Names assigned from a counter test: ``should_step = (i + 1) % k == 0``."""
        if self._counter_flags is None:
            self._counter_flags = {
                name
                for node in self._assignments
                if syntax.has_modulo(node.value) or self._returns_counter_test(node.value)
                for target in node.targets
                for name in syntax.stored_names(target)
            }
        return self._counter_flags

    def _returns_counter_test(self, value: ast.AST) -> bool:
        """``should_step = self._should_do_step()`` where that method (or a function of this
        file) returns a counter test, ``(i % k) == k - 1``, on every path."""
        if type(value) is not ast.Call:
            return False
        func = value.func
        function = None
        if type(func) is ast.Name:
            function = self.functions.get(func.id)
        elif type(func) is ast.Attribute and dotted(func.value) == "self":
            owner = self._class_around(value)
            function = self.class_method(owner, func.attr) if owner else None
        if function is None:
            return False
        returned = [n.value for n in syntax.walk(function) if type(n) is ast.Return and n.value is not None]
        return bool(returned) and all(map(syntax.has_modulo, returned))

    def repeated_tests(self) -> set[str]:
        """The texts (without whitespace) of ``if``/``elif`` tests that occur more than once."""
        if self._repeated_tests is None:
            seen: set[str] = set()
            self._repeated_tests = set()
            for node in self._ifs:
                # `if not c:` reads the same test as `if c:`, `x != 0` as `x == 0`
                text, _ = syntax.canonical_test(node.test, self.text.segment)
                (self._repeated_tests if text in seen else seen).add(text)
            self._if_tests = seen
        return self._repeated_tests

    def tested_by_an_if(self, text: str) -> bool:
        """Whether some ``if``/``elif`` here tests ``text`` (a canonical test's text)."""
        self.repeated_tests()
        return text in self._if_tests

    def enclosing_class(self, function: ast.AST) -> str | None:
        """Class name for a method, else None."""
        return self.class_of.get(id(function))


def _new_object(value: ast.AST) -> bool:
    """A call that builds an object rather than wrapping a named one: ``Net()``,
    ``Net().to(device)``, but not ``DDP(model)`` or ``model.to(device)``."""
    if type(value) is not ast.Call:
        return False
    wrapped = _wrapped_model(value)
    return wrapped is None or wrapped.endswith(")")


def _builds_an_optimizer(call: ast.Call) -> bool:
    """``torch.optim.AdamW(...)``, ``SGD(...)``: a call of an optimizer class."""
    return names_an_optimizer_class(dotted(call.func) or "")


def names_an_optimizer_class(spelled: str) -> bool:
    """``torch.optim.AdamW``, ``SGD``: the name of one of torch's (or a known library's)
    optimizer classes, never a scheduler's."""
    name = last_name(spelled)
    return not _NOT_OPTIMIZER.search(spelled) and (
        name in OPTIMIZER_CLASSES or ".optim." in f".{spelled}." and name[:1].isupper())


def _covers(whole: str, part: str) -> bool:
    """Whether the module ``whole`` contains the module ``part`` (``model`` contains
    ``model.backbone``)."""
    return part == whole or part.startswith(whole + ".")


def _not_an_optimizer_step(call: ast.Call) -> bool:
    """``scheduler.step()``, ``ema.step(model)``, ``env.step(action)``: a ``step`` whose receiver
    is named as no optimizer is and that is handed no optimizer (``scaler.step(opt)`` is)."""
    func = call.func
    if type(func) is not ast.Attribute or func.attr != "step":
        return False
    receiver = last_name(dotted(func.value) or "")
    if not receiver or not _NOT_OPTIMIZER.search(receiver):
        return False
    return not any(looks_like_optimizer(member_key(a) or "") for a in syntax.positional(call))


# Calls that hand back their arguments wrapped, position for position.
_PREPARERS = frozenset({"prepare", "setup", "initialize", "setup_module_and_optimizers"})

# Optimizers without a `zero_grad()`: they keep gradients elsewhere (per autograd context).
NO_ZERO_GRAD = frozenset({"DistributedOptimizer"})

def _names_optimizer(annotation: ast.AST) -> bool:
    """``Optimizer``, ``torch.optim.AdamW``, ``Optional[Optimizer]``, ``"optim.SGD"``."""
    if type(annotation) is ast.Constant and isinstance(annotation.value, str):
        words = annotation.value.replace("[", " ").replace("]", " ").replace("|", " ").split()
    else:
        words = [dotted(n) or "" for n in syntax.walk(annotation)
                 if type(n) is ast.Name or type(n) is ast.Attribute]
    return any(last_name(w).endswith("Optimizer") or last_name(w) in OPTIMIZER_CLASSES
               for w in words)


def _listed_tensors(call: ast.Call) -> set[str]:
    args = syntax.positional(call)
    first = args[0] if args else syntax.keyword(call, "params")
    if type(first) is ast.List or type(first) is ast.Tuple:
        return {key for key in (dotted(e) for e in syntax.elements(first)) if key}
    return set()


_MODEL_WRAPPERS = frozenset(
    {"DistributedDataParallel", "DDP", "DataParallel", "FullyShardedDataParallel", "FSDP", "compile"}
)


def _wrapped_model(value: ast.AST) -> str | None:
    """``model`` in ``model``, ``model.to(device)``, ``DDP(model)``, ``torch.compile(model)``."""
    if type(value) is ast.Name or type(value) is ast.Attribute:
        return dotted(value)
    if type(value) is not ast.Call:
        return None
    func = value.func
    if type(func) is ast.Attribute and func.attr in ("to", "cuda", "cpu", "half", "float"):
        return dotted(func.value)
    args = syntax.positional(value)
    if syntax.callee_name(value) in _MODEL_WRAPPERS and args:
        return dotted(args[0])
    return None
