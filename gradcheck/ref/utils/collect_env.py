"""``torch.utils.collect_env``: a short description of this environment.

>>> "gradcheck.ref" in get_pretty_env_info()
True
"""
from __future__ import annotations

import platform
import sys


def get_pretty_env_info() -> str:
    import numpy

    from gradcheck.ref.version import __version__

    return (f"PyTorch version: {__version__}\nIs debug build: False\nCUDA used to build "
            f"PyTorch: None\nOS: {platform.platform()}\nPython version: {sys.version.split()[0]}"
            f"\nnumpy: {numpy.__version__}\n")
