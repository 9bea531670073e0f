"""Fused rows: composite layers (layer norm, attention, an LSTM layer, convolutions) as ONE
graph node each, with a numpy forward and a numpy backward.

Why: a small model's training step is a few hundred ops on small tensors, and the engine
pays several microseconds of Python per op in forward and again per op inside each rule in
backward, where torch runs one C++ kernel per layer (``NativeLayerNormBackward0``,
``ConvolutionBackward0``, ...). A fused row runs the whole layer in one dispatch and its
rule in plain numpy.

Exactness: the forward computes what the composite computes, in the same order. The numpy
rule runs only when the backward is not itself recorded. Under ``create_graph=True`` the rule
rebuilds the composite from the engine's differentiable ops on the saved inputs and
differentiates that (``autograd.grad`` with ``create_graph``), so every higher derivative is
the composite's, exactly as before fusion.

Rows that need intermediate arrays in backward (a layer norm's ``rstd``, an LSTM's gates)
get them from the forward through an ``aux`` list attribute, which the node keeps.
"""
from __future__ import annotations

from gradcheck.ref import fused_attention, fused_conv, fused_losses, fused_norms, fused_recurrent
from gradcheck.ref.fused_norms import batch_stats  # noqa: F401 - batchnorm's statistics
from gradcheck.ref.fusing import fusable_mask, fused_op, on_numpy  # noqa: F401

# the table of fused rows, by the name callers apply them with
FUSED = {**fused_norms.ROWS, **fused_losses.ROWS, **fused_attention.ROWS,
         **fused_recurrent.ROWS, **fused_conv.ROWS}
