"""Plain numpy functions, whose backward the user passes explicitly as ``vjp=``.

``vjp(grad_output, *inputs)`` returns one gradient per input (``None`` where an input has
none); with several outputs, ``grad_output`` is a tuple with one array per output.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from gradcheck.checks.adapters.base import Adapter, Vjp


class NumpyAdapter(Adapter):
    name = "numpy"

    def __init__(self, fn: Callable, inputs: Sequence[Any], wrt=None, vjp: Callable | None = None):
        if vjp is None:
            raise TypeError(
                "numpy functions have no autograd: pass their backward as vjp=, a function "
                "vjp(grad_output, *inputs) returning one gradient per input"
            )
        self.user_vjp = vjp
        super().__init__(fn, [np.asarray(x) for x in inputs], wrt)

    def is_float(self, x: Any) -> bool:
        return np.issubdtype(np.asarray(x).dtype, np.floating)

    def to_numpy(self, x: Any) -> np.ndarray:
        return np.asarray(x)

    def to_native(self, a: np.ndarray, like: Any, dtype: str | None) -> Any:
        return np.asarray(a, dtype=dtype or np.asarray(like).dtype)

    def call(self, args: list) -> Any:
        return self.fn(*args)

    def recorded_forward(self) -> Any:
        self._recorded = self.fn(*self.inputs)
        return self._recorded

    def linearize(self) -> tuple[list[np.ndarray], Vjp]:
        out = getattr(self, "_recorded", None)
        if out is None:
            out = self.recorded_forward()
        items = self.output_items(out)
        single = not isinstance(out, (tuple, list))

        def vjp(grad_outputs: list[np.ndarray]) -> list[np.ndarray | None]:
            gos = [np.asarray(g, dtype=np.asarray(o).dtype) for g, o in zip(grad_outputs, items)]
            grads = self.user_vjp(gos[0] if single else tuple(gos), *self.inputs)
            if len(self.inputs) == 1 and not isinstance(grads, (tuple, list)):
                grads = (grads,)
            grads = list(grads)
            if len(grads) != len(self.inputs):
                raise TypeError(
                    f"vjp= returned {len(grads)} gradient(s) for {len(self.inputs)} input(s); "
                    "return one per input, None where an input has no gradient"
                )
            # copies: a vjp may return a buffer it changes in place on its next call
            return [None if grads[i] is None else np.array(grads[i], copy=True)
                    for i in self.diff]

        return self.outputs_to_numpy(out), vjp
