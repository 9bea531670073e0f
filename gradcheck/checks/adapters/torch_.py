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
_COMPLEX_OF = {torch.float64: torch.complex128, torch.float32: torch.complex64,
               torch.float16: torch.complex32}
# dtypes numpy lacks, read through a wider one
_WIDER = {torch.bfloat16: torch.float32, torch.complex32: torch.complex64}
_NUMPY_OF = {torch.bfloat16: np.float32, torch.complex32: np.complex64}


def _target_dtype(like: torch.Tensor, dtype: str | None) -> torch.dtype:
    """The dtype to evaluate ``like`` in: its own, or ``dtype`` (complex for complex inputs)."""
    if dtype is None:
        return like.dtype
    target = _DTYPES[dtype]
    return _COMPLEX_OF.get(target, target) if like.is_complex() else target


def _in_layout_of(like: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """``values`` written into a copy of ``like``'s whole storage, at ``like``'s strides and
    offset, when ``like`` is a view of a larger storage.

    NOTE: an op that reads the storage itself (as_strided with a storage offset) is a
    different function of a compact copy; torch's gradcheck perturbs such inputs in place.
    """
    if like.is_contiguous() and like.storage_offset() == 0:
        return values
    size = like.untyped_storage().nbytes() // like.element_size()
    if torch._debug_has_internal_overlap(like) == 1 or size < like.numel():
        return values  # overlapping (expanded) inputs: torch's gradcheck rejects them too
    storage = like.detach().as_strided((size,), (1,), 0).to(values.dtype, copy=True)
    out = storage.as_strided(like.shape, like.stride(), like.storage_offset())
    out.copy_(values)
    return out


class TorchAdapter(TorchLikeAdapter):
    name = "torch"
    lib = torch

    def __init__(self, fn, inputs, wrt=None):
        for i, x in enumerate(inputs):
            wanted = x.requires_grad if wrt is None else i in wrt
            if isinstance(x, torch.Tensor) and x.layout != torch.strided and wanted:
                raise TypeError(
                    f"input {i} is a {str(x.layout).replace('torch.', '')} tensor, a layout "
                    "check_grad does not support for a differentiated input (supported: "
                    "strided, i.e. dense, tensors); pass x.to_dense() and convert inside fn, "
                    "or set requires_grad=False on it"
                )
        super().__init__(fn, inputs, wrt)

    def is_float(self, x: Any) -> bool:
        # NOTE: sparse and other layouts are passed through as constants (see __init__)
        return isinstance(x, torch.Tensor) and x.layout == torch.strided and (
            x.is_floating_point() or x.is_complex())

    def dtype_name(self, x: Any) -> str:
        return str(x.dtype).replace("torch.", "") if isinstance(x, torch.Tensor) else "object"

    def to_numpy(self, x: Any) -> np.ndarray:
        if not isinstance(x, torch.Tensor):
            return np.asarray(x)
        x = x.detach().cpu()
        if x.layout != torch.strided:
            x = x.to_dense()
        if x._is_zerotensor():  # autograd's symbolic zero grad (sgn, for one) has no data
            return np.zeros(tuple(x.shape), _NUMPY_OF.get(x.dtype, np.float64))
        if x.dtype in _NUMPY_OF:
            x = x.to(_WIDER[x.dtype])
        return x.resolve_conj().resolve_neg().numpy()

    def to_native(self, a: np.ndarray, like: Any, dtype: str | None) -> Any:
        values = torch.from_numpy(np.array(a, copy=True)).to(
            device=like.device, dtype=_target_dtype(like, dtype))
        return _in_layout_of(like, values)

    def scratch_to_native(self, a: np.ndarray, like: Any, dtype: str | None) -> Any:
        # NOTE: a batch of thousands of points is the largest array the checker builds;
        # wrapping it (no copy) saves a full pass over it per call.
        return torch.from_numpy(np.ascontiguousarray(a)).to(
            device=like.device, dtype=_target_dtype(like, dtype))

    def call(self, args: list) -> Any:
        # NOTE: the same as torch.no_grad(), without a context object per call: a small
        # check makes dozens of calls of a few microseconds each
        previous = torch.is_grad_enabled()
        torch._C._set_grad_enabled(False)
        try:
            return self.fn(*args)
        finally:
            torch._C._set_grad_enabled(previous)

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
