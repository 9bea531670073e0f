"""``F.scaled_dot_product_attention``: softmax(q k^T * scale + mask) v. Without dropout it is
one fused node (``fused.py``: numpy forward and backward); with dropout it is written with
the engine's ops, so its gradient is the composition of matmul, softmax and masking rules.

This is also ``torch.nn.attention``: ``sdpa_kernel`` chooses among attention kernels, and the
engine has one (the math path), so it selects nothing; ``SDPBackend`` names the kernels.

Example:
    >>> import gradcheck.ref as torch
    >>> q = torch.ones(1, 2, 4)
    >>> scaled_dot_product_attention(q, q, q, is_causal=True).shape
    torch.Size([1, 2, 4])
"""
from __future__ import annotations

import contextlib
import enum
import math
from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.dispatch import apply
from gradcheck.ref.fused import FUSED, fusable_mask

Tensor = Any


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """Attention as torch defines it; a bool mask keeps True positions, a float mask adds."""
    length, source = query.shape[-2], key.shape[-2]
    if enable_gqa and key.shape[-3] != query.shape[-3]:
        repeat = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(repeat, -3)
        value = value.repeat_interleave(repeat, -3)
    factor = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    if dropout_p == 0.0 and not (is_causal and attn_mask is not None):
        additive = _additive_mask(attn_mask, is_causal, length, source, query.dtype)
        if fusable_mask(additive, query, key, value):
            mask = () if additive is None else (additive,)
            return apply(FUSED["attention"], query, key, value, *mask, scale=factor,
                         scale_query=False, aux=[], unchecked=(3,))
    scores = query @ key.transpose(-2, -1) * factor
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                               "set when is_causal=True")
        attn_mask = torch.ones(length, source, dtype=torch.bool).tril()
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask
    weights = torch.softmax(scores, -1)
    if dropout_p > 0.0:
        from gradcheck.ref.nn.functional import dropout

        weights = dropout(weights, dropout_p, True)
    return weights @ value


def _additive_mask(mask, is_causal: bool, length: int, source: int, dtype):
    """The mask as a float tensor added to the scores (-inf where a bool mask is False)."""
    if is_causal:
        mask = torch.ones(length, source, dtype=torch.bool).tril()
    if mask is None or mask.dtype != torch.bool:
        return mask
    return torch.zeros(mask.shape, dtype=dtype).masked_fill_(mask.logical_not(), float("-inf"))


class SDPBackend(enum.IntEnum):
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


@contextlib.contextmanager
def sdpa_kernel(backends: Any, set_priority: bool = False):
    """``with sdpa_kernel(SDPBackend.FLASH_ATTENTION):`` runs the block on the one kernel."""
    yield
