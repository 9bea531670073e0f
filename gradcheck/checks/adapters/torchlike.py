"""What the torch-style adapters share: torch and gradcheck.ref spell ``no_grad``,
``enable_grad``, ``requires_grad`` and ``autograd.grad`` alike, so only their tensor
conversions (and torch's vmap and batched VJPs) live in their own adapters.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gradcheck.checks.adapters.base import Adapter, Vjp


class TorchLikeAdapter(Adapter):
    """Base for TorchAdapter and RefAdapter; subclasses set ``lib`` to their framework module
    and implement ``grad_output_like`` besides the base class's conversion hooks."""

    lib: Any = None  # the framework module: torch or gradcheck.ref

    def wants_grad(self, x: Any) -> bool:
        return self.is_float(x) and x.requires_grad

    def differentiable(self, a: np.ndarray, like: Any) -> Any:
        return self.to_native(a, like, None).requires_grad_(True)

    def output_items(self, out: Any) -> list:
        # Integer outputs (argmax indices, say) have no gradient and are not checked.
        items = list(out) if isinstance(out, (tuple, list)) else [out]
        return [o for o in items if not isinstance(o, self.lib.Tensor) or self.is_float(o)]

    def output_problem(self, out: Any) -> str | None:
        items = list(out) if isinstance(out, (tuple, list)) else [out]
        tensors = [o for o in items if isinstance(o, self.lib.Tensor)]
        for k, o in enumerate(items):
            where = "" if len(items) == 1 else f" as output {k}"
            if o is None:
                return f"None{where}"
            # NOTE: a Python float is a tensor's value cut off from autograd (.item(), float())
            if isinstance(o, (float, complex)):
                return f"a Python {type(o).__name__} ({o:.6g}){where}, not a tensor"
        if not tensors:
            return f"a {type(out).__name__}, not a tensor"
        return None

    def float_hint(self) -> str:
        return "x.double().requires_grad_()"

    def call(self, args: list) -> Any:
        with self.lib.no_grad():
            return self.fn(*args)

    def grad_output_like(self, g: np.ndarray, output: Any) -> Any:
        """A copy of ``g`` as a tensor with ``output``'s dtype (and device)."""
        raise NotImplementedError

    def recorded_forward(self) -> Any:
        with self.lib.enable_grad():
            self._recorded = self.fn(*self.inputs)
        return self._recorded

    def linearize(self) -> tuple[list[np.ndarray], Vjp]:
        out = getattr(self, "_recorded", None)
        if out is None:
            out = self.recorded_forward()
        items = self.output_items(out)
        self.output_requires_grad = [
            isinstance(o, self.lib.Tensor) and o.requires_grad for o in items]
        diff_inputs = [self.inputs[i] for i in self.diff]
        self._vjp_many = self.batched_vjp_of(items, diff_inputs)
        return self.outputs_to_numpy(out), self.autograd_vjp(items, diff_inputs)

    def batched_vjp_of(self, items: list, diff_inputs: list) -> Vjp | None:
        """The VJP over a leading batch axis for these outputs, or None (no batched grads)."""
        return None

    def autograd_vjp(self, items: list, diff_inputs: list, **grad_options: Any) -> Vjp:
        """A VJP through the recorded graph (kept for repeated calls), numpy in and out."""

        def vjp(grad_outputs: list[np.ndarray]) -> list[np.ndarray | None]:
            # NOTE: an all-zero grad_output is left undefined, as torch's gradcheck leaves the
            # outputs it is not checking; some backwards differ when a grad is missing.
            pairs = [(o, self.grad_output_like(g, o)) for o, g in zip(items, grad_outputs)
                     if isinstance(o, self.lib.Tensor) and o.requires_grad and np.any(g)]
            if not pairs:
                return [None] * len(diff_inputs)
            grads = self.lib.autograd.grad(
                [p[0] for p in pairs], diff_inputs, [p[1] for p in pairs],
                retain_graph=True, allow_unused=True, **grad_options,
            )
            # NOTE: copies, since a backward may return a tensor it later changes in place
            # (a saved buffer multiplied by grad_output with *=); a view would change with it
            return [None if g is None else np.array(self.to_numpy(g), copy=True) for g in grads]

        return vjp

    def first_order(self, n_outputs: int) -> Callable:
        fn, n_in, diff, lib = self.fn, len(self.inputs), self.diff, self.lib

        def grads_of_fn(*args):
            xs, gos = list(args[:n_in]), args[n_in:]
            with lib.enable_grad():
                for i in diff:
                    if not xs[i].requires_grad:
                        xs[i] = xs[i].detach().requires_grad_(True)
                items = self.output_items(fn(*xs))
                grads = lib.autograd.grad(
                    items[:n_outputs], [xs[i] for i in diff], list(gos),
                    create_graph=True, allow_unused=True,
                )
            return tuple(lib.zeros_like(xs[i]) if g is None else g for i, g in zip(diff, grads))

        return grads_of_fn
