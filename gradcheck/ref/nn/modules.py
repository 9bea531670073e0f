"""``torch.nn.modules``: torch's file layout of the layers (``torch.nn.modules.batchnorm``,
``torch.nn.modules.utils._pair``, ...), which code imports base classes such as ``_BatchNorm``,
``_ConvNd`` and ``_Loss`` from. Each submodule is an alias namespace over the engine's own
modules, registered in ``sys.modules`` so ``import torch.nn.modules.conv`` works too.

>>> from gradcheck.ref.nn.modules.batchnorm import _BatchNorm
>>> from gradcheck.ref.nn.modules.utils import _pair
>>> _BatchNorm.__name__, _pair(3)
('_BatchNorm', (3, 3))
"""
from __future__ import annotations

import collections.abc
import importlib
import itertools
import sys
import types
from typing import Any

__path__: list = []  # a package for the import system; its submodules are made below


def _ntuple(n: int, name: str = "parse"):
    def parse(x: Any) -> tuple:
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(itertools.repeat(x, n))

    parse.__name__ = name
    return parse


def _reverse_repeat_tuple(t: tuple, n: int) -> tuple:
    return tuple(x for x in reversed(t) for _ in range(n))


def consume_prefix_in_state_dict_if_present(state_dict: dict, prefix: str) -> None:
    """Strip ``prefix`` (e.g. ``"module."`` from DataParallel) from every key, in place."""
    for key in list(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata.keys()):
            if key == prefix.rstrip(".") or key.startswith(prefix):
                metadata[key[len(prefix):] if key.startswith(prefix) else ""] = metadata.pop(key)


_UTILS = {"_single": _ntuple(1, "_single"), "_pair": _ntuple(2, "_pair"),
          "_triple": _ntuple(3, "_triple"), "_quadruple": _ntuple(4, "_quadruple"),
          "_ntuple": _ntuple, "_reverse_repeat_tuple": _reverse_repeat_tuple,
          "consume_prefix_in_state_dict_if_present": consume_prefix_in_state_dict_if_present}

# torch's submodule -> the engine modules holding its classes and functions
_LAYOUT = {
    "module": ["module"], "linear": ["linear", "layers_extra", "lazy"], "conv": ["conv"],
    "lazy": ["lazy"],
    "batchnorm": ["batchnorm", "instancenorm"], "instancenorm": ["instancenorm"],
    "normalization": ["normalization", "instancenorm", "cross_map_lrn"],
    "activation": ["activation", "nonlinear", "multihead", "layers_extra"],
    "container": ["container", "containers_dict"], "dropout": ["dropout"],
    "loss": ["loss", "margin_losses", "ctc"], "pooling": ["pooling", "layers_extra"],
    "padding": ["padding"], "rnn": ["rnn"], "sparse": ["sparse", "layers_extra"],
    "transformer": ["transformer"], "pixelshuffle": ["pixelshuffle"],
    "upsampling": ["upsampling"], "flatten": ["flatten"], "distance": ["distance"],
    "fold": ["layers_extra"],
}


def _namespace(name: str, sources: list) -> types.ModuleType:
    module = types.ModuleType(f"{__name__}.{name}", f"torch.nn.modules.{name}, as the engine "
                                                     "lays it out.")
    for source in sources:
        engine = importlib.import_module(f"gradcheck.ref.nn.{source}")
        for attr, value in vars(engine).items():
            if isinstance(value, type) or (callable(value) and not attr.startswith("__")):
                module.__dict__.setdefault(attr, value)
    return module


def _build() -> None:
    this = sys.modules[__name__]
    for name, sources in _LAYOUT.items():
        module = _namespace(name, sources)
        sys.modules[module.__name__] = module
        setattr(this, name, module)
    utils = types.ModuleType(f"{__name__}.utils", "torch.nn.modules.utils")
    utils.__dict__.update(_UTILS)
    sys.modules[utils.__name__] = utils
    this.utils = utils
    from gradcheck.ref import nn

    for attr in nn.__all__:  # torch.nn.modules re-exports every layer
        if isinstance(getattr(nn, attr), type):
            setattr(this, attr, getattr(nn, attr))
    this.NonDynamicallyQuantizableLinear = this.linear.NonDynamicallyQuantizableLinear = \
        type("NonDynamicallyQuantizableLinear", (nn.Linear,), {})
    this.batchnorm._NormBase = this.batchnorm._BatchNorm  # torch's common base of the norms
    this.module._IncompatibleKeys = this.module.IncompatibleKeys


_build()
