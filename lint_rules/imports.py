"""What a module learns from the other modules of its project: the functions and classes it
imports, and what it cannot know about the ones the analysis does not read.

``ModuleIndex`` (``summaries.py``) takes these methods as a base class: a call of an
imported helper, a method inherited from another module's class and a meter built by an
imported class are walked where they are called (``effects.py``), with the callee's own
module index (``owner_of``). A function of the project that is not read (an import further
away than the analysis follows), handed an optimizer, may reset it: unknown, hence benign.
"""
from __future__ import annotations

import ast

from lint_rules import syntax
from lint_rules.events import OPTIMIZER_CLASSES, dotted, last_name

# Classes and functions whose meaning the analysis knows without reading them: where the
# linted tree holds torch itself, their sources (128 KB for nn.Module) would be read for
# every file that names them, to learn nothing the analysis does not already know.
_KNOWN_WITHOUT_READING = OPTIMIZER_CLASSES | frozenset({
    "Module", "Optimizer", "DistributedDataParallel", "DataParallel", "FullyShardedDataParallel",
    "GradScaler", "ShardedGradScaler", "no_grad", "enable_grad", "set_grad_enabled",
    "inference_mode", "Sequential", "ModuleList", "ModuleDict",
})


class ImportedCode:
    """The import side of ``ModuleIndex``; expects the attributes its ``__init__`` sets
    (``imports``, ``project``, ``classes``, ``_owners``, ...)."""

    def imported(self, name: str, attr: str | None = None) -> ast.AST | None:
        """The function or class that ``name`` (``name.attr`` for a module) is imported as
        from another module of the project; None when it is not one (or unknown)."""
        if self.project is None or name not in self.imports and (attr or not self._star_imports):
            return None
        if (attr or (self.imports[name][1] if name in self.imports else name)) in _KNOWN_WITHOUT_READING:
            return None
        key = (name, attr)
        if key not in self._foreign:
            if name in self.imports:
                self._foreign[key] = self._definition(self._import_target(name, attr))
            else:  # `assign_grads(model, g)` after `from pkg.utils import *`
                self._foreign[key] = next(filter(None, (
                    self._definition((module, name, level)) for module, level in self._star_imports)), None)
        return self._foreign[key]

    def _import_target(self, name: str, attr: str | None) -> tuple[str, str, int] | None:
        """(module, name there, level) of what ``name`` (``name.attr`` for a module) is
        imported as; None for a module named alone."""
        module, imported, level = self.imports[name]
        if imported is None:  # `import pkg.mod as m` ... `m.fn(...)`
            return (module, attr, level) if attr else None
        if attr is None:  # `from pkg.mod import fn` ... `fn(...)`
            return module, imported, level
        # `from pkg import mod` ... `mod.fn(...)`
        return (f"{module}.{imported}" if module else imported), attr, level

    def _definition(self, target: tuple[str, str, int] | None) -> ast.AST | None:
        if target is None:
            return None
        module, name, level = target
        found = self.project.definition(module, name, self.path, level)
        if found is None or found[1].index is None:
            return None
        self._owners[id(found[0])] = found[1].index
        return found[0]

    def plain_project_definition(self, spelled: str) -> bool:
        """Whether ``spelled`` (``SGD``, ``optim.SGD``) names a definition of the project
        whose text mentions no gradient, step or optimizer (``Project.defines_plainly``)."""
        head, _, rest = spelled.partition(".")
        if self._finder is None or head not in self.imports or "." in rest:
            return False
        target = self._import_target(head, rest or None)
        return target is not None and self._finder.defines_plainly(target[0], target[1], self.path, target[2])

    def _unread(self, target: tuple[str, str, int] | None) -> bool:
        """Whether ``target`` is a definition of the project that may hold gradient events
        (see ``Project.may_define_events``)."""
        return target is not None and self._finder.may_define_events(target[0], target[1], self.path, target[2])

    def import_class(self, callee: ast.AST) -> None:
        """Know the class that ``callee`` names (``Trainer``, ``engine.Trainer``) when another
        module of the project defines it."""
        key = dotted(callee) or ""
        head, _, rest = key.partition(".")
        found = self.imported(head, rest or None) if "(" not in key and "." not in rest else None
        if type(found) is ast.ClassDef:
            self.classes.setdefault(found.name, found)
            self.classes.setdefault(last_name(key), found)

    def owner_of(self, node: ast.AST) -> ImportedCode | None:
        """The index of the other module that defines ``node``; None for this module's own."""
        return self._owners.get(id(node))

    def _calls_eventful_import(self, call: ast.Call) -> bool:
        """A call of another module's function that holds a gradient event."""
        if self.project is None or not self.imports:
            return False
        callee = self._imported_callee(call)
        owner = self._owners.get(id(callee)) if callee is not None else None
        return owner is not None and owner.contains_events(callee)

    def calls_unread_inherited_method(self, call: ast.Call) -> bool:
        """``self.mart_loss(x, y)`` where no class of the chain defines ``mart_loss`` and one
        of the bases is the project's but not read (a module further away than imports are
        followed): the method may reset the object's optimizers. A third-party base's
        methods (``self.log(...)``) do nothing to gradients, as any third-party call."""
        func = call.func
        if self._finder is None or type(func) is not ast.Attribute or type(func.value) is not ast.Name \
                or func.value.id != "self":
            return False
        cls = self._class_around(call)
        if cls is None or not self._has_unread_base(cls, frozenset()):
            return False
        return self.class_method(cls, func.attr) is None

    def _has_unread_base(self, cls: str, seen: frozenset) -> bool:
        if not seen and cls in self._unread_bases:
            return self._unread_bases[cls]
        found = self._find_unread_base(cls, seen)
        if not seen:
            self._unread_bases[cls] = found
        return found

    def _find_unread_base(self, cls: str, seen: frozenset) -> bool:
        node = self.classes.get(cls)
        if node is None or cls in seen:
            return False
        owner = self._owners.get(id(node))
        if owner is not None:  # another module's class: its own imports tell
            return owner._has_unread_base(node.name, seen)
        for base in node.bases:
            key = dotted(base) or ""
            name = last_name(key)
            if name in _KNOWN_WITHOUT_READING:
                continue
            if name not in self.classes:
                self.import_class(base)  # read it when the project can
            if name in self.classes:
                if self._has_unread_base(name, seen | {cls}):
                    return True
                continue
            head, _, rest = key.partition(".")
            if head in self.imports and self._unread(self._import_target(head, rest or None)):
                return True
        return False

    def hands_optimizer_to_unread_code(self, call: ast.Call) -> bool:
        """``mart_loss(self.model, x, y, self.optimizer)`` with ``mart_loss`` imported from a
        module of the project that the analysis does not read (two imports away, or not
        parsed): handed an optimizer, it may reset it, so what it does is unknown."""
        func = call.func
        if type(func) is ast.Attribute and type(func.value) is ast.Name:
            name, attr = func.value.id, func.attr
        elif type(func) is ast.Name:
            name, attr = func.id, None
        else:
            return False
        if self._finder is None or name not in self.imports or not call.args and not call.keywords \
                or not any(self._optimizer_or_inside_one(dotted(arg) or "") for arg in syntax.call_values(call)) \
                or self._imported_callee(call) is not None:
            return False
        return self._unread(self._import_target(name, attr))

    def _optimizer_or_inside_one(self, key: str) -> bool:
        """``opt``, or what an optimizer wraps (``opt._optimizer``): a reset of either is
        a reset of ``opt``'s gradients."""
        return self.is_optimizer(key) or "." in key and self.is_optimizer(key.rpartition(".")[0])

    def _imported_callee(self, call: ast.Call) -> ast.AST | None:
        func = call.func
        if type(func) is ast.Name:
            found = self.imported(func.id)
            return found if isinstance(found, syntax.FUNCTIONS) else None
        if type(func) is ast.Attribute and type(func.value) is ast.Name and func.value.id in self.imports:
            found = self.imported(func.value.id, func.attr)
            return found if isinstance(found, syntax.FUNCTIONS) else None
        if type(func) is ast.Attribute and type(func.value) is ast.Name and func.value.id == "self":
            # `self.optimizer_zero_grad(mod)`: a method inherited from another module's class
            cls = self._class_around(call)
            found = self.class_method(cls, func.attr) if cls else None
            return found if found is not None and id(found) in self._owners else None
        if type(func) is ast.Attribute:  # `trainer.fit(...)`, `trainer = Trainer(...)` imported
            cls = self.instance_class(dotted(func.value))
            node = self.classes.get(cls) if cls else None
            if node is not None and id(node) in self._owners:
                return self.class_method(cls, func.attr)
        return None
