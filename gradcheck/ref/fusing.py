"""Fusing a composite layer into one table row: ``fused_op`` builds the row, whose rule runs
a numpy backward, or, under ``create_graph=True``, differentiates the composite rebuilt from
the engine's ops on the saved inputs (so every higher derivative is the composite's).

The rows themselves live in ``fused_norms``, ``fused_losses``, ``fused_attention``,
``fused_recurrent`` and ``fused_conv``; ``fused.FUSED`` gathers them.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from gradcheck.ref import grad_mode
from gradcheck.ref.dispatch import Op
from gradcheck.ref.tensors import _make


def on_numpy(*tensors) -> bool:
    """Fused rows run on numpy arrays of one dtype; anything else (CuPy, mixed dtypes) takes
    the composite path, which handles it."""
    dtype = tensors[0]._data.dtype
    return all(type(t._data) is np.ndarray and t._data.dtype == dtype for t in tensors)


def fusable_mask(mask, *tensors) -> bool:
    """An additive attention mask the fused row can take: absent, or a float constant."""
    if mask is None:
        return on_numpy(*tensors)
    return not mask._rg and on_numpy(*tensors, mask)


def fused_op(name: str, forward: Callable, backward: Callable, composite: Callable,
             saves_output: bool = False) -> Op:
    """A table row whose rule is ``backward(ctx, g, *input_arrays)`` (numpy, returning one
    array or None per input), or the composite's derivative under ``create_graph``.

    Every input is kept for the rule, and checked against in-place edits except those listed
    in the call's ``unchecked`` attribute: the inputs torch's kernel does not save (a bias;
    the logits of cross_entropy, whose log_softmax output is what torch keeps), so editing
    them before backward stays legal, as in torch."""

    def rule(ctx, g):
        saved = _saved_inputs(ctx)
        if grad_mode._enabled[0]:
            return _through_composite(ctx, g, composite, saved)
        grads = backward(ctx, g._data, *[None if t is None else t._data for t in saved])
        return tuple(None if a is None else _make(a) for a in grads)

    def run(*arrays, unchecked=(), **attrs):  # ``unchecked`` is for the rule only
        return forward(*arrays, **attrs)

    run.__name__ = forward.__name__
    return Op(name, run, rule, "all", saves_output)


def _saved_inputs(ctx) -> tuple:
    """The saved inputs, version-checked except the ``unchecked`` ones; a freed graph raises."""
    from gradcheck.ref.graph import FREED, _modified_error

    if ctx._saved is None:
        raise RuntimeError(FREED)
    if ctx.packed:
        return ctx.saved_tensors  # saved through saved_tensors_hooks: unpacked there
    unchecked = getattr(ctx, "unchecked", ())
    for k, (tensor, version) in enumerate(ctx._saved):
        if k not in unchecked and tensor._vc[0] != version:
            producer = tensor.grad_fn
            raise _modified_error(tensor, producer.name().split("Backward")[0] if producer
                                  else "", version)
    return tuple(tensor for tensor, _ in ctx._saved)


def _through_composite(ctx, g, composite: Callable, saved: tuple) -> tuple:
    """The composite's gradient as a recorded graph (create_graph=True)."""
    from gradcheck.ref.autograd import grad

    inputs = list(saved)
    wanted = [i for i, need in enumerate(ctx.needs_input_grad) if need]
    # NOTE: a fresh view per input gives autograd.grad a node of its own to stop at, so the
    # hooks and other consumers of the input's own grad_fn are not touched.
    for i in wanted:
        inputs[i] = inputs[i].view_as(inputs[i])
    out = composite(ctx, *inputs)
    found = grad(out, [inputs[i] for i in wanted], g, create_graph=True, allow_unused=True)
    grads = [None] * len(inputs)
    for i, value in zip(wanted, found):
        grads[i] = value
    return tuple(grads)
