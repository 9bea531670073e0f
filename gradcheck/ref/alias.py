"""Run unmodified torch code on the reference engine by binding ``torch`` to ``gradcheck.ref``.

Fixture programs and examples say ``import torch``; inside ``as_torch()`` that import (and
``torch.nn``, ``torch.optim``, ``torch.utils.data``, ...) resolves to the engine instead.

>>> with as_torch() as engine:
...     import torch
...     torch is engine
True
"""
from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator
from types import ModuleType

# Engine submodules that torch code imports by name; loaded up front so each gets its alias.
_SUBMODULES = (
    "_dynamo",
    "accelerator",
    "amp",
    "autograd",
    "autograd.functional",
    "autograd.profiler",
    "backends",
    "backends.cuda",
    "backends.cudnn",
    "compiler",
    "cuda",
    "cuda.amp",
    "distributed",
    "distributions",
    "fx",
    "fx._symbolic_trace",
    "hub",
    "jit",
    "multiprocessing",
    "nn",
    "nn.init",
    "nn.parallel",
    "nn.functional",
    "nn.modules",
    "nn.utils",
    "nn.utils.rnn",
    "optim",
    "optim.lr_scheduler",
    "optim.swa_utils",
    "profiler",
    "testing",
    "utils",
    "_utils",
    "onnx",
    "utils._pytree",
    "utils.checkpoint",
    "utils.cpp_extension",
    "utils.data",
    "utils.data._utils",
    "utils.data._utils.collate",
    "utils.data.dataloader",
    "utils.data.dataset",
    "utils.data.distributed",
    "utils.data.sampler",
    "utils.model_zoo",
    "utils.tensorboard",
    "version",
)


def _is_torch(name: str) -> bool:
    return name == "torch" or name.startswith("torch.")


@contextlib.contextmanager
def as_torch() -> Iterator[ModuleType]:
    """Within the block, ``import torch`` (and its submodules) gives ``gradcheck.ref``.

    Every ``torch*`` entry of ``sys.modules`` is saved and put back afterwards, so real PyTorch,
    if it was imported, is untouched once the block ends.

    >>> with as_torch():
    ...     import torch.nn
    ...     torch.nn.__name__
    'gradcheck.ref.nn'
    """
    engine = importlib.import_module("gradcheck.ref")
    for name in _SUBMODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(f"gradcheck.ref.{name}")
    saved = {k: v for k, v in sys.modules.items() if _is_torch(k)}
    for key in saved:
        del sys.modules[key]
    prefix = "gradcheck.ref"
    for key, module in list(sys.modules.items()):
        if key == prefix or key.startswith(prefix + "."):
            sys.modules["torch" + key[len(prefix):]] = module
    try:
        yield engine
    finally:
        for key in [k for k in sys.modules if _is_torch(k)]:
            del sys.modules[key]
        sys.modules.update(saved)
