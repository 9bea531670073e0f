"""``torch.utils._import_utils``: whether optional packages can be imported (datapipes pickle
lambdas with ``dill`` when it is installed)."""
from __future__ import annotations

import functools
import importlib.util


def _check_module_exists(name: str) -> bool:
    """Whether ``name`` can be imported, without importing it."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


@functools.lru_cache
def dill_available() -> bool:
    return _check_module_exists("dill")
