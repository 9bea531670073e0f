"""A config module as torch's ``torch._dynamo.config`` is one: a fixed set of flags with
torch's defaults, an ``AttributeError`` naming an unknown flag (torch's message), aliases
(``cache_size_limit`` is ``recompile_limit``), and ``patch`` for temporary changes as a
context manager or a decorator. Nothing compiles here, so the flags only hold values.

>>> config = ConfigModule("torch._dynamo.config", {"verbose": False}, {})
>>> with config.patch(verbose=True):
...     config.verbose
True
>>> config.verbose
False
"""
from __future__ import annotations

import contextlib
import copy
from typing import Any


class ConfigModule:
    """Flags with defaults; ``patch``, ``save_config``/``load_config`` and ``get_config_copy``
    as torch's config modules have."""

    def __init__(self, name: str, defaults: dict, aliases: dict) -> None:
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_values", dict(defaults))
        object.__setattr__(self, "_defaults", dict(defaults))
        object.__setattr__(self, "_aliases", dict(aliases))

    def _key(self, name: str) -> str:
        key = self._aliases.get(name, name)
        if key not in self._values:
            raise AttributeError(f"{self._name}.{name} does not exist")
        return key

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name not in self._values and name not in self._aliases and any(
                key.startswith(f"{name}.") for key in self._values):
            return _Section(self, name)  # torch's nested flag classes (config.triton.*)
        return self._values[self._key(name)]

    def __setattr__(self, name: str, value: Any) -> None:
        self._values[self._key(name)] = value

    def __delattr__(self, name: str) -> None:
        key = self._key(name)
        self._values[key] = self._defaults[key]

    def __dir__(self) -> list:
        return sorted([*self._values, *self._aliases])

    def __contains__(self, name: str) -> bool:
        return name in self._values or name in self._aliases

    def get_config_copy(self) -> dict:
        return copy.deepcopy(self._values)

    def save_config(self) -> dict:
        return self.get_config_copy()

    def load_config(self, saved: dict) -> None:
        for name, value in saved.items():
            setattr(self, name, value)

    def patch(self, arg1: str | dict | None = None, arg2: Any = None,
              **kwargs: Any) -> contextlib.ContextDecorator:
        """``patch("name", value)``, ``patch(name=value)`` or ``patch({"name": value})``."""
        if isinstance(arg1, str):
            changes = {arg1: arg2}
        elif isinstance(arg1, dict):
            changes = dict(arg1)
        else:
            changes = {}
        changes.update(kwargs)
        return _Patch(self, changes)  # an unknown flag fails on entry, as in torch


class _Patch(contextlib.ContextDecorator):
    def __init__(self, config: ConfigModule, changes: dict) -> None:
        self._config = config
        self._changes = changes
        self._saved: list[dict] = []

    def __enter__(self) -> None:
        self._saved.append({name: getattr(self._config, name) for name in self._changes})
        for name, value in self._changes.items():
            setattr(self._config, name, value)

    def __exit__(self, *exc: Any) -> None:
        for name, value in self._saved.pop().items():
            setattr(self._config, name, value)


class _Section:
    """``config.triton``: the flags named ``triton.*``, read and written through the config."""

    def __init__(self, config: ConfigModule, prefix: str) -> None:
        object.__setattr__(self, "_config", config)
        object.__setattr__(self, "_prefix", prefix)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._config, f"{self._prefix}.{name}")

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._config, f"{self._prefix}.{name}", value)
