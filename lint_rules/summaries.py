"""What one module tells us before any flow analysis: its functions, methods and optimizers.

The flow analysis analyses a call to a function or method defined in the same file by
walking the callee's body in place (with its parameters renamed to the caller's
arguments), so ``train_step(model, opt)``, ``self.backward_G()`` and LBFGS closures are
seen exactly as if they were written inline.
"""
from __future__ import annotations

import libcst as cst

from lint_rules import syntax
from lint_rules.events import (
    _NOT_OPTIMIZER,
    EVENT_CALL_NAMES,
    OPTIMIZER_CLASSES,
    dotted,
    is_backward_call,
    is_grad_write,
    is_grad_zeroing,
    last_name,
    looks_like_optimizer,
)
from lint_rules.rebinding import SAME_OBJECT_GETTERS

FunctionNode = syntax.FunctionNode
_OPT_FACTORY_WORDS = ("optimizer", "optimiser")
# Methods that torch / Lightning objects already have; a same-named method in this file is
# not evidence that the receiver is an instance of the file's class.
_FRAMEWORK_METHODS = frozenset(
    ["train", "eval", "forward", "to", "cuda", "cpu", "step", "zero_grad", "parameters", "named_parameters", "state_dict", "load_state_dict", "backward", "apply", "float", "half", "double", "modules", "children", "register_buffer", "update", "item", "detach", "clone", "copy_", "fit", "predict", "test", "validate", "log", "save", "load", "run", "close"]
)


class ModuleIndex:
    """Functions, methods, optimizer names and their models, for one parsed module.

    >>> index = ModuleIndex(cst.parse_module("opt = torch.optim.SGD(net.parameters(), lr=0.1)"))
    >>> sorted(index.optimizers), index.models_of("opt")
    (['opt'], {'net'})
    """

    def __init__(self, tree: cst.Module) -> None:
        self.tree = tree
        self.functions: dict[str, FunctionNode] = {}
        self.methods: dict[str, list[tuple[str, FunctionNode]]] = {}
        self.optimizers: set[str] = set()
        self._models: dict[str, set[str]] = {}
        self.built_by: dict[str, str] = {}  # optimizer key -> the class or factory that built it
        self._params: dict[str, set[str]] = {}  # tensors listed explicitly: SGD([W, b])
        self._aliases: dict[str, set[str]] = {}  # self.model = model, net = DDP(model)
        self.parents: dict[int, cst.CSTNode] = {}
        self.constructions: dict[int, list[str]] = {}  # assignment -> optimizers it builds
        self.call_cache: dict[int, list[cst.Call]] = {}  # statement -> its relevant calls
        self.class_of: dict[int, str] = {}
        self._counter_flags: set[str] | None = None  # computed on first use
        self._repeated_tests: set[str] | None = None
        self._ifs: list[cst.If] = []
        self._assignments: list[cst.Assign] = []
        self._index(tree)

    def _index(self, tree: cst.Module) -> None:
        # One pass over the tree (walking it is the main cost after parsing).
        for stmt in tree.body:
            if isinstance(stmt, cst.FunctionDef):
                self.functions[stmt.name.value] = stmt
        self.backward_calls: list[cst.Call] = []
        events: list[cst.CSTNode] = []
        local_calls: list[tuple[str, cst.Call]] = []
        self.referenced: set[str] = set()  # every name read and attribute used in the file
        self.passed_along: set[str] = set()  # names handed to a call as an argument
        self.zeroed: set[str] = set()  # receivers of a `zero_grad()` call somewhere here
        parents = self.parents
        declared: set[int] = set()  # names that declare rather than use (def f, import x)
        stack: list[cst.CSTNode] = [tree]
        while stack:
            node = stack.pop()
            for child in syntax.children(node):
                parents[id(child)] = node
                stack.append(child)
            # NOTE: exact type tests: isinstance() on libcst's ABC node classes is slow.
            kind = type(node)
            if kind is cst.Name:
                if id(node) not in declared:
                    self.referenced.add(node.value)
            elif kind is cst.Call:
                name = syntax.callee_name(node)
                if name in EVENT_CALL_NAMES and not _not_an_optimizer_step(node):
                    events.append(node)
                    if name == "zero_grad" and isinstance(node.func, cst.Attribute):
                        self.zeroed.add(dotted(node.func.value) or "")
                    if is_backward_call(node):
                        self.backward_calls.append(node)
                else:
                    local_calls.append((name, node))
            elif kind is cst.If:
                self._ifs.append(node)
            elif kind is cst.ClassDef:
                for item in syntax.body_of(node):
                    if type(item) is cst.FunctionDef:
                        self.methods.setdefault(item.name.value, []).append((node.name.value, item))
                        self.class_of[id(item)] = node.name.value
            elif kind is cst.Assign:
                if is_grad_zeroing(node) or is_grad_write(node):
                    events.append(node)
                else:
                    self._assignments.append(node)
                    self._note_alias(node)
                    if type(node.value) is cst.Call:
                        self._note_optimizer(node, [t.target for t in node.targets], node.value)
            elif kind is cst.AnnAssign and type(node.value) is cst.Call:
                self._note_optimizer(node, [node.target], node.value)
            elif kind is cst.Expr and (is_grad_zeroing(node) or is_grad_write(node)):
                events.append(node)
            if kind is cst.Arg and type(node.value) is cst.Name and node.keyword is None:
                call = parents.get(id(node))
                if type(call) is cst.Call and syntax.callee_name(call) not in EVENT_CALL_NAMES:
                    self.passed_along.add(node.value.value)  # Engine(update): a callback
            if kind in _DECLARING:
                declared.update(_declared_names(node))
        self.called = {name for name, _ in local_calls}  # names of every non-event call
        self._local_calls = local_calls
        self._called_functions: set[int] | None = None
        self._mark(events, local_calls)

    def _mark(self, events: list[cst.CSTNode], local_calls: list[tuple[str, cst.Call]]) -> None:
        """Mark every node that contains a gradient event, directly or through a call to a
        function of this file that does; the flow analysis skips everything unmarked."""
        self.marked: set[int] = set()
        self.eventful: set[str] = set()
        pending = list(events)
        known = set(self.functions) | set(self.methods)
        waiting = [(name, call) for name, call in local_calls if name in known]
        while pending:
            for node in pending:
                self._mark_ancestors(node)
            pending = [call for name, call in waiting if name in self.eventful
                       and id(call) not in self.marked]

    def _mark_ancestors(self, node: cst.CSTNode) -> None:
        current: cst.CSTNode | None = node
        while current is not None and id(current) not in self.marked:
            self.marked.add(id(current))
            if isinstance(current, cst.FunctionDef):
                self.eventful.add(current.name.value)
            current = self.parents.get(id(current))

    def is_called(self, function: FunctionNode) -> bool:
        """Whether some call in this file runs ``function`` (``model.train()`` does not run a
        function of the file named ``train``)."""
        if self._called_functions is None:
            nested: dict[str, list[FunctionNode]] = {}
            for node in self.parents.values():
                if type(node) is cst.FunctionDef and self.parents.get(id(node)) is not None:
                    nested.setdefault(node.name.value, []).append(node)
            self._called_functions = set()
            for name, call in self._local_calls:
                if name not in self.functions and name not in self.methods and name not in nested:
                    continue
                callee = self.resolve(call, self._class_around(call), {})
                targets = [callee] if callee is not None else []
                if isinstance(call.func, cst.Name):
                    targets += nested.get(name, [])
                self._called_functions.update(map(id, targets))
        return id(function) in self._called_functions

    def _class_around(self, node: cst.CSTNode) -> str | None:
        current = self.parents.get(id(node))
        while current is not None:
            if type(current) is cst.FunctionDef and id(current) in self.class_of:
                return self.class_of[id(current)]
            current = self.parents.get(id(current))
        return None

    def steps_a_parameter(self, function: FunctionNode) -> bool:
        """Whether ``function`` steps an optimizer that its caller passes in (a parameter
        other than ``self``): ``def __call__(self, loss, optimizer): ... optimizer.step()``."""
        params = set(syntax.parameter_names(function.params)) - {"self", "cls"}
        if not params:
            return False
        for node in syntax.walk(function):
            if type(node) is cst.Call and syntax.callee_name(node) in ("step", "optimizer_step"):
                receivers = [node.func.value] if isinstance(node.func, cst.Attribute) else []
                receivers += syntax.positional(node)[:1]
                if any(type(r) is cst.Name and r.value in params for r in receivers):
                    return True
        return False

    def contains_events(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` holds a gradient event or a call that reaches one."""
        return id(node) in self.marked

    def _note_optimizer(self, stmt: cst.CSTNode, targets: list[cst.CSTNode], call: cst.Call) -> None:
        callee = dotted(call.func) or ""
        name = last_name(callee)
        models = {
            dotted(n.func.value) or ""
            for n in syntax.walk(call)
            if isinstance(n, cst.Call)
            and isinstance(n.func, cst.Attribute)
            and n.func.attr.value in ("parameters", "named_parameters")
        } - {""}
        creates = not _NOT_OPTIMIZER.search(callee) and (
            name in OPTIMIZER_CLASSES
            or ".optim." in f".{callee}."
            and name[:1].isupper()
            or any(w in name.lower() for w in _OPT_FACTORY_WORDS)
        )
        # `self.optimizers(use_pl_optimizer=True)` hands back the module's own optimizers.
        getter = name in SAME_OBJECT_GETTERS
        for target in targets:
            if isinstance(target, cst.Tuple):
                if name in _PREPARERS:  # `scheduler, msg = build_scheduler(optimizer)` is not
                    self._note_prepared(target, call)
                continue
            key = dotted(target)
            if key and (creates or looks_like_optimizer(key)) and call.args and not getter:
                # Built here from arguments (not `self.optimizers()`, which hands back the same one).
                self.constructions.setdefault(id(stmt), []).append(key)
            if key and creates and not getter:
                self.optimizers.add(key)
                self.built_by[key] = name
                self._models[key] = models
                self._params[key] = _listed_tensors(call)

    def _note_prepared(self, target: cst.Tuple, call: cst.Call) -> None:
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
        """Whether ``key.zero_grad()`` exists: not when the file built it with a class that has
        none; yes when it built it with another optimizer class or calls ``zero_grad`` on it."""
        if self.built_by.get(key) in NO_ZERO_GRAD:
            return False
        # Otherwise a name that reads as an optimizer's (never a scheduler's, scaler's or
        # EMA's: `looks_like_optimizer` rules those out) is taken at its word.
        return key in self.optimizers or key in self.zeroed or looks_like_optimizer(key)

    def is_optimizer(self, key: str) -> bool:
        """Built by an optimizer constructor in this file, or named like one."""
        return key in self.optimizers or looks_like_optimizer(key)

    def models_of(self, optimizer: str) -> set[str]:
        """Receivers whose ``.parameters()`` went into ``optimizer``'s constructor."""
        return self._models.get(optimizer, set())

    def optimizers_of_param(self, tensor: str) -> set[str]:
        """Optimizers built from an explicit list that names ``tensor``."""
        return {opt for opt, params in self._params.items() if tensor in params}

    def models_all_known(self) -> bool:
        """Every optimizer built in this file says which models' parameters it holds."""
        return bool(self._models) and all(self._models.values())

    def optimizers_of_model(self, model: str) -> set[str]:
        """Optimizers known to hold ``model``'s parameters (empty when unknown)."""
        names = {model} | self._aliases.get(model, set())
        return {opt for opt, models in self._models.items() if names & models}

    def _note_alias(self, node: cst.Assign) -> None:
        if len(node.targets) != 1:
            return
        target, source = dotted(node.targets[0].target), _wrapped_model(node.value)
        if target and source and target != source:
            self._aliases.setdefault(target, set()).add(source)
            self._aliases.setdefault(source, set()).add(target)

    def resolve(
        self, call: cst.Call, class_name: str | None, local: dict[str, FunctionNode]
    ) -> FunctionNode | None:
        """The same-file function a call runs, or None for anything else."""
        func = call.func
        if isinstance(func, cst.Name):
            return local.get(func.value) or self.functions.get(func.value)
        if not isinstance(func, cst.Attribute):
            return None
        attr = func.attr.value
        candidates = self.methods.get(attr, [])
        if isinstance(func.value, cst.Name) and func.value.value == "self":
            own = [f for cls, f in candidates if cls == class_name]
            if own:
                return own[0]
        elif attr in _FRAMEWORK_METHODS or not isinstance(func.value, cst.Name):
            # model.train() is nn.Module's whatever this file defines; self.task.step_fn()
            # belongs to some other object.
            return None
        # Another object's method: only when this file defines exactly one method by that name.
        return candidates[0][1] if len(candidates) == 1 else None

    def counter_flags(self) -> set[str]:
        """Names assigned from a counter test: ``should_step = (i + 1) % k == 0``."""
        if self._counter_flags is None:
            self._counter_flags = {
                name
                for node in self._assignments
                if syntax.has_modulo(node.value)
                for target in node.targets
                for name in syntax.stored_names(target.target)
            }
        return self._counter_flags

    def repeated_tests(self) -> set[str]:
        """The texts (without whitespace) of ``if``/``elif`` tests that occur more than once."""
        if self._repeated_tests is None:
            seen: set[str] = set()
            self._repeated_tests = set()
            code = self.tree.code_for_node
            for node in self._ifs:
                test = node.test
                while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                    test = test.expression  # `if not c:` reads the same test as `if c:`
                text = "".join(code(test).split())
                (self._repeated_tests if text in seen else seen).add(text)
        return self._repeated_tests

    def enclosing_class(self, function: cst.CSTNode) -> str | None:
        """Class name for a method, else None."""
        return self.class_of.get(id(function))


def _not_an_optimizer_step(call: cst.Call) -> bool:
    """``scheduler.step()``, ``ema.step(model)``, ``env.step(action)``: a ``step`` whose receiver
    is named as no optimizer is and that is handed no optimizer (``scaler.step(opt)`` is)."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value != "step":
        return False
    receiver = last_name(dotted(func.value) or "")
    if not receiver or not _NOT_OPTIMIZER.search(receiver):
        return False
    return not any(looks_like_optimizer(dotted(a) or "") for a in syntax.positional(call))


# Calls that hand back their arguments wrapped, position for position.
_PREPARERS = frozenset({"prepare", "setup", "initialize", "setup_module_and_optimizers"})

# Optimizers without a `zero_grad()`: they keep gradients elsewhere (per autograd context).
NO_ZERO_GRAD = frozenset({"DistributedOptimizer"})

_DECLARING = frozenset({cst.FunctionDef, cst.ClassDef, cst.Param, cst.Arg, cst.Import, cst.ImportFrom,
                        cst.Global, cst.Nonlocal, cst.ExceptHandler})


def _declared_names(node: cst.CSTNode) -> list[int]:
    """Name nodes under ``node`` that name a definition, an import or a keyword argument:
    Python's own tree has plain strings there, and they are not uses of the name."""
    if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Param)):
        return [id(node.name)]
    if isinstance(node, cst.Arg) and node.keyword is not None:
        return [id(node.keyword)]
    if isinstance(node, (cst.Import, cst.ImportFrom)):
        return [id(n) for n in syntax.walk(node)]
    if isinstance(node, (cst.Global, cst.Nonlocal)):
        return [id(item.name) for item in node.names]
    if isinstance(node, cst.ExceptHandler) and node.name is not None:
        return [id(node.name.name)]
    return []


def _listed_tensors(call: cst.Call) -> set[str]:
    args = syntax.positional(call)
    first = args[0] if args else syntax.keyword(call, "params")
    if isinstance(first, (cst.List, cst.Tuple)):
        return {key for key in (dotted(e) for e in syntax.elements(first)) if key}
    return set()


_MODEL_WRAPPERS = frozenset(
    {"DistributedDataParallel", "DDP", "DataParallel", "FullyShardedDataParallel", "FSDP", "compile"}
)


def _wrapped_model(value: cst.CSTNode) -> str | None:
    """``model`` in ``model``, ``model.to(device)``, ``DDP(model)``, ``torch.compile(model)``."""
    if isinstance(value, (cst.Name, cst.Attribute)):
        return dotted(value)
    if not isinstance(value, cst.Call):
        return None
    func = value.func
    if isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda", "cpu", "half", "float"):
        return dotted(func.value)
    args = syntax.positional(value)
    if syntax.callee_name(value) in _MODEL_WRAPPERS and args:
        return dotted(args[0])
    return None
