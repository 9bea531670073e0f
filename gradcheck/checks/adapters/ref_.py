"""gradcheck.ref tensors (the reference engine): like torch, without vmap.

The engine's ops broadcast over a leading axis, so perturbations are batched by plain
broadcasting whenever that reproduces the unbatched outputs (checked once per input).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gradcheck import ref
from gradcheck.checks.adapters.torchlike import TorchLikeAdapter


class RefAdapter(TorchLikeAdapter):
    name = "gradcheck.ref"
    lib = ref

    def is_float(self, x: Any) -> bool:
        return isinstance(x, ref.Tensor) and x.is_floating_point()

    def dtype_name(self, x: Any) -> str:
        return str(x.dtype).split(".")[-1] if isinstance(x, ref.Tensor) else "object"

    def to_numpy(self, x: Any) -> np.ndarray:
        return x.detach().numpy() if isinstance(x, ref.Tensor) else np.asarray(x)

    def to_native(self, a: np.ndarray, like: Any, dtype: str | None) -> Any:
        target = getattr(ref, dtype) if dtype else like.dtype
        return ref.tensor(np.array(a, copy=True), dtype=target)

    def grad_output_like(self, g: np.ndarray, output: Any) -> Any:
        return ref.tensor(np.array(g, copy=True), dtype=output.dtype)
