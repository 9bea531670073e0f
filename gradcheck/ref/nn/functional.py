"""`nn.functional`: activations, layers and losses written with the engine's public ops.

Every function is a composition of differentiable Tensor ops, so its backward comes from the
engine's derivative table; the numerically delicate ones (softmax family, logits losses) are
written so that the composed gradient is exact, not just the forward value.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.dispatch import apply
from gradcheck.ref.fused import FUSED, on_numpy

Tensor = Any  # a gradcheck.ref.Tensor; kept loose so this module imports before the engine

_REDUCTIONS = ("mean", "sum", "none")


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = x W^T + b.

    Example:
        >>> import gradcheck.ref as torch
        >>> linear(torch.ones(1, 2), torch.ones(3, 2), torch.zeros(3)).tolist()
        [[2.0, 2.0, 2.0]]
    """
    # NOTE: one fused node (AddmmBackward0, as torch records) measured ~2-3% faster on the
    # MLP step than matmul + t + add; see docs/bench-engine.md.
    return torch.ops.linear(input, weight, bias)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0); the gradient at exactly 0 is 0, as in torch.

    Example:
        >>> import gradcheck.ref as torch
        >>> relu(torch.tensor([-1.0, 2.0])).tolist()
        [0.0, 2.0]
    """
    return input.relu_() if inplace else input.relu()


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x where x > 0, else negative_slope * x (the slope at exactly 0 is negative_slope).

    Example:
        >>> import gradcheck.ref as torch
        >>> leaky_relu(torch.tensor([-2.0, 3.0]), 0.5).tolist()
        [-1.0, 3.0]
    """
    from gradcheck.ref.derivatives import TABLE
    from gradcheck.ref.inplace import inplace as in_place

    def row(t, name="leaky_relu"):
        return apply(TABLE[name], t, slope=negative_slope)

    # in place, the node becomes the input's grad_fn, as torch's leaky_relu_ does
    return in_place(input, row, "leaky_relu_") if inplace else row(input)


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent.

    Example:
        >>> import gradcheck.ref as torch
        >>> tanh(torch.zeros(1)).tolist()
        [0.0]
    """
    return input.tanh()


def sigmoid(input: Tensor) -> Tensor:
    """Logistic function.

    Example:
        >>> import gradcheck.ref as torch
        >>> sigmoid(torch.zeros(1)).tolist()
        [0.5]
    """
    return input.sigmoid()


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype: Any = None) -> Tensor:
    """log(softmax(x)), stable for large |x| (the engine shifts by the max internally).

    Example:
        >>> import gradcheck.ref as torch
        >>> round(log_softmax(torch.tensor([1000.0, 1000.0]), dim=0)[0].item(), 4)
        -0.6931
    """
    return torch.log_softmax(input, _default_dim(input, dim), dtype=dtype)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: Any = None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim`, computed stably.

    Example:
        >>> import gradcheck.ref as torch
        >>> softmax(torch.tensor([0.0, 0.0]), dim=0).tolist()
        [0.5, 0.5]
    """
    return torch.softmax(input, _default_dim(input, dim), dtype=dtype)


def _default_dim(input: Tensor, dim: int | None) -> int:
    if dim is not None:
        return dim
    # torch's legacy implicit-dim rule (it warns; we simply follow it).
    return 0 if input.dim() in (0, 1, 3) else 1


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability p and scale the survivors by 1/(1-p) (training only).

    Example:
        >>> import gradcheck.ref as torch
        >>> dropout(torch.ones(3), p=0.5, training=False).tolist()
        [1.0, 1.0, 1.0]
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * torch.zeros_like(input)
    scale = (torch.rand(input.shape) >= p).to(input.dtype) / (1.0 - p)
    return input.mul_(scale) if inplace else input * scale


def _channel_dropout(input: Tensor, p: float, training: bool, inplace: bool) -> Tensor:
    # One draw per (sample, channel), broadcast over the spatial dims, as torch's feature dropout.
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    scale = (torch.rand(shape) >= p).to(input.dtype) / (1.0 - p) if p < 1.0 else \
        torch.zeros(shape, dtype=input.dtype)
    return input.mul_(scale) if inplace else input * scale


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of an (N, C, ...) input with probability p (training only).

    Example:
        >>> import gradcheck.ref as torch
        >>> dropout2d(torch.ones(1, 2, 2, 2), training=False).sum().item()
        8.0
    """
    return _channel_dropout(input, p, training, inplace)


dropout1d = dropout3d = dropout2d


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """Rows of `weight` at integer `input`; rows at `padding_idx` receive no gradient.

    Example:
        >>> import gradcheck.ref as torch
        >>> embedding(torch.tensor([1]), torch.eye(2)).tolist()
        [[0.0, 1.0]]
    """
    if input.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"embedding indices must be int64 or int32, got {input.dtype}; "
                        "convert them with .long()")
    rows = weight[input]
    if padding_idx is None:
        return rows
    if padding_idx < 0:
        padding_idx += weight.shape[0]
    keep = (input != padding_idx).to(weight.dtype).unsqueeze(-1)
    # Same forward value everywhere; the padding rows' gradient path is cut.
    return rows * keep + rows.detach() * (1 - keep)


def layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize over the trailing `normalized_shape` dims with the biased variance.

    Example:
        >>> import gradcheck.ref as torch
        >>> [round(v, 3) for v in layer_norm(torch.tensor([1.0, 3.0]), (2,)).tolist()]
        [-1.0, 1.0]
    """
    normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) \
        else tuple(normalized_shape)
    if tuple(input.shape[input.dim() - len(normalized_shape):]) != normalized_shape:
        raise RuntimeError(f"layer_norm: input shape {tuple(input.shape)} does not end with "
                           f"normalized_shape {normalized_shape}")
    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    params = tuple(p for p in (weight, bias) if p is not None)
    if on_numpy(input, *params):  # one node, torch's NativeLayerNormBackward0
        return apply(FUSED["layer_norm"], input, *params, dims=dims, eps=eps,
                     affine=(weight is not None, bias is not None), aux=[])
    mean = input.mean(dim=dims, keepdim=True)
    centered = input - mean
    var = (centered * centered).mean(dim=dims, keepdim=True)
    out = centered / (var + eps).sqrt()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


# The rest of the namespace lives in one module per kind of layer; re-exported here so that
# ``torch.nn.functional.<name>`` finds everything, as in torch.
from gradcheck.ref.nn.losses import (  # noqa: E402,F401
    _check_reduction,
    _reduce,
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    one_hot,
    smooth_l1_loss,
)
from gradcheck.ref.nn.conv import (  # noqa: E402,F401
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    fold,
    unfold,
)
from gradcheck.ref.nn.padding import pad  # noqa: E402,F401
from gradcheck.ref.nn.pooling import (  # noqa: E402,F401
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)
from gradcheck.ref.nn.batchnorm import batch_norm  # noqa: E402,F401
from gradcheck.ref.nn.normalization import group_norm  # noqa: E402,F401
from gradcheck.ref.nn.nonlinear import (  # noqa: E402,F401
    celu,
    elu,
    gelu,
    hardsigmoid,
    hardswish,
    hardtanh,
    logsigmoid,
    mish,
    normalize,
    prelu,
    relu6,
    selu,
    silu,
    softplus,
    softsign,
)
from gradcheck.ref.nn.upsampling import interpolate, upsample  # noqa: E402,F401
from gradcheck.ref.nn.attention import scaled_dot_product_attention  # noqa: E402,F401
from gradcheck.ref.nn.pixelshuffle import pixel_shuffle, pixel_unshuffle  # noqa: E402,F401
from gradcheck.ref.nn.multihead import multi_head_attention_forward  # noqa: E402,F401
from gradcheck.ref.nn.distance import (  # noqa: E402,F401
    cosine_similarity,
    pairwise_distance,
    pdist,
)
from gradcheck.ref.nn.instancenorm import instance_norm, local_response_norm  # noqa: E402,F401
from gradcheck.ref.nn.sampling import affine_grid, grid_sample  # noqa: E402,F401
from gradcheck.ref.nn.rmsnorm import rms_norm  # noqa: E402,F401
from gradcheck.ref.nn.layers_extra import adaptive_max_pool3d  # noqa: E402,F401


class _Reduction:
    """torch's legacy reduction codes (none 0, mean 1, sum 2)."""

    @staticmethod
    def get_enum(reduction: str) -> int:
        codes = {"none": 0, "mean": 1, "elementwise_mean": 1, "sum": 2}
        if reduction not in codes:
            raise ValueError(f"{reduction} is not a valid value for reduction")
        return codes[reduction]

    @staticmethod
    def legacy_get_string(size_average, reduce, emit_warning: bool = True) -> str:
        return _legacy_reduction(size_average, reduce, "mean")


from gradcheck.ref.nn.losses import legacy_reduction as _legacy_reduction  # noqa: E402
from gradcheck.ref.nn.layers_extra import (  # noqa: E402,F401
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    bilinear,
    embedding_bag,
    glu,
    gumbel_softmax,
    relu_,
    rrelu,
    softmin,
    threshold,
)
from gradcheck.ref.nn.margin_losses import (  # noqa: E402,F401
    cosine_embedding_loss,
    gaussian_nll_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    poisson_nll_loss,
    soft_margin_loss,
    triplet_margin_loss,
)
from gradcheck.ref.nn.ctc import ctc_loss  # noqa: E402,F401
