"""``torch._dynamo``: the few hooks scripts touch (``config`` knobs, ``disable``,
``is_compiling``); there is no bytecode compiler behind them.

>>> import gradcheck.ref as torch
>>> torch._dynamo.config.cache_size_limit = 64
>>> torch._dynamo.is_compiling()
False
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from gradcheck.ref.compiler import is_compiling, reset  # noqa: F401
from gradcheck.ref.standins import identity_decorator, module_fallback

__getattr__ = module_fallback("torch._dynamo", "there is no compiler; code runs eagerly")

config = SimpleNamespace(cache_size_limit=8, accumulated_cache_size_limit=256,
                         suppress_errors=False, verbose=False, optimize_ddp=True)
disable = allow_in_graph = identity_decorator


def optimize(*args: Any, **kwargs: Any):
    """``@torch._dynamo.optimize(backend)``: the function, unchanged."""
    return lambda fn: fn


def mark_dynamic(tensor: Any, index: Any, **kwargs: Any) -> None:
    """Shape hints for the compiler; nothing to record."""


def mark_static(tensor: Any, index: Any = None) -> None:
    """Shape hints for the compiler; nothing to record."""
