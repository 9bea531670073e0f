"""``torch.nn.grad``: the gradients of a convolution with respect to its input and its weight,
given the gradient of its output. A convolution is linear in each, so the engine gets them
exactly by differentiating the convolution itself (at a zero input or weight).

>>> import gradcheck.ref as torch
>>> weight = torch.ones(1, 1, 2)
>>> torch.nn.grad.conv1d_input((1, 1, 3), weight, torch.ones(1, 1, 2))
tensor([[[1., 2., 1.]]])
"""
from __future__ import annotations

from typing import Any

Tensor = Any


def _conv(dims: int) -> Any:
    from gradcheck.ref.nn import functional

    return getattr(functional, f"conv{dims}d")


def _input_grad(dims: int, input_size: Any, weight: Tensor, grad_output: Tensor, stride: Any,
                padding: Any, dilation: Any, groups: int) -> Tensor:
    from gradcheck import ref

    with ref.enable_grad():
        probe = ref.zeros(*input_size, dtype=grad_output.dtype, requires_grad=True)
        out = _conv(dims)(probe, weight.detach(), None, stride, padding, dilation, groups)
        return ref.autograd.grad(out, probe, grad_output.detach())[0]


def _weight_grad(dims: int, input: Tensor, weight_size: Any, grad_output: Tensor,  # noqa: A002
                 stride: Any, padding: Any, dilation: Any, groups: int) -> Tensor:
    from gradcheck import ref

    with ref.enable_grad():
        probe = ref.zeros(*weight_size, dtype=grad_output.dtype, requires_grad=True)
        out = _conv(dims)(input.detach(), probe, None, stride, padding, dilation, groups)
        return ref.autograd.grad(out, probe, grad_output.detach())[0]


def _pair(dims: int) -> tuple:
    def conv_input(input_size: Any, weight: Tensor, grad_output: Tensor, stride: Any = 1,
                   padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
        return _input_grad(dims, input_size, weight, grad_output, stride, padding, dilation,
                           groups)

    def conv_weight(input: Tensor, weight_size: Any, grad_output: Tensor,  # noqa: A002
                    stride: Any = 1, padding: Any = 0, dilation: Any = 1,
                    groups: int = 1) -> Tensor:
        return _weight_grad(dims, input, weight_size, grad_output, stride, padding, dilation,
                            groups)

    conv_input.__name__, conv_weight.__name__ = f"conv{dims}d_input", f"conv{dims}d_weight"
    conv_input.__doc__ = f"The gradient of ``conv{dims}d`` with respect to its input."
    conv_weight.__doc__ = f"The gradient of ``conv{dims}d`` with respect to its weight."
    return conv_input, conv_weight


conv1d_input, conv1d_weight = _pair(1)
conv2d_input, conv2d_weight = _pair(2)
conv3d_input, conv3d_weight = _pair(3)
