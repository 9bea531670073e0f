"""Less common layers, each a few lines over existing ops: ``GLU``, ``Bilinear``, ``RReLU``,
``Threshold``, ``Softmin``, ``Softmax2d``, ``EmbeddingBag``, ``Unfold``/``Fold``,
``AdaptiveAvgPool3d``, ``AdaptiveMaxPool1d``, ``MaxUnpool1d/2d/3d`` and the
functions ``glu``, ``relu_``, ``threshold``, ``gumbel_softmax``, ``softmin``,
``embedding_bag``, ``bilinear``, ``rrelu``.

Example:
    >>> import gradcheck.ref as torch
    >>> glu(torch.tensor([1.0, 0.0]))
    tensor([0.5000])
"""
from __future__ import annotations

import math
from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.nn import functional as F
from gradcheck.ref.nn import init
from gradcheck.ref.nn.module import Module
from gradcheck.ref.nn.parameter import Parameter
from gradcheck.ref.nn.pooling import (
    _averaging,
    _tuple,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)

Tensor = Any


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """First half times the sigmoid of the second half along ``dim``."""
    if input.shape[dim] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension "
                           f"{dim % input.dim()} is size {input.shape[dim]}")
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def relu_(input: Tensor) -> Tensor:
    return input.relu_()


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else value."""
    out = torch.where(input > threshold, input, torch.full_like(input, value))
    return input.copy_(out) if inplace else out


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: Any = None) -> Tensor:
    return F.softmax(-input, dim)


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """Softmax of (logits + Gumbel noise) / tau; ``hard`` gives one-hot values with the soft
    gradient (straight-through), as in torch."""
    gumbels = -torch.empty_like(logits).exponential_().log()
    soft = F.softmax((logits + gumbels) / tau, dim)
    if not hard:
        return soft
    index = soft.argmax(dim, keepdim=True)
    one_hot = torch.zeros_like(logits).scatter(dim, index, 1.0)
    return one_hot - soft.detach() + soft


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, inplace: bool = False) -> Tensor:
    """Leaky ReLU with a random slope in [lower, upper] (training) or their mean (eval)."""
    if training:
        slope = torch.empty_like(input).uniform_(lower, upper)
    else:
        slope = (lower + upper) / 2
    out = torch.where(input >= 0, input, input * slope)
    return input.copy_(out) if inplace else out


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None):
    """y_k = x1^T W_k x2 + b_k."""
    out = torch.einsum("...i,kij,...j->...k", input1, weight, input2)
    return out if bias is None else out + bias


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,
                  max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sum, mean or max of the embeddings of each bag (rows of a 2-D input, or the slices of
    a 1-D input between ``offsets``); empty bags give zeros."""
    if input.dim() == 2:
        bags = [input[i] for i in range(input.shape[0])]
    else:
        starts = offsets.tolist() + ([] if include_last_offset else [input.shape[0]])
        bags = [input[a:b] for a, b in zip(starts[:-1], starts[1:])]
    rows = []
    position = 0
    for bag in bags:
        keep = bag if padding_idx is None else bag[bag != padding_idx]
        vectors = F.embedding(keep, weight)
        if per_sample_weights is not None:
            sample = (per_sample_weights[position:position + bag.shape[0]] if input.dim() == 1
                      else per_sample_weights[len(rows)])
            vectors = vectors * sample.unsqueeze(-1)
        position += bag.shape[0]
        if keep.shape[0] == 0:
            rows.append(weight.new_zeros(weight.shape[1]))
        elif mode == "sum":
            rows.append(vectors.sum(0))
        elif mode == "mean":
            rows.append(vectors.mean(0))
        else:
            rows.append(vectors.amax(0))
    return torch.stack(rows, 0)


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """Adaptive average over the last three dims (one constant matrix per dim)."""
    out = input
    for axis, size in zip((-3, -2, -1), _tuple(output_size, 3)):
        length = input.shape[axis]
        matrix = input.new_tensor(_averaging(length, size or length))
        out = torch.movedim(torch.movedim(out, axis, -1) @ matrix.T, -1, axis)
    return out


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False) -> Tensor:
    """Max over torch's adaptive windows of the last dim."""
    length = input.shape[-1]
    size = _tuple(output_size, 1)[0]
    pieces = [input[..., (i * length) // size:math.ceil((i + 1) * length / size)].amax(-1)
              for i in range(size)]
    return torch.stack(pieces, -1)


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False) -> Tensor:
    """Max over torch's adaptive windows of the last three dims."""
    sizes = [n or input.shape[d] for n, d in zip(_tuple(output_size, 3), (-3, -2, -1))]
    out = input
    for axis, size in zip((-3, -2, -1), sizes):
        length = out.shape[axis]
        pieces = [out.narrow(axis, (i * length) // size,
                             math.ceil((i + 1) * length / size) - (i * length) // size)
                  .amax(axis, keepdim=True) for i in range(size)]
        out = torch.cat(pieces, axis)
    return out


class AdaptiveMaxPool3d(Module):
    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input: Tensor) -> Tensor:
        return adaptive_max_pool3d(input, self.output_size)


class GLU(Module):
    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return glu(input, self.dim)


class Threshold(Module):
    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input: Tensor) -> Tensor:
        return threshold(input, self.threshold, self.value, self.inplace)


class Softmin(Module):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return softmin(input, self.dim)


class Softmax2d(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, -3)


class RReLU(Module):
    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
                 inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        return rrelu(input, self.lower, self.upper, self.training, self.inplace)


class Bilinear(Module):
    """y = x1^T A x2 + b, initialised U(-1/sqrt(in1), 1/sqrt(in1)) as in torch."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = Parameter(torch.empty((out_features, in1_features, in2_features),
                                            dtype=dtype))
        if bias:
            self.bias = Parameter(torch.empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return bilinear(input1, input2, self.weight, self.bias)


class EmbeddingBag(Module):
    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight: Tensor | None = None,
                 include_last_offset: bool = False, padding_idx: int | None = None,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.mode, self.include_last_offset = mode, include_last_offset
        self.padding_idx = padding_idx
        self.weight = Parameter(torch.randn(num_embeddings, embedding_dim, dtype=dtype)
                                if _weight is None else _weight)
        if padding_idx is not None and _weight is None:
            with torch.no_grad():
                self.weight[padding_idx].fill_(0)

    def forward(self, input: Tensor, offsets: Tensor | None = None,
                per_sample_weights: Tensor | None = None) -> Tensor:
        return embedding_bag(input, self.weight, offsets, mode=self.mode,
                             per_sample_weights=per_sample_weights,
                             include_last_offset=self.include_last_offset,
                             padding_idx=self.padding_idx)


class Unfold(Module):
    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)


class Fold(Module):
    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)


class AdaptiveAvgPool3d(Module):
    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool1d(Module):
    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input: Tensor) -> Tensor:
        return adaptive_max_pool1d(input, self.output_size)


def _unpool_class(name: str, fn):
    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        Module.__init__(self)
        self.kernel_size, self.stride, self.padding = kernel_size, stride or kernel_size, padding

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        return fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    return type(name, (Module,), {"__init__": __init__, "forward": forward,
                                  "__doc__": f"Module form of ``{fn.__name__}``."})


MaxUnpool1d = _unpool_class("MaxUnpool1d", max_unpool1d)
MaxUnpool2d = _unpool_class("MaxUnpool2d", max_unpool2d)
MaxUnpool3d = _unpool_class("MaxUnpool3d", max_unpool3d)


