"""``nn.MultiheadAttention`` and ``F.multi_head_attention_forward``, following torch's
reference path step by step: the packed (or separate) input projection, the optional learnt
key/value bias and zero attention slot, the masks turned into additive ``-inf`` form and
merged, softmax attention per head, and the output projection. Everything is composed from
the engine's differentiable ops, so the gradients are those of the table's rows.

Shapes are torch's: ``(L, N, E)`` (or ``(N, L, E)`` with ``batch_first``), or unbatched
``(L, E)``. ``attn_mask`` is ``(L, S)`` or ``(N * num_heads, L, S)``, bool (True = masked
out) or float (added to the scores); ``key_padding_mask`` is ``(N, S)``.

Example:
    >>> import gradcheck.ref as torch
    >>> mha = MultiheadAttention(4, 2, batch_first=True)
    >>> out, weights = mha(torch.ones(3, 5, 4), torch.ones(3, 6, 4), torch.ones(3, 6, 4))
    >>> tuple(out.shape), tuple(weights.shape)
    ((3, 5, 4), (3, 5, 6))
"""
from __future__ import annotations

import math
import warnings
from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.dispatch import apply
from gradcheck.ref.fused import FUSED, fusable_mask
from gradcheck.ref.nn import init
from gradcheck.ref.nn.linear import Linear
from gradcheck.ref.nn.module import Module
from gradcheck.ref.nn.parameter import Parameter

Tensor = Any


def canonical_mask(mask: Tensor | None, name: str, other: Tensor | None, other_name: str,
                   dtype: Any) -> Tensor | None:
    """A bool mask becomes a float one (``-inf`` where True); other dtypes are refused."""
    if mask is None:
        return None
    if mask.dtype != torch.bool and not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {name} are supported")
    if other is not None and mask.dtype != other.dtype:
        warnings.warn(f"Support for mismatched {name} and {other_name} is deprecated. Use same "
                      "type for both instead.", UserWarning, stacklevel=3)
    if mask.is_floating_point():
        return mask
    return torch.zeros(mask.shape, dtype=dtype).masked_fill_(mask, float("-inf"))


def _check_shapes(query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None,
                  attn_mask: Tensor | None, num_heads: int) -> bool:
    """torch's shape checks; returns whether the input is batched."""
    if query.dim() not in (2, 3):
        raise AssertionError("query should be unbatched 2D or batched 3D tensor but received "
                             f"{query.dim()}-D query tensor")
    batched = query.dim() == 3
    kind, rank = ("batched (3-D)", 3) if batched else ("unbatched (2-D)", 2)
    if key.dim() != rank or value.dim() != rank:
        raise AssertionError(f"For {kind} `query`, expected `key` and `value` to be {rank}-D but "
                             f"found {key.dim()}-D and {value.dim()}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.dim() != rank - 1:
        raise AssertionError(f"For {kind} `query`, expected `key_padding_mask` to be `None` or "
                             f"{rank - 1}-D but found {key_padding_mask.dim()}-D tensor instead")
    if attn_mask is not None:
        if attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or "
                                 f"3-D but found {attn_mask.dim()}-D tensor instead")
        expected = (num_heads, query.shape[0], key.shape[0])
        if not batched and attn_mask.dim() == 3 and tuple(attn_mask.shape) != expected:
            raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                 f"{attn_mask.shape}")
    return batched


def _project(query: Tensor, key: Tensor, value: Tensor, weights: tuple, bias: Tensor | None):
    """q, k, v from one packed ``(3E, E)`` weight or three separate ones."""
    F = torch.nn.functional
    biases = (None, None, None) if bias is None else bias.chunk(3)
    if len(weights) == 1:
        weights = weights[0].chunk(3)
    return tuple(F.linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases))


def _pad_last(mask: Tensor | None) -> Tensor | None:
    """One more key position, never masked (for bias_k/bias_v and the zero attention slot)."""
    return None if mask is None else torch.nn.functional.pad(mask, (0, 1))


def multi_head_attention_forward(
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None,
        bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float, out_proj_weight: Tensor,
        out_proj_bias: Tensor | None, training: bool = True,
        key_padding_mask: Tensor | None = None, need_weights: bool = True,
        attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False,
        q_proj_weight: Tensor | None = None, k_proj_weight: Tensor | None = None,
        v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
        static_v: Tensor | None = None, average_attn_weights: bool = True,
        is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
    """Attention over ``(L, N, E)`` inputs; returns the output and, with ``need_weights``,
    the attention weights (averaged over heads unless ``average_attn_weights=False``)."""
    F = torch.nn.functional
    if static_k is not None or static_v is not None:
        raise NotImplementedError("multi_head_attention_forward(static_k=..., static_v=...) is "
                                  "not available in gradcheck.ref; pass key and value instead")
    batched = _check_shapes(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    key_padding_mask = canonical_mask(key_padding_mask, "key_padding_mask", attn_mask,
                                      "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    # NOTE: the is_causal hint only selects a kernel in torch; the mask itself is what is
    # applied, so it is always used here (the same values).
    attn_mask = canonical_mask(attn_mask, "attn_mask", None, "", query.dtype)
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match "
                                 f"value's {value.shape[:2]}")
        weights = (q_proj_weight, k_proj_weight, v_proj_weight)
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {key.shape} does not match value shape "
                                 f"{value.shape}")
        weights = (in_proj_weight,)
    q, k, v = _project(query, key, value, weights, in_proj_bias)
    src_len = key.shape[0]
    if attn_mask is not None:
        expected = (tgt_len, src_len) if attn_mask.dim() == 2 else (bsz * num_heads, tgt_len,
                                                                    src_len)
        if tuple(attn_mask.shape) != expected:
            raise RuntimeError(f"The shape of the {attn_mask.dim()}D attn_mask is "
                               f"{attn_mask.shape}, but should be {expected}.")
        if attn_mask.dim() == 2:
            attn_mask = attn_mask.unsqueeze(0)
    if (bias_k is None) != (bias_v is None):
        raise AssertionError(f"bias_{'k' if bias_v is None else 'v'} is set but "
                             f"bias_{'v' if bias_v is None else 'k'} is None")
    if bias_k is not None:
        k = torch.cat([k, bias_k.repeat(1, bsz, 1)])
        v = torch.cat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if add_zero_attn:
        zeros = torch.zeros((bsz * num_heads, 1, head_dim), dtype=k.dtype)
        k, v = torch.cat([k, zeros], dim=1), torch.cat([v, zeros], dim=1)
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        for axis, size in enumerate((bsz, src_len)):
            if key_padding_mask.shape[axis] != size:
                raise AssertionError(f"Expected key_padded_mask.shape[{axis}] to be {size}, but "
                                     f"got {key_padding_mask.shape[axis]}")
        padding = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1)
        padding = padding.reshape(bsz * num_heads, 1, src_len)
        attn_mask = padding if attn_mask is None else attn_mask + padding
    if not training:
        dropout_p = 0.0
    scale = math.sqrt(1.0 / float(head_dim))
    if not need_weights and dropout_p == 0.0 and fusable_mask(attn_mask, q, k, v):
        mask = () if attn_mask is None else (attn_mask,)
        attended = apply(FUSED["attention"], q, k, v, *mask, scale=scale, scale_query=True,
                         aux=[], unchecked=(3,))
        out = attended.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = F.linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
        return (out if batched else out.squeeze(1)), None
    scores = (q * scale) @ k.transpose(-2, -1)
    if attn_mask is not None:
        scores = scores + attn_mask
    weights = torch.softmax(scores, dim=-1)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    out = (weights @ v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = F.linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    if not batched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
    if average_attn_weights:
        weights = weights.mean(dim=1)
    return out, (weights if batched else weights.squeeze(0))


class MultiheadAttention(Module):
    """torch's module: the same parameters (``in_proj_weight`` or ``q/k/v_proj_weight`` when
    ``kdim``/``vdim`` differ, ``in_proj_bias``, ``out_proj``, ``bias_k``/``bias_v``), the same
    initialisation, and ``forward`` returning ``(output, weights or None)``."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim="
                             f"{embed_dim} and num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        kw = {"device": device, "dtype": dtype}
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(torch.empty((3 * embed_dim, embed_dim), **kw))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(torch.empty((embed_dim, embed_dim), **kw))
            self.k_proj_weight = Parameter(torch.empty((embed_dim, self.kdim), **kw))
            self.v_proj_weight = Parameter(torch.empty((embed_dim, self.vdim), **kw))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(torch.empty(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = Parameter(torch.empty((1, 1, embed_dim), **kw))
            self.bias_v = Parameter(torch.empty((1, 1, embed_dim), **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for weight in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        if self.batch_first and query.dim() == 3:
            query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        separate = not self._qkv_same_embed_dim
        out, weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=separate, q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and query.dim() == 3:
            out = out.transpose(1, 0)
        return out, weights
