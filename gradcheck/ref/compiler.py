"""``torch.compiler``: nothing is compiled on a numpy engine, so every query says "not
compiling" and every decorator returns its function unchanged.

>>> import gradcheck.ref as torch
>>> @torch.compiler.disable
... def step(x):
...     return x * 2
>>> step(3), torch.compiler.is_compiling()
(6, False)
"""
from __future__ import annotations

import contextlib
from types import SimpleNamespace
from typing import Any

from gradcheck.ref.standins import identity_decorator, module_fallback

__getattr__ = module_fallback("torch.compiler", "there is no compiler; code runs eagerly")

disable = allow_in_graph = assume_constant_result = substitute_in_graph = identity_decorator
nested_compile_region = identity_decorator
config = SimpleNamespace()


def is_compiling() -> bool:
    return False


is_dynamo_compiling = is_exporting = is_compiling


def reset() -> None:
    """No compiled code to forget."""


def cudagraph_mark_step_begin() -> None:
    """No CUDA graphs here."""


def list_backends(exclude_tags: Any = ("debug", "experimental")) -> list:
    """The backends registered with ``torch._dynamo.register_backend`` (none of torch's)."""
    from gradcheck.ref import _dynamo

    return _dynamo.list_backends(exclude_tags)


@contextlib.contextmanager
def set_stance(stance: str = "default", **kwargs: Any):
    yield


def compile(model: Any = None, **kwargs: Any) -> Any:  # noqa: A001
    from gradcheck.ref import compile as eager_compile

    return eager_compile(model, **kwargs)
