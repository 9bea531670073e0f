"""Run a function right after a module is imported, without importing it ourselves.

The guard session patches torch only once the program imports it, so a program (or a child
process under ``GRADCHECK_GUARD=1``) that never uses torch pays nothing.

>>> import sys
>>> seen = []
>>> after_import("json", lambda module: seen.append(module.__name__))
>>> import json
>>> seen
['json']
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any


def after_import(name: str, callback: Callable[[ModuleType], None]) -> None:
    """Call ``callback(module)`` once ``name`` is imported; now, if it already is."""
    module = sys.modules.get(name)
    if module is not None:
        callback(module)
        return
    sys.meta_path.insert(0, _AfterImport(name, callback))


class _AfterImport(importlib.abc.MetaPathFinder):
    """A finder that lets the real finders find ``name`` and wraps the loader's exec_module."""

    def __init__(self, name: str, callback: Callable[[ModuleType], None]) -> None:
        self.name = name
        self.callback = callback
        self.busy = False

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.name or self.busy:
            return None
        self.busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        sys.meta_path.remove(self)  # once is enough
        exec_module = spec.loader.exec_module

        def exec_then_call(module: ModuleType) -> None:
            exec_module(module)
            self.callback(module)

        spec.loader.exec_module = exec_then_call  # type: ignore[method-assign]
        return spec
