"""``torch.onnx``: exporting needs torch's tracer and is refused at the call (naming it);
the queries and enums that training scripts touch answer as torch does when not exporting.

>>> import gradcheck.ref as torch
>>> torch.onnx.is_in_onnx_export()
False
"""
from __future__ import annotations

import enum
import types

from gradcheck.ref.standins import module_fallback, unsupported

_WHY = "there is no graph exporter; export with PyTorch itself"
__getattr__ = module_fallback("torch.onnx", _WHY)
export = unsupported("torch.onnx.export", _WHY)
dynamo_export = unsupported("torch.onnx.dynamo_export", _WHY)


class TrainingMode(enum.IntEnum):
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


def is_in_onnx_export() -> bool:
    return False


def _shape_as_tensor(x):
    from gradcheck.ref.creation import tensor

    return tensor(list(x.shape))


operators = types.SimpleNamespace(shape_as_tensor=_shape_as_tensor)
