"""Convolutions in 1, 2 or 3 spatial dims: ``conv1d/2d/3d``, ``conv_transpose1d/2d/3d``,
``unfold``/``fold``, and the ``Conv1d/2d/3d`` and ``ConvTranspose1d/2d/3d`` modules.

A convolution is one matrix product, ``weight @ unfold(x)`` (im2col, batch-last so the whole
batch is one GEMM), so its gradients come from the matmul rule and from ``unfold``'s adjoint
``fold`` in the derivatives table. A transposed convolution is the same two ops the other way
round: ``fold(weight.T @ x)``.
One code path serves every spatial rank (im2col's kernels take any number of dims).

Example:
    >>> import gradcheck.ref as torch
    >>> conv2d(torch.ones(1, 1, 3, 3), torch.ones(1, 1, 2, 2)).tolist()
    [[[[4.0, 4.0], [4.0, 4.0]]]]
"""
from __future__ import annotations

import math
from typing import Any

from gradcheck.ref import im2col
from gradcheck.ref.derivatives import TABLE
from gradcheck.ref.dispatch import apply
from gradcheck.ref.fused import FUSED, on_numpy
from gradcheck.ref.nn.linear import default_init
from gradcheck.ref.nn.module import Module
from gradcheck.ref.nn.parameter import Parameter

Tensor = Any


def _tuple(value, n: int) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


def _columns(input: Tensor, kernel, dilation, padding, stride) -> Tensor:
    """Batch-last im2col: (N, C, H, W) -> (C * kh * kw, N * L)."""
    return apply(TABLE["unfold"], input, kernel=kernel, dilation=dilation, padding=padding,
                 stride=stride, grid=None)


def _uncolumns(cols: Tensor, size, kernel, dilation, padding, stride, grid=None) -> Tensor:
    """The adjoint of ``_columns``: (C * kh * kw, N * L) -> (N, C, H, W); ``grid`` is the
    window grid when it is smaller than what fits (a transposed conv's output_padding)."""
    return apply(TABLE["fold"], cols, size=tuple(size), kernel=kernel, dilation=dilation,
                 padding=padding, stride=stride, grid=grid)


def _geometry(kernel_size, dilation, padding, stride) -> tuple:  # unfold/fold: 2-D only
    return (_tuple(kernel_size, 2), _tuple(dilation, 2), _tuple(padding, 2), _tuple(stride, 2))


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sliding local blocks as columns: (N, C, H, W) -> (N, C * kh * kw, L), torch's im2col."""
    cols = _columns(input, *_geometry(kernel_size, dilation, padding, stride))
    return cols.reshape(cols.shape[0], input.shape[0], -1).permute(1, 0, 2)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """The adjoint of ``unfold``: (N, C * kh * kw, L) columns summed back into an image."""
    kernel = _tuple(kernel_size, 2)
    n, ck, _ = input.shape
    size = (n, ck // (kernel[0] * kernel[1])) + _tuple(output_size, 2)
    cols = input.permute(1, 0, 2).reshape(ck, -1)
    return _uncolumns(cols, size, *_geometry(kernel, dilation, padding, stride))


def _same_padding(kernel, dilation) -> tuple:
    total = [d * (k - 1) for k, d in zip(kernel, dilation)]
    if any(t % 2 for t in total):
        raise NotImplementedError("padding='same' with an even total padding on one side is "
                                  "not supported by gradcheck.ref; pass explicit padding")
    return tuple(t // 2 for t in total)


def _check_conv(input: Tensor, weight: Tensor, groups: int, spatial: int) -> None:
    if input.dim() not in (spatial + 1, spatial + 2):
        raise RuntimeError(f"Expected {spatial + 1}D (unbatched) or {spatial + 2}D (batched) "
                           f"input to conv{spatial}d, but got input of size: "
                           f"{list(input.shape)}")
    channels = input.shape[-spatial - 1]
    if channels != weight.shape[1] * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
            f"{list(input.shape)} to have {weight.shape[1] * groups} channels, but got "
            f"{channels} channels instead")


def _spatial_tuple(value, n: int, name: str) -> tuple:
    """An int or a list of ``n`` ints, one per spatial dim; torch's error otherwise."""
    values = _tuple(value, n)
    if len(values) != n:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} "
                           f"values to match the convolution dimensions, but got "
                           f"{name}={list(values)}")
    return values


def _check_fits(size, kernel, dilation, padding) -> None:
    padded = [s + 2 * p for s, p in zip(size, padding)]
    span = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    if any(k > s for k, s in zip(span, padded)):
        raise RuntimeError(f"Calculated padded input size per channel: "
                           f"({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, span))}). Kernel size can't be greater than "
                           f"actual input size; pad the input or shrink the kernel")


def _conv(input: Tensor, weight: Tensor, bias, stride, padding, dilation, groups: int,
          spatial: int, fused: bool = True) -> Tensor:
    """N-d cross-correlation: one GEMM of the weight with the batch-last columns.

    ``fused``: one node (``ConvolutionBackward0``, numpy forward and backward) where the
    arrays are numpy's; otherwise the same computation as a graph of unfold, matmul, views.
    """
    _check_conv(input, weight, groups, spatial)
    if input.dim() == spatial + 1:
        return _conv(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups,
                     spatial, fused).squeeze(0)
    kernel, dilation = tuple(weight.shape[2:]), _spatial_tuple(dilation, spatial, "dilation")
    padding = _same_padding(kernel, dilation) if padding == "same" else (
        (0,) * spatial if padding == "valid" else _spatial_tuple(padding, spatial, "padding"))
    stride = _spatial_tuple(stride, spatial, "stride")
    n, size = input.shape[0], tuple(input.shape[2:])
    _check_fits(size, kernel, dilation, padding)
    params = (input, weight) if bias is None else (input, weight, bias)
    if fused and on_numpy(*params):
        return apply(FUSED["convolution"], *params, stride=stride, padding=padding,
                     dilation=dilation, groups=groups, aux=[], unchecked=(2,))
    cols = _columns(input, kernel, dilation, padding, stride)  # (C*k, N*L)
    out_c = weight.shape[0]
    if groups == 1:
        out = weight.reshape(out_c, -1) @ cols  # (O, N*L): the whole batch in one GEMM
    else:
        out = weight.reshape(groups, out_c // groups, -1) @ cols.reshape(groups, -1,
                                                                        cols.shape[-1])
    grid = [im2col.out_size(s, k, d, p, st) for s, k, d, p, st in
            zip(size, kernel, dilation, padding, stride)]
    out = out.reshape(out_c, n, *grid).transpose(0, 1)
    return out if bias is None else out + bias.reshape(1, -1, *[1] * spatial)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """2-D cross-correlation, as torch's ``F.conv2d`` (stride, padding, dilation, groups)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """3-D cross-correlation over (N, C, D, H, W), as torch's ``F.conv3d``.

    >>> import gradcheck.ref as torch
    >>> conv3d(torch.ones(1, 1, 3, 3, 3), torch.ones(2, 1, 2, 2, 2)).shape
    torch.Size([1, 2, 2, 2, 2])
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """1-D cross-correlation, as torch's ``F.conv1d``."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1)


def _conv_transpose(input: Tensor, weight: Tensor, bias, stride, padding, output_padding,
                    groups: int, dilation, spatial: int) -> Tensor:
    """The adjoint of ``_conv`` in its input: ``fold(weight^T @ x)``."""
    if input.dim() == spatial + 1:
        return _conv_transpose(input.unsqueeze(0), weight, bias, stride, padding,
                               output_padding, groups, dilation, spatial).squeeze(0)
    stride = _spatial_tuple(stride, spatial, "stride")
    padding = _spatial_tuple(padding, spatial, "padding")
    dilation = _spatial_tuple(dilation, spatial, "dilation")
    output_padding = _spatial_tuple(output_padding, spatial, "output_padding")
    n, in_c, *grid = input.shape
    kernel = tuple(weight.shape[2:])
    size = tuple((s - 1) * st - 2 * p + d * (k - 1) + op + 1 for s, st, p, d, k, op in
                 zip(grid, stride, padding, dilation, kernel, output_padding))
    params = (input, weight) if bias is None else (input, weight, bias)
    if on_numpy(*params):
        return apply(FUSED["conv_transpose"], *params, stride=stride, padding=padding,
                     dilation=dilation, groups=groups, size=size, aux=[], unchecked=(2,))
    return _conv_transpose_graph(input, weight, bias, stride, padding, groups, dilation, size)


def _conv_transpose_graph(input: Tensor, weight: Tensor, bias, stride, padding, groups: int,
                          dilation, size) -> Tensor:
    """A transposed convolution as a graph of matmul, views and ``fold``."""
    n, in_c, *grid = input.shape
    kernel = tuple(weight.shape[2:])
    out_c = weight.shape[1] * groups
    spatial = len(grid)
    x = input.transpose(0, 1).reshape(groups, in_c // groups, -1)
    wt = weight.reshape(groups, in_c // groups, -1).mT  # (G, O/G * k, C/G)
    cols = (wt @ x).reshape(out_c * math.prod(kernel), -1)
    out = _uncolumns(cols, (n, out_c) + size, kernel, dilation, padding, stride, tuple(grid))
    return out if bias is None else out + bias.reshape(1, -1, *[1] * spatial)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """The adjoint of ``conv2d`` in its input: ``fold(weight^T @ x)``."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 2)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """The adjoint of ``conv3d`` in its input, as torch's ``F.conv_transpose3d``."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 3)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """The adjoint of ``conv1d`` in its input, as torch's ``F.conv_transpose1d``."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 1)


class _ConvNd(Module):
    """Shared constructor: torch's default init (kaiming_uniform_ with a=sqrt(5))."""

    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride, padding,
                 dilation, groups, bias, padding_mode, spatial, output_padding=0,
                 device=None, dtype=None) -> None:
        super().__init__()
        if in_channels % groups or out_channels % groups:
            raise ValueError("in_channels and out_channels must be divisible by groups, got "
                             f"in_channels={in_channels}, out_channels={out_channels}, "
                             f"groups={groups}")
        if padding_mode != "zeros":
            raise NotImplementedError(f"padding_mode={padding_mode!r} is not supported by "
                                      "gradcheck.ref; use 'zeros'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _tuple(kernel_size, spatial)
        self.stride, self.dilation = _tuple(stride, spatial), _tuple(dilation, spatial)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, spatial)
        self.output_padding = _tuple(output_padding, spatial)
        self.groups, self.padding_mode, self.transposed = groups, padding_mode, self._transposed
        from gradcheck import ref as torch

        shape = ((in_channels, out_channels // groups) if self._transposed
                 else (out_channels, in_channels // groups)) + self.kernel_size
        self.weight = Parameter(torch.empty(*shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(torch.empty(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        default_init(self.weight, self.bias)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, " \
            f"stride={self.stride}"
        zeros = (0,) * len(self.kernel_size)
        if self.padding != zeros:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.kernel_size):
            s += f", dilation={self.dilation}"
        if self.output_padding != zeros:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class _Conv(_ConvNd):
    """Conv1d/2d/3d: the constructor and forward shared by all spatial ranks."""

    _spatial = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, self._spatial, device=device, dtype=dtype)

    def forward(self, input: Tensor) -> Tensor:
        return _conv(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                     self.groups, self._spatial)


class Conv2d(_Conv):
    """2-D convolution layer.

    Example:
        >>> import gradcheck.ref as torch
        >>> Conv2d(3, 8, 3, padding=1)(torch.ones(2, 3, 5, 5)).shape
        torch.Size([2, 8, 5, 5])
    """


class Conv1d(_Conv):
    """1-D convolution layer over (N, C, L) inputs."""

    _spatial = 1


class Conv3d(_Conv):
    """3-D convolution layer over (N, C, D, H, W) inputs.

    Example:
        >>> import gradcheck.ref as torch
        >>> Conv3d(2, 4, 3, padding=1)(torch.ones(1, 2, 4, 4, 4)).shape
        torch.Size([1, 4, 4, 4, 4])
    """

    _spatial = 3


class _ConvTransposeMixin:
    """torch's deprecated mixin: in torch 2 no layer derives from it, so isinstance checks
    against it are False, here as there."""


class _ConvTranspose(_ConvNd):
    """ConvTranspose1d/2d/3d: the gradient of a convolution with respect to its input."""

    _transposed = True
    _spatial = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, self._spatial, output_padding, device,
                         dtype)

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        return _conv_transpose(input, self.weight, self.bias, self.stride, self.padding,
                               self.output_padding, self.groups, self.dilation, self._spatial)


class ConvTranspose2d(_ConvTranspose):
    """2-D transposed convolution (the gradient of Conv2d with respect to its input)."""


class ConvTranspose1d(_ConvTranspose):
    """1-D transposed convolution (the gradient of Conv1d with respect to its input)."""

    _spatial = 1


class ConvTranspose3d(_ConvTranspose):
    """3-D transposed convolution (the gradient of Conv3d with respect to its input)."""

    _spatial = 3
