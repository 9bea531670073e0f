"""The Transformer family: ``TransformerEncoderLayer``, ``TransformerDecoderLayer``, their
stacks ``TransformerEncoder``/``TransformerDecoder`` and ``nn.Transformer``, as torch defines
them: post-norm by default (``norm_first=True`` for pre-norm), ReLU or GELU by name or any
callable, dropout after attention, inside and after the feed-forward block.

torch's encoder has an inference fast path (eval mode, no grad, a key padding mask, the
"nested tensor" path) whose output is zero at padded positions. The engine reproduces that
answer: same layers, then the padded rows zeroed, so eval-mode outputs agree too.

Example:
    >>> import gradcheck.ref as torch
    >>> model = Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
    ...                     dim_feedforward=16, batch_first=True)
    >>> mask = Transformer.generate_square_subsequent_mask(3)
    >>> model(torch.ones(2, 5, 8), torch.ones(2, 3, 8), tgt_mask=mask).shape
    torch.Size([2, 3, 8])
"""
from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.nn import init
from gradcheck.ref.nn.container import ModuleList
from gradcheck.ref.nn.dropout import Dropout
from gradcheck.ref.nn.linear import Linear
from gradcheck.ref.nn.module import Module
from gradcheck.ref.nn.multihead import MultiheadAttention, canonical_mask
from gradcheck.ref.nn.normalization import LayerNorm

Tensor = Any


def _activation(activation: str | Callable) -> Callable:
    if not isinstance(activation, str):
        return activation
    if activation in ("relu", "gelu"):
        return getattr(torch.nn.functional, activation)
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
    """The causal mask: ``-inf`` above the diagonal, 0 on and below it."""
    return torch.triu(torch.full((sz, sz), float("-inf"), dtype=dtype, device=device),
                      diagonal=1)


def _is_causal(mask: Tensor | None, is_causal: bool | None, size: int | None) -> bool:
    """torch's detection: an explicit hint wins, else compare the mask with the causal one."""
    if is_causal is not None or mask is None:
        return is_causal is True
    causal = generate_square_subsequent_mask(size if size is not None else mask.shape[-2],
                                             dtype=mask.dtype)
    return tuple(mask.shape) == tuple(causal.shape) and bool((mask == causal).all())


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with a residual connection and LayerNorm."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable = "relu",
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        src_key_padding_mask = canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                              src_mask, "src_mask", src.dtype)
        src_mask = canonical_mask(src_mask, "src_mask", None, "", src.dtype)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
                  is_causal: bool = False) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's memory, and a feed-forward block."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable = "relu",
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                            batch_first=batch_first, bias=bias, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                 batch_first=batch_first, bias=bias, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                           memory_is_causal))
        return self.norm3(x + self._ff_block(x))

    def _sa_block(self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
                  is_causal: bool = False) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x: Tensor, mem: Tensor, attn_mask: Tensor | None,
                   key_padding_mask: Tensor | None, is_causal: bool = False) -> Tensor:
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


def _clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _nested_path_reason(layer: Any) -> str:
    """Why torch's encoder would not take its nested-tensor path ("" when it would)."""
    if not isinstance(layer, TransformerEncoderLayer):
        return "encoder_layer was not TransformerEncoderLayer"
    attn = layer.self_attn
    checks = [
        (layer.norm_first, "encoder_layer.norm_first was True"),
        (not attn.batch_first, "encoder_layer.self_attn.batch_first was not True(use "
                               "batch_first for better inference performance)"),
        (not attn._qkv_same_embed_dim,
         "encoder_layer.self_attn._qkv_same_embed_dim was not True"),
        (attn.in_proj_bias is None, "encoder_layer.self_attn was passed bias=False"),
        (layer.activation not in (torch.nn.functional.relu, torch.nn.functional.gelu)
         and not isinstance(layer.activation, (torch.nn.ReLU, torch.nn.GELU)),
         "encoder_layer.activation_relu_or_gelu was not True"),
        (layer.norm1.eps != layer.norm2.eps,
         "encoder_layer.norm1.eps was not equal to encoder_layer.norm2.eps"),
        (attn.num_heads % 2 == 1, "encoder_layer.self_attn.num_heads is odd"),
    ]
    return next((why for failed, why in checks if failed), "")


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer``, then an optional final norm."""

    def __init__(self, encoder_layer: Module, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm
        self.enable_nested_tensor = self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why = _nested_path_reason(encoder_layer)
        if enable_nested_tensor and why:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False "
                          f"because {why}", UserWarning, stacklevel=2)
            self.use_nested_tensor = False

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        padding = canonical_mask(src_key_padding_mask, "src_key_padding_mask", mask, "mask",
                                 src.dtype)
        mask = canonical_mask(mask, "mask", None, "", src.dtype)
        batch_first = self.layers[0].self_attn.batch_first
        seq_len = src.shape[0] if src.dim() == 2 else src.shape[1 if batch_first else 0]
        is_causal = _is_causal(mask, is_causal, seq_len)
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=is_causal,
                           src_key_padding_mask=padding)
        if self._takes_nested_path(src, padding, mask):
            keep = (padding == 0).unsqueeze(-1)
            output = torch.where(keep, output, torch.zeros((), dtype=output.dtype))
        if self.norm is not None:
            output = self.norm(output)
        return output

    def _takes_nested_path(self, src: Tensor, padding: Tensor | None,
                           mask: Tensor | None) -> bool:
        """torch's conditions for its nested-tensor path, whose output is 0 where padded."""
        if (not self.use_nested_tensor or self.layers[0].training or src.dim() != 3
                or padding is None or mask is not None):
            return False
        if torch.is_grad_enabled() and (src.requires_grad or any(
                p.requires_grad for p in self.layers[0].parameters())):
            return False
        # the padding must sit at the end of each sequence ("left aligned"), when checked
        valid = (padding == 0).long()
        return not self.mask_check or bool((valid.cummin(dim=1)[0] == valid).all())


class TransformerDecoder(Module):
    """``num_layers`` deep copies of ``decoder_layer``, then an optional final norm."""

    def __init__(self, decoder_layer: Module, num_layers: int,
                 norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        batch_first = self.layers[0].self_attn.batch_first
        seq_len = tgt.shape[0] if tgt.dim() == 2 else tgt.shape[1 if batch_first else 0]
        tgt_is_causal = _is_causal(tgt_mask, tgt_is_causal, seq_len)
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask,
                           tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        return output if self.norm is None else self.norm(output)


class Transformer(Module):
    """An encoder-decoder Transformer; every matrix is re-initialised with Xavier uniform."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable = "relu",
                 custom_encoder: Any = None, custom_decoder: Any = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                      batch_first, norm_first, bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(*layer_args, **kw), num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(*layer_args, **kw), num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None,
                tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        batch_dim = 0 if self.batch_first else 1
        if src.dim() == 3 and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    generate_square_subsequent_mask = staticmethod(generate_square_subsequent_mask)
