"""``torch.torch_version.TorchVersion``: ``torch.__version__`` is a string that compares as a
version, against strings and tuples: ``"2.13.0" >= "2.9"`` holds here (it does not as plain
strings) and so does ``torch.__version__ > (2, 1)``.

>>> TorchVersion("2.13.0+cpu") >= "2.9", TorchVersion("2.13.0") > (2, 12, 1)
(True, True)
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

_VERSION = re.compile(r"^v?(\d+(?:\.\d+)*)(?:[-_.]?(a|alpha|b|beta|c|rc|pre|preview)[-_.]?(\d*))?"
                      r"(?:[-_.]?(post|rev|r)[-_.]?(\d*))?(?:[-_.]?(dev)[-_.]?(\d*))?"
                      r"(?:\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?$", re.IGNORECASE)
_PRE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}


def _key(text: str) -> tuple:
    """A sort key in PEP 440's order: release, pre-release, post, dev, then local label."""
    match = _VERSION.match(text.strip())
    if match is None:
        raise ValueError(f"Invalid version: '{text}'")
    release, pre, pre_n, post, post_n, dev, dev_n, local = match.groups()
    numbers = [int(n) for n in release.split(".")]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    pre_key = (_PRE[pre.lower()], int(pre_n or 0)) if pre else ((-1, 0) if dev and not post
                                                               else (3, 0))
    post_key = int(post_n or 0) if post else -1
    dev_key = int(dev_n or 0) if dev else float("inf")
    local_key = tuple((0, int(p)) if p.isdigit() else (-1, p.lower())
                      for p in re.split(r"[-_.]", local)) if local else ()
    return tuple(numbers), pre_key, post_key, dev_key, local_key


class TorchVersion(str):
    """A version string comparable with version strings and tuples of numbers."""

    __slots__ = ()

    def _other(self, other: Any) -> tuple:
        if isinstance(other, str):
            return _key(other)
        if isinstance(other, Iterable):
            return _key(".".join(str(part) for part in other))
        raise ValueError(f"Invalid version: '{other}'")

    def _compare(self, other: Any, method: str) -> bool:
        try:
            return getattr(_key(self), method)(self._other(other))
        except ValueError:  # not a version ('parrot'): compare as strings, as torch does
            return getattr(str(self), method)(other)

    def __gt__(self, other: Any) -> bool:
        return self._compare(other, "__gt__")

    def __lt__(self, other: Any) -> bool:
        return self._compare(other, "__lt__")

    def __ge__(self, other: Any) -> bool:
        return self._compare(other, "__ge__")

    def __le__(self, other: Any) -> bool:
        return self._compare(other, "__le__")

    def __eq__(self, other: Any) -> bool:
        return self._compare(other, "__eq__")

    def __ne__(self, other: Any) -> bool:
        return not self.__eq__(other)

    __hash__ = str.__hash__
