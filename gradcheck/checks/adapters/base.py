"""What a framework adapter provides, and the parts every adapter shares.

An adapter knows one framework: how to turn its arrays into numpy and back, how to call the
function without recording a graph (optionally batched over a leading axis), and how to get a
vector-Jacobian product in the tested dtype. The checker itself only ever sees numpy arrays.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

Vjp = Callable[[list[np.ndarray]], list["np.ndarray | None"]]


class Adapter:
    """Base class; subclasses fill in the framework hooks marked below."""

    name = "base"

    def __init__(self, fn: Callable, inputs: Sequence[Any], wrt: Sequence[int] | None = None):
        self.fn = fn
        self.inputs = list(inputs)
        if wrt is None:
            wrt = [i for i, x in enumerate(self.inputs) if self.wants_grad(x)]
        self.diff = list(wrt)
        for i in self.diff:
            if not self.is_float(self.inputs[i]):
                raise TypeError(
                    f"wrt={list(wrt)!r} names input {i}, whose dtype "
                    f"{self.dtype_name(self.inputs[i])} cannot be differentiated: convert it "
                    f"to a floating dtype first, e.g. {self.float_hint()}, or leave it out "
                    "of wrt="
                )

    # -- framework hooks -------------------------------------------------------------------
    def is_float(self, x: Any) -> bool:
        raise NotImplementedError

    def wants_grad(self, x: Any) -> bool:
        return self.is_float(x)

    def dtype_name(self, x: Any) -> str:
        return str(np.asarray(x).dtype)

    def to_numpy(self, x: Any) -> np.ndarray:
        raise NotImplementedError

    def to_native(self, a: np.ndarray, like: Any, dtype: str | None) -> Any:
        """``a`` as a framework array with ``like``'s dtype, or ``dtype`` when given."""
        raise NotImplementedError

    def scratch_to_native(self, a: np.ndarray, like: Any, dtype: str | None) -> Any:
        """Like to_native for an array the checker builds for one call and never reads again
        (a batch of perturbed points), so an adapter may wrap it instead of copying."""
        return self.to_native(a, like, dtype)

    def call(self, args: list) -> Any:
        """fn(*args) without recording a graph."""
        raise NotImplementedError

    def vmap_call(self, args: list, batched: int) -> Any:
        """fn vectorised over axis 0 of args[batched]; raise if the framework cannot."""
        raise NotImplementedError(f"{self.name} has no vmap")

    def linearize(self) -> tuple[list[np.ndarray], Vjp]:
        """Outputs at the inputs (float64 numpy) and a VJP returning grads in native dtype."""
        raise NotImplementedError

    def recorded_forward(self) -> Any:
        """fn at the given inputs, recording what linearize() needs, which then reuses it;
        NotImplementedError where linearize() computes its own forward."""
        raise NotImplementedError

    def inputs_are_float64(self) -> bool:
        """Whether every floating input already has the dtype of the float64 evaluation, so
        that a call at the given inputs is the float64 evaluation at x."""
        return all(not self.is_float(x) or self.dtype_name(x) in ("float64", "complex128")
                   for x in self.inputs)

    def differentiable_outputs(self) -> list[bool] | None:
        """After linearize(): which outputs the framework differentiates (None: all)."""
        return getattr(self, "output_requires_grad", None)

    def batched_vjp(self) -> Callable | None:
        """After linearize(): a VJP over a leading batch axis of grad_outputs, or None.

        An adapter that can batch stores it as ``_vjp_many`` in its linearize()."""
        return getattr(self, "_vjp_many", None)

    def first_order(self, n_outputs: int) -> Callable:
        """A framework-native function (inputs..., grad_outputs...) -> grads, for gradgrad."""
        raise TypeError(
            f"check_gradgrad needs autograd (torch, gradcheck.ref or JAX), not {self.name}; "
            "for a numpy backward, check the vjp function itself with check_grad(vjp, ..., "
            "vjp=<its own vjp>)"
        )

    def differentiable(self, a: np.ndarray, like: Any) -> Any:
        """``a`` as a framework array that gradients can flow to (used for grad_outputs)."""
        return self.to_native(a, like, None)

    # -- shared ----------------------------------------------------------------------------
    def native_args(self, arrays: Sequence[np.ndarray | None], dtype: str | None,
                    scratch: int | None = None) -> list:
        """Framework arguments: arrays replace the floating inputs, the rest pass through;
        ``arrays[scratch]`` is a throwaway batch (see scratch_to_native)."""
        args = []
        for pos, (x, a) in enumerate(zip(self.inputs, arrays)):
            if a is None or not self.is_float(x):
                args.append(x)
            elif pos == scratch:
                args.append(self.scratch_to_native(a, x, dtype))
            else:
                args.append(self.to_native(a, x, dtype))
        return args

    def outputs_to_numpy(self, out: Any) -> list[np.ndarray]:
        items = self.output_items(out)
        arrays = [np.asarray(self.to_numpy(o)) for o in items]
        return [a if np.iscomplexobj(a) else a.astype(np.float64) for a in arrays]

    def output_items(self, out: Any) -> list:
        return list(out) if isinstance(out, (tuple, list)) else [out]

    def output_problem(self, out: Any) -> str | None:
        """What is wrong with ``fn``'s return value as something to differentiate, or None."""
        items = list(out) if isinstance(out, (tuple, list)) else [out]
        if not items:
            return f"an empty {type(out).__name__}"
        for k, o in enumerate(items):
            where = "" if len(items) == 1 else f" as output {k}"
            if o is None:
                return f"None{where}"
            if np.asarray(o).dtype == object:
                return f"a {type(o).__name__}{where}, which is not an array of numbers"
        return None

    def float_hint(self) -> str:
        """How to turn an integer input into one this framework differentiates."""
        return "x.astype(np.float64)"
