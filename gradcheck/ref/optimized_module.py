"""``torch._dynamo.eval_frame.OptimizedModule``: what ``torch.compile(module)`` returns.

torch wraps the module, keeping it as ``_orig_mod``: the wrapper's ``state_dict`` keys and
parameter names carry the ``_orig_mod.`` prefix (scripts strip it before saving), reading
or setting any other attribute reaches the original module, and calling it runs the
original's forward. Here nothing is compiled, so the call is the original module's call.

>>> import gradcheck.ref as torch
>>> compiled = torch.compile(torch.nn.Linear(2, 1))
>>> type(compiled).__name__, list(compiled.state_dict()), compiled.in_features
('OptimizedModule', ['_orig_mod.weight', '_orig_mod.bias'], 2)
"""
from __future__ import annotations

from typing import Any

from gradcheck.ref.nn.module import Module

# kept on the wrapper itself; every other attribute belongs to the original module
_OWN = frozenset({"_orig_mod", "dynamo_ctx", "_torchdynamo_orig_callable", "forward",
                  "training", "__dict__"})


class OptimizedModule(Module):
    """A compiled module: ``_orig_mod`` is the module given to ``torch.compile``."""

    def __init__(self, mod: Module, dynamo_ctx: Any = None) -> None:
        super().__init__()
        self._orig_mod = mod
        self.dynamo_ctx = dynamo_ctx
        self._torchdynamo_orig_callable = mod.forward
        self.training = mod.training

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._orig_mod(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name == "_orig_mod":
            return self.__dict__["_modules"]["_orig_mod"]
        return getattr(self._orig_mod, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _OWN or hasattr(type(self), name):
            super().__setattr__(name, value)
        else:
            setattr(self._orig_mod, name, value)

    def __delattr__(self, name: str) -> None:
        if name in _OWN or hasattr(type(self), name):
            super().__delattr__(name)
        else:
            delattr(self._orig_mod, name)

    def __reduce__(self) -> tuple:
        return (type(self), (self._orig_mod, self.dynamo_ctx))

    def __dir__(self) -> list:
        return sorted(set(super().__dir__()) | set(dir(self._orig_mod)))
