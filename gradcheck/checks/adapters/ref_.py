"""gradcheck.ref tensors (the reference engine): like torch, without vmap.

The engine's ops broadcast over a leading axis, so perturbations are batched by plain
broadcasting whenever that reproduces the unbatched outputs (checked once per input).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gradcheck import ref
from gradcheck.checks.adapters.base import Adapter, Vjp


class RefAdapter(Adapter):
    name = "gradcheck.ref"

    def is_float(self, x: Any) -> bool:
        return isinstance(x, ref.Tensor) and x.is_floating_point()

    def wants_grad(self, x: Any) -> bool:
        return self.is_float(x) and x.requires_grad

    def dtype_name(self, x: Any) -> str:
        return str(x.dtype).split(".")[-1] if isinstance(x, ref.Tensor) else "object"

    def to_numpy(self, x: Any) -> np.ndarray:
        return x.detach().numpy() if isinstance(x, ref.Tensor) else np.asarray(x)

    def to_native(self, a: np.ndarray, like: Any, dtype: str | None) -> Any:
        target = getattr(ref, dtype) if dtype else like.dtype
        return ref.tensor(np.array(a, copy=True), dtype=target)

    def differentiable(self, a: np.ndarray, like: Any) -> Any:
        return self.to_native(a, like, None).requires_grad_(True)

    def output_items(self, out: Any) -> list:
        # Integer outputs (argmax indices, say) have no gradient and are not checked.
        items = list(out) if isinstance(out, (tuple, list)) else [out]
        return [o for o in items if not isinstance(o, ref.Tensor) or self.is_float(o)]

    def call(self, args: list) -> Any:
        with ref.no_grad():
            return self.fn(*args)

    def linearize(self) -> tuple[list[np.ndarray], Vjp]:
        with ref.enable_grad():
            out = self.fn(*self.inputs)
        items = self.output_items(out)
        diff_inputs = [self.inputs[i] for i in self.diff]

        def vjp(grad_outputs: list[np.ndarray]) -> list[np.ndarray | None]:
            pairs = [(o, ref.tensor(np.array(g, copy=True), dtype=o.dtype))
                     for o, g in zip(items, grad_outputs)
                     if isinstance(o, ref.Tensor) and o.requires_grad]
            if not pairs:
                return [None] * len(diff_inputs)
            grads = ref.autograd.grad([p[0] for p in pairs], diff_inputs, [p[1] for p in pairs],
                                      retain_graph=True, allow_unused=True)
            return [None if g is None else self.to_numpy(g) for g in grads]

        return self.outputs_to_numpy(out), vjp

    def first_order(self, n_outputs: int) -> Callable:
        fn, n_in, diff = self.fn, len(self.inputs), self.diff

        def grads_of_fn(*args):
            xs, gos = list(args[:n_in]), args[n_in:]
            with ref.enable_grad():
                for i in diff:
                    if not xs[i].requires_grad:
                        xs[i] = xs[i].detach().requires_grad_(True)
                items = self.output_items(fn(*xs))
                grads = ref.autograd.grad(items[:n_outputs], [xs[i] for i in diff], list(gos),
                                          create_graph=True, allow_unused=True)
            return tuple(ref.zeros_like(xs[i]) if g is None else g for i, g in zip(diff, grads))

        return grads_of_fn
