"""Loss modules: thin wrappers that store `reduction` (and weights) for `nn.functional`.

The constructors take torch's arguments, including the deprecated ``size_average`` and
``reduce`` (mapped to ``reduction`` with torch's warning).
"""
from __future__ import annotations

from typing import Any

from gradcheck.ref.nn import losses as L
from gradcheck.ref.nn.module import Module


class _Loss(Module):
    def __init__(self, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean") -> None:
        super().__init__()
        reduction = L.legacy_reduction(size_average, reduce, reduction)
        if reduction != "batchmean":
            L._check_reduction(reduction)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight: Any = None, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """Mean squared error.

    Example:
        >>> import gradcheck.ref as torch
        >>> MSELoss()(torch.tensor([2.0]), torch.tensor([0.0])).item()
        4.0
    """

    def forward(self, input: Any, target: Any) -> Any:
        return L.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error.

    Example:
        >>> import gradcheck.ref as torch
        >>> L1Loss()(torch.tensor([2.0]), torch.tensor([0.0])).item()
        2.0
    """

    def forward(self, input: Any, target: Any) -> Any:
        return L.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Quadratic below ``beta``, linear above."""

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
                 beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Any, target: Any) -> Any:
        return L.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Quadratic below ``delta``, linear (slope delta) above."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Any, target: Any) -> Any:
        return L.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    """Pointwise KL divergence of log-probabilities ``input`` from ``target``."""

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
                 log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Any, target: Any) -> Any:
        return L.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood on log-probabilities with class-index targets.

    Example:
        >>> import gradcheck.ref as torch
        >>> NLLLoss()(torch.tensor([[-0.5, -1.0]]), torch.tensor([0])).item()
        0.5
    """

    def __init__(self, weight: Any = None, size_average: Any = None, ignore_index: int = -100,
                 reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Any, target: Any) -> Any:
        return L.nll_loss(input, target, self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """log_softmax + NLL on raw logits, with class-index or class-probability targets.

    Example:
        >>> import gradcheck.ref as torch
        >>> round(CrossEntropyLoss()(torch.zeros(2, 4), torch.tensor([0, 3])).item(), 4)
        1.3863
    """

    def __init__(self, weight: Any = None, size_average: Any = None, ignore_index: int = -100,
                 reduce: Any = None, reduction: str = "mean",
                 label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input: Any, target: Any) -> Any:
        return L.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    """Binary cross-entropy on probabilities in [0, 1].

    Example:
        >>> import gradcheck.ref as torch
        >>> round(BCELoss()(torch.tensor([0.5]), torch.tensor([0.0])).item(), 4)
        0.6931
    """

    def forward(self, input: Any, target: Any) -> Any:
        return L.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_WeightedLoss):
    """Sigmoid + binary cross-entropy in one numerically stable expression.

    Example:
        >>> import gradcheck.ref as torch
        >>> round(BCEWithLogitsLoss()(torch.tensor([0.0]), torch.tensor([0.0])).item(), 4)
        0.6931
    """

    def __init__(self, weight: Any = None, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean", pos_weight: Any = None) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Any, target: Any) -> Any:
        return L.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  reduction=self.reduction,
                                                  pos_weight=self.pos_weight)
