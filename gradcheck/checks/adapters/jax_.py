"""JAX arrays: every floating input is differentiable; jax.vmap batching, jax.vjp VJPs.

NOTE: JAX silently computes in float32 unless x64 is enabled, so the float64 evaluations run
inside ``jax.enable_x64(True)``; the analytic side runs in whatever mode the caller chose.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from gradcheck.checks.adapters.base import Adapter, Vjp


class JaxAdapter(Adapter):
    name = "jax"

    def is_float(self, x: Any) -> bool:
        return isinstance(x, jax.Array) and (
            jnp.issubdtype(x.dtype, jnp.floating) or jnp.issubdtype(x.dtype, jnp.complexfloating)
        )

    def float_hint(self) -> str:
        return "x.astype(jnp.float32) (float64 needs jax.config.update('jax_enable_x64', True))"

    def dtype_name(self, x: Any) -> str:
        return str(x.dtype)

    def to_numpy(self, x: Any) -> np.ndarray:
        a = np.asarray(x)
        return a.astype(np.float32) if a.dtype.name == "bfloat16" else a

    def to_native(self, a: np.ndarray, like: Any, dtype: str | None) -> Any:
        with jax.enable_x64(True):
            return jnp.asarray(a, dtype=dtype or like.dtype)

    def call(self, args: list) -> Any:
        with jax.enable_x64(True):
            return self._materialise(self.fn(*args))

    def vmap_call(self, args: list, batched: int) -> Any:
        in_axes = tuple(0 if i == batched else None for i in range(len(args)))
        with jax.enable_x64(True):
            return self._materialise(jax.vmap(self.fn, in_axes=in_axes)(*args))

    @staticmethod
    def _materialise(out: Any) -> Any:
        items = list(out) if isinstance(out, (tuple, list)) else [out]
        items = [np.asarray(o) for o in items]
        return items if isinstance(out, (tuple, list)) else items[0]

    def linearize(self) -> tuple[list[np.ndarray], Vjp]:
        diff = self.diff

        def of_diff(*xs):
            args = list(self.inputs)
            for i, x in zip(diff, xs):
                args[i] = x
            return self.fn(*args)

        out, pullback = jax.vjp(of_diff, *[self.inputs[i] for i in diff])
        items = self.output_items(out)
        single = not isinstance(out, (tuple, list))

        def vjp(grad_outputs: list[np.ndarray]) -> list[np.ndarray | None]:
            gos = [jnp.asarray(g, dtype=o.dtype) for g, o in zip(grad_outputs, items)]
            grads = pullback(gos[0] if single else type(out)(gos))
            return [np.asarray(g) for g in grads]

        def vjp_many(grad_outputs: list[np.ndarray]) -> list[np.ndarray | None]:
            gos = [jnp.asarray(g, dtype=o.dtype) for g, o in zip(grad_outputs, items)]
            pull = jax.vmap(lambda *gs: pullback(gs[0] if single else type(out)(gs)))
            return [np.asarray(g) for g in pull(*gos)]

        self._vjp_many = vjp_many
        return self.outputs_to_numpy(out), vjp

    def first_order(self, n_outputs: int) -> Callable:
        fn, n_in, diff = self.fn, len(self.inputs), self.diff

        def grads_of_fn(*args):
            xs, gos = list(args[:n_in]), args[n_in:]

            def of_diff(*ds):
                full = list(xs)
                for i, d in zip(diff, ds):
                    full[i] = d
                return fn(*full)

            out, pullback = jax.vjp(of_diff, *[xs[i] for i in diff])
            single = not isinstance(out, (tuple, list))
            return tuple(pullback(gos[0] if single else type(out)(gos)))

        return grads_of_fn
