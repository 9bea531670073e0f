"""``torch.nn.utils.fusion``: fold an eval-mode batch norm into the convolution or linear
layer before it (w' = w * gamma / sqrt(var + eps), b' = (b - mean) * gamma / sqrt(var + eps)
+ beta), as inference graphs do.

Example:
    >>> import gradcheck.ref as torch
    >>> conv, bn = torch.nn.Conv2d(1, 2, 1).eval(), torch.nn.BatchNorm2d(2).eval()
    >>> x = torch.randn(1, 1, 3, 3)
    >>> torch.allclose(fuse_conv_bn_eval(conv, bn)(x), bn(conv(x)), atol=1e-6)
    True
"""
from __future__ import annotations

import copy
from typing import Any

from gradcheck import ref as torch


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b,
                         transpose: bool = False) -> tuple:
    if conv_b is None:
        conv_b = torch.zeros_like(bn_rm)
    bn_w = torch.ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = torch.zeros_like(bn_rm) if bn_b is None else bn_b
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    shape = [1] * conv_w.dim()
    shape[1 if transpose else 0] = -1
    weight = conv_w * scale.reshape(shape)
    bias = (conv_b - bn_rm) * scale + bn_b
    return torch.nn.Parameter(weight, conv_w.requires_grad), \
        torch.nn.Parameter(bias, conv_b.requires_grad)


def fuse_conv_bn_eval(conv: Any, bn: Any, transpose: bool = False) -> Any:
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean,
                                                    bn.running_var, bn.eps, bn.weight, bn.bias,
                                                    transpose)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b) -> tuple:
    return fuse_conv_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b)


def fuse_linear_bn_eval(linear: Any, bn: Any) -> Any:
    return fuse_conv_bn_eval(linear, bn)
