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
    OPTIMIZER_CLASSES,
    dotted,
    last_name,
    looks_like_optimizer,
)

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
_OPT_FACTORY_WORDS = ("optimizer", "optimiser")


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
        self.parents: dict[int, ast.AST] = {}
        self.class_of: dict[int, str] = {}
        self._index(tree)

    def _index(self, tree: ast.Module) -> None:
        for stmt in tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[stmt.name] = stmt
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self.methods.setdefault(item.name, []).append((node.name, item))
                        self.class_of[id(item)] = node.name
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                self._note_optimizer(node.targets, node.value)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.value, ast.Call):
                self._note_optimizer([node.target], node.value)

    def _note_optimizer(self, targets: list[ast.expr], call: ast.Call) -> None:
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
            if key and creates:
                self.optimizers.add(key)
                self._models[key] = models

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

    def optimizers_of_model(self, model: str) -> set[str]:
        """Optimizers known to hold ``model``'s parameters (empty when unknown)."""
        return {opt for opt, models in self._models.items() if model in models}

    def resolve(
        self, call: ast.Call, class_name: str | None, local: dict[str, FunctionNode]
    ) -> FunctionNode | None:
        """The same-file function a call runs, or None for anything else."""
        func = call.func
        if isinstance(func, ast.Name):
            return local.get(func.id) or self.functions.get(func.id)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if func.value.id != "self":
                return None
            candidates = self.methods.get(func.attr, [])
            own = [f for cls, f in candidates if cls == class_name]
            if own:
                return own[0]
            if len(candidates) == 1:
                return candidates[0][1]
        return None

    def enclosing_class(self, function: ast.AST) -> str | None:
        """Class name for a method, else None."""
        return self.class_of.get(id(function))
