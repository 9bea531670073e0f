"""torch tensors: evaluation under no_grad, torch.func.vmap batching, autograd.grad VJPs."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from gradcheck.checks.adapters.base import Adapter, Vjp

_DTYPES = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "complex128": torch.complex128,
}


class TorchAdapter(Adapter):
    name = "torch"

    def is_float(self, x: Any) -> bool:
        return isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex())

    def wants_grad(self, x: Any) -> bool:
        return self.is_float(x) and x.requires_grad

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

    def differentiable(self, a: np.ndarray, like: Any) -> Any:
        return self.to_native(a, like, None).requires_grad_(True)

    def output_items(self, out: Any) -> list:
        # Integer outputs (argmax indices, say) have no gradient and are not checked.
        items = list(out) if isinstance(out, (tuple, list)) else [out]
        return [o for o in items if not isinstance(o, torch.Tensor) or self.is_float(o)]

    def call(self, args: list) -> Any:
        with torch.no_grad():
            return self.fn(*args)

    def vmap_call(self, args: list, batched: int) -> Any:
        in_dims = tuple(0 if i == batched else None for i in range(len(args)))
        with torch.no_grad():
            return torch.func.vmap(self.fn, in_dims=in_dims)(*args)

    def linearize(self) -> tuple[list[np.ndarray], Vjp]:
        with torch.enable_grad():
            out = self.fn(*self.inputs)
        items = self.output_items(out)
        diff_inputs = [self.inputs[i] for i in self.diff]

        def vjp(grad_outputs: list[np.ndarray]) -> list[np.ndarray | None]:
            pairs = [
                (o, torch.from_numpy(np.array(g, copy=True)).to(o.device, o.dtype))
                for o, g in zip(items, grad_outputs)
                if isinstance(o, torch.Tensor) and o.requires_grad
            ]
            if not pairs:
                return [None] * len(diff_inputs)
            grads = torch.autograd.grad(
                [p[0] for p in pairs], diff_inputs, [p[1] for p in pairs],
                retain_graph=True, allow_unused=True,
            )
            return [None if g is None else self.to_numpy(g) for g in grads]

        def vjp_many(grad_outputs: list[np.ndarray]) -> list[np.ndarray | None]:
            pairs = [(o, torch.from_numpy(np.array(g, copy=True)).to(o.device, o.dtype))
                     for o, g in zip(items, grad_outputs)
                     if isinstance(o, torch.Tensor) and o.requires_grad]
            grads = torch.autograd.grad(
                [p[0] for p in pairs], diff_inputs, [p[1] for p in pairs],
                retain_graph=True, allow_unused=True, is_grads_batched=True,
            )
            return [None if g is None else self.to_numpy(g) for g in grads]

        self._vjp_many = vjp_many if any(
            isinstance(o, torch.Tensor) and o.requires_grad for o in items) else None
        return self.outputs_to_numpy(out), vjp

    def batched_vjp(self) -> Callable | None:
        return getattr(self, "_vjp_many", None)

    def first_order(self, n_outputs: int) -> Callable:
        fn, n_in, diff = self.fn, len(self.inputs), self.diff

        def grads_of_fn(*args):
            xs, gos = list(args[:n_in]), args[n_in:]
            with torch.enable_grad():
                for i in diff:
                    if not xs[i].requires_grad:
                        xs[i] = xs[i].detach().requires_grad_(True)
                items = self.output_items(fn(*xs))
                grads = torch.autograd.grad(
                    items[:n_outputs], [xs[i] for i in diff], list(gos),
                    create_graph=True, allow_unused=True,
                )
            return tuple(torch.zeros_like(xs[i]) if g is None else g for i, g in zip(diff, grads))

        return grads_of_fn
