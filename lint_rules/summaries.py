"""What one module tells us before any flow analysis: its functions, methods and optimizers.

The flow analysis analyses a call to a function or method defined in the same file by
walking the callee's body in place (with its parameters renamed to the caller's
arguments), so ``train_step(model, opt)``, ``self.backward_G()`` and LBFGS closures are
seen exactly as if they were written inline.
"""
from __future__ import annotations

import ast

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

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
_OPT_FACTORY_WORDS = ("optimizer", "optimiser")
# Methods that torch / Lightning objects already have; a same-named method in this file is
# not evidence that the receiver is an instance of the file's class.
_FRAMEWORK_METHODS = frozenset(
    ["train", "eval", "forward", "to", "cuda", "cpu", "step", "zero_grad", "parameters", "named_parameters", "state_dict", "load_state_dict", "backward", "apply", "float", "half", "double", "modules", "children", "register_buffer", "update", "item", "detach", "clone", "copy_", "fit", "predict", "test", "validate", "log", "save", "load", "run", "close"]
)


class ModuleIndex:
    """Functions, methods, optimizer names and their models, for one parsed module.

    >>> import ast
    >>> index = ModuleIndex(ast.parse("opt = torch.optim.SGD(net.parameters(), lr=0.1)"))
    >>> sorted(index.optimizers), index.models_of("opt")
    (['opt'], {'net'})
    """

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.functions: dict[str, FunctionNode] = {}
        self.methods: dict[str, list[tuple[str, FunctionNode]]] = {}
        self.optimizers: set[str] = set()
        self._models: dict[str, set[str]] = {}
        self._params: dict[str, set[str]] = {}  # tensors listed explicitly: SGD([W, b])
        self._aliases: dict[str, set[str]] = {}  # self.model = model, net = DDP(model)
        self.parents: dict[int, ast.AST] = {}
        self.constructions: dict[int, list[str]] = {}  # assignment -> optimizers it builds
        self.call_cache: dict[int, list[ast.Call]] = {}  # statement -> its relevant calls
        self.class_of: dict[int, str] = {}
        self._index(tree)

    def _index(self, tree: ast.Module) -> None:
        # One pass over the tree (walking it is the main cost after parsing).
        for stmt in tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[stmt.name] = stmt
        self.backward_calls: list[ast.Call] = []
        events: list[ast.AST] = []
        local_calls: list[tuple[str, ast.Call]] = []
        self.referenced: set[str] = set()  # every name read and attribute used in the file
        parents = self.parents
        stack: list[ast.AST] = [tree]
        while stack:
            node = stack.pop()
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
                stack.append(child)
            if isinstance(node, ast.Name):
                self.referenced.add(node.id)
            elif isinstance(node, ast.Attribute):
                self.referenced.add(node.attr)
            if isinstance(node, ast.Call):
                name = _call_name(node)
                if name in EVENT_CALL_NAMES:
                    events.append(node)
                    if is_backward_call(node):
                        self.backward_calls.append(node)
                else:
                    local_calls.append((name, node))
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self.methods.setdefault(item.name, []).append((node.name, item))
                        self.class_of[id(item)] = node.name
            elif isinstance(node, ast.Assign):
                if is_grad_zeroing(node) or is_grad_write(node):
                    events.append(node)
                else:
                    self._note_alias(node)
                    if isinstance(node.value, ast.Call):
                        self._note_optimizer(node, node.targets, node.value)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.value, ast.Call):
                self._note_optimizer(node, [node.target], node.value)
            elif isinstance(node, ast.Expr) and (is_grad_zeroing(node) or is_grad_write(node)):
                events.append(node)
        self._mark(events, local_calls)

    def _mark(self, events: list[ast.AST], local_calls: list[tuple[str, ast.Call]]) -> None:
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

    def _mark_ancestors(self, node: ast.AST) -> None:
        current: ast.AST | None = node
        while current is not None and id(current) not in self.marked:
            self.marked.add(id(current))
            if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.eventful.add(current.name)
            current = self.parents.get(id(current))

    def contains_events(self, node: ast.AST) -> bool:
        """Whether ``node`` holds a gradient event or a call that reaches one."""
        return id(node) in self.marked

    def _note_optimizer(self, stmt: ast.stmt, targets: list[ast.expr], call: ast.Call) -> None:
        callee = dotted(call.func) or ""
        name = last_name(callee)
        models = {
            dotted(n.func.value) or ""
            for n in ast.walk(call)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in ("parameters", "named_parameters")
        } - {""}
        creates = not _NOT_OPTIMIZER.search(callee) and (
            name in OPTIMIZER_CLASSES
            or ".optim." in f".{callee}."
            and name[:1].isupper()
            or any(w in name.lower() for w in _OPT_FACTORY_WORDS)
        )
        for target in targets:
            if isinstance(target, ast.Tuple):
                self._note_prepared(target, call)
                continue
            key = dotted(target)
            if key and (creates or looks_like_optimizer(key)) and (call.args or call.keywords):
                # Built here from arguments (not `self.optimizers()`, which hands back the same one).
                self.constructions.setdefault(id(stmt), []).append(key)
            if key and creates:
                self.optimizers.add(key)
                self._models[key] = models
                self._params[key] = _listed_tensors(call)

    def _note_prepared(self, target: ast.Tuple, call: ast.Call) -> None:
        # `model, opt = accelerator.prepare(model, opt)`: positions keep their roles.
        for element, arg in zip(target.elts, call.args):
            key, source = dotted(element), dotted(arg)
            if key and source and (source in self.optimizers or looks_like_optimizer(source)):
                self.optimizers.add(key)
                self._models.setdefault(key, self._models.get(source, set()))

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

    def _note_alias(self, node: ast.Assign) -> None:
        if len(node.targets) != 1:
            return
        target, source = dotted(node.targets[0]), _wrapped_model(node.value)
        if target and source and target != source:
            self._aliases.setdefault(target, set()).add(source)
            self._aliases.setdefault(source, set()).add(target)

    def resolve(
        self, call: ast.Call, class_name: str | None, local: dict[str, FunctionNode]
    ) -> FunctionNode | None:
        """The same-file function a call runs, or None for anything else."""
        func = call.func
        if isinstance(func, ast.Name):
            return local.get(func.id) or self.functions.get(func.id)
        if not isinstance(func, ast.Attribute):
            return None
        candidates = self.methods.get(func.attr, [])
        if isinstance(func.value, ast.Name) and func.value.id == "self":
            own = [f for cls, f in candidates if cls == class_name]
            if own:
                return own[0]
        elif func.attr in _FRAMEWORK_METHODS or not isinstance(func.value, ast.Name):
            # model.train() is nn.Module's whatever this file defines; self.task.step_fn()
            # belongs to some other object.
            return None
        # Another object's method: only when this file defines exactly one method by that name.
        return candidates[0][1] if len(candidates) == 1 else None

    def enclosing_class(self, function: ast.AST) -> str | None:
        """Class name for a method, else None."""
        return self.class_of.get(id(function))


def _listed_tensors(call: ast.Call) -> set[str]:
    first = call.args[0] if call.args else next(
        (kw.value for kw in call.keywords if kw.arg == "params"), None
    )
    if isinstance(first, (ast.List, ast.Tuple)):
        return {key for key in (dotted(e) for e in first.elts) if key}
    return set()


def _call_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


_MODEL_WRAPPERS = frozenset(
    {"DistributedDataParallel", "DDP", "DataParallel", "FullyShardedDataParallel", "FSDP", "compile"}
)


def _wrapped_model(value: ast.AST) -> str | None:
    """``model`` in ``model``, ``model.to(device)``, ``DDP(model)``, ``torch.compile(model)``."""
    if isinstance(value, (ast.Name, ast.Attribute)):
        return dotted(value)
    if not isinstance(value, ast.Call):
        return None
    func = value.func
    if isinstance(func, ast.Attribute) and func.attr in ("to", "cuda", "cpu", "half", "float"):
        return dotted(func.value)
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name in _MODEL_WRAPPERS and value.args:
        return dotted(value.args[0])
    return None
