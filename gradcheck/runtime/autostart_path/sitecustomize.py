"""Start the gradcheck guard in processes spawned by ``gradcheck run``, then defer to any other
``sitecustomize`` further down ``sys.path`` (this one shadows it)."""
import importlib.machinery
import importlib.util
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_rest = [p for p in sys.path if os.path.abspath(p or ".") != _here]
_spec = importlib.machinery.PathFinder.find_spec("sitecustomize", _rest)
if _spec is not None and _spec.loader is not None:
    _spec.loader.exec_module(importlib.util.module_from_spec(_spec))

from gradcheck.runtime.autostart import start_at_interpreter_start

start_at_interpreter_start()
