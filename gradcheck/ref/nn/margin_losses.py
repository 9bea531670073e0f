"""Margin, ranking, embedding and likelihood losses: ``margin_ranking_loss``,
``triplet_margin_loss``, ``cosine_embedding_loss``, ``hinge_embedding_loss``,
``soft_margin_loss``, ``multilabel_soft_margin_loss``, ``multi_margin_loss``,
``poisson_nll_loss``, ``gaussian_nll_loss`` and their modules, following torch's formulas
(and its ``eps`` and clamping) term by term.

Example:
    >>> import gradcheck.ref as torch
    >>> margin_ranking_loss(torch.tensor([1.0]), torch.tensor([2.0]), torch.tensor([1.0]))
    tensor(1.)
"""
from __future__ import annotations

import math
from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.nn.distance import pairwise_distance
from gradcheck.ref.nn.loss import _Loss, _WeightedLoss
from gradcheck.ref.nn.losses import _reduce, legacy_reduction

Tensor = Any


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    reduction = legacy_reduction(size_average, reduce, reduction)
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0), reduction)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average=None, reduce=None,
                        reduction: str = "mean") -> Tensor:
    reduction = legacy_reduction(size_average, reduce, reduction)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = torch.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + d_pos - d_neg).clamp(min=0), reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor,
                          margin: float = 0.0, size_average=None, reduce=None,
                          reduction: str = "mean") -> Tensor:
    """1 - cos for target 1, max(0, cos - margin) for target -1 (torch's EPSILON 1e-12 on
    the squared norms)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    dim = input1.dim() - 1
    dot = (input1 * input2).sum(dim)
    mag1 = (input1 * input1).sum(dim) + 1e-12
    mag2 = (input2 * input2).sum(dim) + 1e-12
    cos = dot / (mag1 * mag2).sqrt()
    zeros = torch.zeros_like(cos)
    positive = torch.where(target == 1, 1 - cos, zeros)
    negative = torch.where(target == -1, (cos - margin).clamp(min=0), zeros)
    return _reduce(positive + negative, reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    reduction = legacy_reduction(size_average, reduce, reduction)
    zeros = torch.zeros_like(input)
    margin_part = torch.where(target == 1, zeros, (margin - input).clamp(min=0))
    input_part = torch.where(target == -1, zeros, input)
    return _reduce(margin_part + input_part, reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                     reduction: str = "mean") -> Tensor:
    reduction = legacy_reduction(size_average, reduce, reduction)
    return _reduce(torch.log1p(torch.exp(-target * input)), reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average=None, reduce=None,
                                reduction: str = "mean") -> Tensor:
    reduction = legacy_reduction(size_average, reduce, reduction)
    F = torch.nn.functional
    loss = -(target * F.logsigmoid(input) + (1 - target) * F.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss.mean(input.dim() - 1), reduction)


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average=None, reduce=None,
                      reduction: str = "mean") -> Tensor:
    reduction = legacy_reduction(size_average, reduce, reduction)
    x = input if input.dim() == 2 else input.unsqueeze(0)
    y = target.reshape(-1, 1)
    chosen = x.gather(1, y)
    terms = (margin - chosen + x).clamp(min=0) ** p
    if weight is not None:
        terms = terms * weight[y]
    mask = torch.ones_like(x).scatter(1, y, 0.0)
    loss = (terms * mask).sum(1) / x.shape[1]
    return _reduce(loss if input.dim() == 2 else loss.squeeze(0), reduction)


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                           reduction: str = "mean") -> Tensor:
    """For each target class j (a row of ``target`` lists them, ended by the first -1) and
    each non-target class i: max(0, 1 - (x[j] - x[i])), summed and divided by the classes."""
    import numpy as np

    reduction = legacy_reduction(size_average, reduce, reduction)
    x = input if input.dim() == 2 else input.unsqueeze(0)
    labels = (target if target.dim() == 2 else target.unsqueeze(0)).detach().numpy()
    ended = np.cumsum(labels < 0, axis=1) > 0
    valid = ~ended  # the targets before each row's first -1
    is_target = np.zeros(x.shape, dtype=bool)
    rows, cols = np.nonzero(valid)
    is_target[rows, labels[rows, cols]] = True
    chosen = x.gather(1, torch.tensor(np.where(valid, labels, 0)))
    hinge = (1 - chosen.unsqueeze(2) + x.unsqueeze(1)).clamp(min=0)
    pairs = torch.tensor(valid[:, :, None] & ~is_target[:, None, :]).to(x.dtype)
    loss = (hinge * pairs).sum((1, 2)) / x.shape[1]
    return _reduce(loss if input.dim() == 2 else loss.squeeze(0), reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True,
                     full: bool = False, size_average=None, eps: float = 1e-8, reduce=None,
                     reduction: str = "mean") -> Tensor:
    reduction = legacy_reduction(size_average, reduce, reduction)
    if log_input:
        loss = torch.exp(input) - target * input
    else:
        loss = input - target * torch.log(input + eps)
    if full:
        stirling = target * torch.log(target) - target + 0.5 * torch.log(2 * math.pi * target)
        loss = loss + torch.where(target > 1, stirling, torch.zeros_like(target))
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """0.5 (log max(var, eps) + (input - target)^2 / max(var, eps)) (+ const when full)."""
    if var.dim() == input.dim() - 1 or (var.dim() == input.dim() and var.shape[-1] == 1
                                        and input.shape[-1] != 1):
        var = var.unsqueeze(-1) if var.dim() == input.dim() - 1 else var
    if (var < 0).any():
        raise ValueError("var has negative entry/entries")
    var = var.clone()
    with torch.no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (torch.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def _module(name: str, fn, params: dict, weighted: bool = False):
    """A loss module storing ``params`` and calling ``fn(*inputs, **params, reduction)``."""

    base = _WeightedLoss if weighted else _Loss

    def __init__(self, *args, size_average=None, reduce=None, reduction="mean", **kwargs):
        values = dict(params)
        values.update(zip(params, args))
        values.update({k: v for k, v in kwargs.items() if k in params})
        if weighted:
            base.__init__(self, values.pop("weight", None), size_average, reduce, reduction)
        else:
            base.__init__(self, size_average, reduce, reduction)
        for key, value in values.items():
            setattr(self, key, value)

    def forward(self, *inputs):
        extra = {k: getattr(self, k) for k in params}
        return fn(*inputs, **extra, reduction=self.reduction)

    return type(name, (base,), {"__init__": __init__, "forward": forward,
                                "__doc__": f"Module form of ``{fn.__name__}``."})


MarginRankingLoss = _module("MarginRankingLoss", margin_ranking_loss, {"margin": 0.0})
TripletMarginLoss = _module("TripletMarginLoss", triplet_margin_loss,
                            {"margin": 1.0, "p": 2.0, "eps": 1e-6, "swap": False})
CosineEmbeddingLoss = _module("CosineEmbeddingLoss", cosine_embedding_loss, {"margin": 0.0})
HingeEmbeddingLoss = _module("HingeEmbeddingLoss", hinge_embedding_loss, {"margin": 1.0})
SoftMarginLoss = _module("SoftMarginLoss", soft_margin_loss, {})
MultiLabelSoftMarginLoss = _module("MultiLabelSoftMarginLoss", multilabel_soft_margin_loss,
                                   {"weight": None}, weighted=True)
MultiMarginLoss = _module("MultiMarginLoss", multi_margin_loss,
                          {"p": 1, "margin": 1.0, "weight": None}, weighted=True)
MultiLabelMarginLoss = _module("MultiLabelMarginLoss", multilabel_margin_loss, {})
PoissonNLLLoss = _module("PoissonNLLLoss", poisson_nll_loss,
                         {"log_input": True, "full": False, "eps": 1e-8})
GaussianNLLLoss = _module("GaussianNLLLoss", gaussian_nll_loss, {"full": False, "eps": 1e-6})
