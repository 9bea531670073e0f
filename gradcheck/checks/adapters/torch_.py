"""torch tensors: evaluation under no_grad, torch.func.vmap batching, autograd.grad VJPs."""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from gradcheck.checks.adapters.base import Vjp
from gradcheck.checks.adapters.torchlike import TorchLikeAdapter

_DTYPES = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "complex128": torch.complex128,
}


class TorchAdapter(TorchLikeAdapter):
    name = "torch"
    lib = torch

    def is_float(self, x: Any) -> bool:
        return isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex())

    def dtype_name(self, x: Any) -> str:
        return str(x.dtype).replace("torch.", "") if isinstance(x, torch.Tensor) else "object"

    def to_numpy(self, x: Any) -> np.ndarray:
        if not isinstance(x, torch.Tensor):
            return np.asarray(x)
        x = x.detach().cpu()
        if x.dtype == torch.bfloat16:
            x = x.float()
        return x.resolve_conj().numpy()

    def to_native(self, a: np.ndarray, like: Any, dtype: str | None) -> Any:
        target = _DTYPES[dtype] if dtype else like.dtype
        return torch.from_numpy(np.array(a, copy=True)).to(device=like.device, dtype=target)

    def scratch_to_native(self, a: np.ndarray, like: Any, dtype: str | None) -> Any:
        # NOTE: a batch of thousands of points is the largest array the checker builds;
        # wrapping it (no copy) saves a full pass over it per call.
        target = _DTYPES[dtype] if dtype else like.dtype
        return torch.from_numpy(np.ascontiguousarray(a)).to(device=like.device, dtype=target)

    def vmap_call(self, args: list, batched: int) -> Any:
        in_dims = tuple(0 if i == batched else None for i in range(len(args)))
        with torch.no_grad():
            return torch.func.vmap(self.fn, in_dims=in_dims)(*args)

    def grad_output_like(self, g: np.ndarray, output: Any) -> Any:
        return torch.from_numpy(np.array(g, copy=True)).to(output.device, output.dtype)

    def batched_vjp_of(self, items: list, diff_inputs: list) -> Vjp | None:
        if not any(isinstance(o, torch.Tensor) and o.requires_grad for o in items):
            return None
        return self.autograd_vjp(items, diff_inputs, is_grads_batched=True)
