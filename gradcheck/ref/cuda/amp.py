"""``torch.cuda.amp``: the deprecated spellings of ``torch.amp``'s cuda autocast and scaler,
with torch's FutureWarnings."""
from __future__ import annotations

import warnings
from typing import Any

from gradcheck.ref import amp


def _deprecated(name: str) -> None:
    warnings.warn(f"`torch.cuda.amp.{name}(args...)` is deprecated. Please use "
                  f"`torch.amp.{name}('cuda', args...)` instead.", FutureWarning, stacklevel=3)


class autocast(amp.autocast):  # noqa: N801
    """``torch.amp.autocast("cuda", ...)``."""

    def __init__(self, enabled: bool = True, dtype: Any = None, cache_enabled: bool = True):
        _deprecated("autocast")
        super().__init__("cuda", dtype, enabled, cache_enabled)


class GradScaler(amp.GradScaler):
    """``torch.amp.GradScaler("cuda", ...)``."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        _deprecated("GradScaler")
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


def custom_fwd(fwd=None, *, cast_inputs: Any = None):
    """``torch.amp.custom_fwd(device_type="cuda")``."""
    return amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """``torch.amp.custom_bwd(device_type="cuda")``."""
    return amp.custom_bwd(bwd, device_type="cuda")
