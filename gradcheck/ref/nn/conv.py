"""Convolutions: ``conv1d``/``conv2d``/``conv_transpose2d``, ``unfold``/``fold``, and the
``Conv1d``/``Conv2d``/``ConvTranspose2d`` modules.

A convolution is one matrix product, ``weight @ unfold(x)`` (im2col, batch-last so the whole
batch is one GEMM), so its gradients come from the matmul rule and from ``unfold``'s adjoint
``fold`` in the derivatives table. A transposed convolution is the same two ops the other way
round: ``fold(weight.T @ x)``.
1-D convolutions run as 2-D ones with a height of 1.

Example:
    >>> import gradcheck.ref as torch
    >>> conv2d(torch.ones(1, 1, 3, 3), torch.ones(1, 1, 2, 2)).tolist()
    [[[[4.0, 4.0], [4.0, 4.0]]]]
"""
from __future__ import annotations

from typing import Any

from gradcheck.ref import im2col
from gradcheck.ref.derivatives import TABLE
from gradcheck.ref.dispatch import apply
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


def _geometry(kernel_size, dilation, padding, stride) -> tuple:
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


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """2-D cross-correlation, as torch's ``F.conv2d`` (stride, padding, dilation, groups)."""
    _check_conv(input, weight, groups, 2)
    if input.dim() == 3:
        return conv2d(input.unsqueeze(0), weight, bias, stride, padding, dilation,
                      groups).squeeze(0)
    kernel, dilation = tuple(weight.shape[2:]), _tuple(dilation, 2)
    padding = _same_padding(kernel, dilation) if padding == "same" else (
        (0, 0) if padding == "valid" else _tuple(padding, 2))
    n, _, h, w = input.shape
    stride = _tuple(stride, 2)
    cols = _columns(input, kernel, dilation, padding, stride)  # (C*k, N*L)
    out_c = weight.shape[0]
    if groups == 1:
        out = weight.reshape(out_c, -1) @ cols  # (O, N*L): the whole batch in one GEMM
    else:
        out = weight.reshape(groups, out_c // groups, -1) @ cols.reshape(groups, -1,
                                                                        cols.shape[-1])
    oh, ow = (im2col.out_size(s, k, d, p, st) for s, k, d, p, st in
              zip((h, w), kernel, dilation, padding, stride))
    out = out.reshape(out_c, n, oh, ow).permute(1, 0, 2, 3)
    return out if bias is None else out + bias.reshape(1, -1, 1, 1)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """1-D cross-correlation, run as a 2-D one over a height of 1."""
    _check_conv(input, weight, groups, 1)
    padding = padding if isinstance(padding, str) else (0, _tuple(padding, 1)[0])
    out = conv2d(input.unsqueeze(-2), weight.unsqueeze(-2), bias, (1, _tuple(stride, 1)[0]),
                 padding, (1, _tuple(dilation, 1)[0]), groups)
    return out.squeeze(-2)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """The adjoint of ``conv2d`` in its input: ``fold(weight^T @ x)``."""
    if input.dim() == 3:
        return conv_transpose2d(input.unsqueeze(0), weight, bias, stride, padding,
                                output_padding, groups, dilation).squeeze(0)
    stride, padding = _tuple(stride, 2), _tuple(padding, 2)
    dilation, output_padding = _tuple(dilation, 2), _tuple(output_padding, 2)
    n, in_c, h, w = input.shape
    kernel = tuple(weight.shape[2:])
    out_c = weight.shape[1] * groups
    size = tuple((s - 1) * st - 2 * p + d * (k - 1) + op + 1 for s, st, p, d, k, op in
                 zip((h, w), stride, padding, dilation, kernel, output_padding))
    x = input.permute(1, 0, 2, 3).reshape(groups, in_c // groups, n * h * w)
    wt = weight.reshape(groups, in_c // groups, -1).mT  # (G, O/G * k, C/G)
    cols = (wt @ x).reshape(out_c * kernel[0] * kernel[1], n * h * w)
    out = _uncolumns(cols, (n, out_c) + size, kernel, dilation, padding, stride, (h, w))
    return out if bias is None else out + bias.reshape(1, -1, 1, 1)


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


class Conv2d(_ConvNd):
    """2-D convolution layer.

    Example:
        >>> import gradcheck.ref as torch
        >>> Conv2d(3, 8, 3, padding=1)(torch.ones(2, 3, 5, 5)).shape
        torch.Size([2, 8, 5, 5])
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, 2, device=device, dtype=dtype)

    def forward(self, input: Tensor) -> Tensor:
        return conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                      self.groups)


class Conv1d(_ConvNd):
    """1-D convolution layer over (N, C, L) inputs."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, 1, device=device, dtype=dtype)

    def forward(self, input: Tensor) -> Tensor:
        return conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                      self.groups)


class ConvTranspose2d(_ConvNd):
    """2-D transposed convolution (the gradient of Conv2d with respect to its input)."""

    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, 2, output_padding, device, dtype)

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        return conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                self.output_padding, self.groups, self.dilation)
