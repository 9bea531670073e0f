"""Private helpers of ``torch.nn`` that real code imports anyway: ``nn._reduction`` (the
reduction names as aten's integers), ``modules.module._addindent`` (repr indentation),
``modules.utils._list_with_default``, ``modules.transformer._get_activation_fn``,
``init._calculate_correct_fan``, ``F.upsample_nearest`` and the ``NLLLoss2d`` alias.

>>> from gradcheck.ref.nn import _reduction
>>> _reduction.get_enum("sum"), _reduction.legacy_get_string(None, False, emit_warning=False)
(2, 'none')
"""
from __future__ import annotations

import sys
import types
import warnings
from typing import Any

_ENUMS = {"none": 0, "mean": 1, "elementwise_mean": 1, "sum": 2}


def get_enum(reduction: str) -> int:
    """aten's integer for a reduction name (0 none, 1 mean, 2 sum)."""
    if reduction not in _ENUMS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use "
                      "reduction='mean' instead.", stacklevel=2)
    return _ENUMS[reduction]


def legacy_get_string(size_average: bool | None, reduce: bool | None,
                      emit_warning: bool = True) -> str:
    """The reduction the deprecated ``size_average``/``reduce`` pair means (None is True)."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    name = ("mean" if size_average else "sum") if reduce else "none"
    if emit_warning:
        warnings.warn(f"size_average and reduce args will be deprecated, please use "
                      f"reduction='{name}' instead.", stacklevel=2)
    return name


def legacy_get_enum(size_average: bool | None, reduce: bool | None,
                    emit_warning: bool = True) -> int:
    return get_enum(legacy_get_string(size_average, reduce, emit_warning))


def _addindent(text: str, num_spaces: int) -> str:
    """Indent every line after the first (blank lines become empty), as module reprs do."""
    first, *rest = text.split("\n")
    if not rest:
        return text
    return "\n".join([first] + [" " * num_spaces + line if line.strip() else ""
                                for line in rest])


def _list_with_default(out_size: Any, defaults: list) -> Any:
    """An adaptive pool's output size with each None taken from the input's trailing sizes."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    tail = defaults[-len(out_size):]
    return [d if v is None else v for v, d in zip(out_size, tail)]


def _get_activation_fn(activation: str) -> Any:
    """The functional form of a Transformer activation named "relu" or "gelu"."""
    from gradcheck.ref.nn import functional

    if activation in ("relu", "gelu"):
        return getattr(functional, activation)
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _calculate_correct_fan(tensor: Any, mode: str) -> int:
    """fan_in or fan_out of a weight, the one Kaiming initialisation scales by."""
    from gradcheck.ref.nn.init import _calculate_fan_in_and_fan_out

    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def upsample_nearest(input: Any, size: Any = None, scale_factor: Any = None) -> Any:  # noqa: A002
    """Deprecated: ``interpolate(mode="nearest")`` with torch's warning."""
    from gradcheck.ref.nn.upsampling import interpolate

    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def _in_projection_packed(q: Any, k: Any, v: Any, w: Any, b: Any = None) -> list:
    """Attention's q, k and v projections from one packed ``(3E, E)`` weight."""
    from gradcheck.ref.nn.multihead import _project

    return list(_project(q, k, v, (w,), b))


def install() -> None:
    """Put each helper where torch keeps it."""
    from gradcheck.ref import nn
    from gradcheck.ref.nn import functional, init, modules

    reduction = types.ModuleType("gradcheck.ref.nn._reduction", "torch.nn._reduction")
    reduction.__dict__.update(get_enum=get_enum, legacy_get_string=legacy_get_string,
                              legacy_get_enum=legacy_get_enum, warnings=warnings)
    sys.modules[reduction.__name__] = nn._reduction = reduction
    modules.module._addindent = _addindent
    from gradcheck.ref.nn import module as engine_module

    for name in ("_global_forward_pre_hooks", "_global_forward_hooks",
                 "_global_forward_hooks_with_kwargs"):
        setattr(modules.module, name, getattr(engine_module, name))
    modules.utils._list_with_default = _list_with_default
    modules.transformer._get_activation_fn = _get_activation_fn
    init._calculate_correct_fan = _calculate_correct_fan
    functional.upsample_nearest = upsample_nearest
    functional._in_projection_packed = _in_projection_packed
    nn.NLLLoss2d = modules.NLLLoss2d = modules.loss.NLLLoss2d = _nll_loss_2d(nn.NLLLoss)


def _nll_loss_2d(base: type) -> type:
    """torch's deprecated name for ``NLLLoss``, warning when made, as torch's does."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        warnings.warn("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a "
                      "drop-in replacement and see https://pytorch.org/docs/main/nn.html"
                      "#torch.nn.NLLLoss for more details.", FutureWarning, stacklevel=2)
        base.__init__(self, *args, **kwargs)

    return type("NLLLoss2d", (base,), {"__init__": __init__,
                                       "__module__": "torch.nn.modules.loss"})
