"""Loss modules: thin wrappers that store `reduction` (and weights) for `nn.functional`."""
from __future__ import annotations

from typing import Any

from gradcheck.ref.nn import functional as F
from gradcheck.ref.nn.module import Module


class _Loss(Module):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        F._check_reduction(reduction)
        self.reduction = reduction


class MSELoss(_Loss):
    """Mean squared error.

    Example:
        >>> import gradcheck.ref as torch
        >>> MSELoss()(torch.tensor([2.0]), torch.tensor([0.0])).item()
        4.0
    """

    def forward(self, input: Any, target: Any) -> Any:
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error.

    Example:
        >>> import gradcheck.ref as torch
        >>> L1Loss()(torch.tensor([2.0]), torch.tensor([0.0])).item()
        2.0
    """

    def forward(self, input: Any, target: Any) -> Any:
        return F.l1_loss(input, target, reduction=self.reduction)


class NLLLoss(_Loss):
    """Negative log-likelihood on log-probabilities with class-index targets.

    Example:
        >>> import gradcheck.ref as torch
        >>> NLLLoss()(torch.tensor([[-0.5, -1.0]]), torch.tensor([0])).item()
        0.5
    """

    def __init__(self, weight: Any = None, ignore_index: int = -100,
                 reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.weight = weight
        self.ignore_index = ignore_index

    def forward(self, input: Any, target: Any) -> Any:
        return F.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class CrossEntropyLoss(NLLLoss):
    """log_softmax + NLLLoss on raw logits with class-index targets.

    Example:
        >>> import gradcheck.ref as torch
        >>> round(CrossEntropyLoss()(torch.zeros(2, 4), torch.tensor([0, 3])).item(), 4)
        1.3863
    """

    def forward(self, input: Any, target: Any) -> Any:
        return F.cross_entropy(input, target, self.weight, self.ignore_index, self.reduction)


class BCELoss(_Loss):
    """Binary cross-entropy on probabilities in [0, 1].

    Example:
        >>> import gradcheck.ref as torch
        >>> round(BCELoss()(torch.tensor([0.5]), torch.tensor([0.0])).item(), 4)
        0.6931
    """

    def __init__(self, weight: Any = None, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.weight = weight

    def forward(self, input: Any, target: Any) -> Any:
        return F.binary_cross_entropy(input, target, self.weight, self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Sigmoid + binary cross-entropy in one numerically stable expression.

    Example:
        >>> import gradcheck.ref as torch
        >>> round(BCEWithLogitsLoss()(torch.tensor([0.0]), torch.tensor([0.0])).item(), 4)
        0.6931
    """

    def __init__(self, weight: Any = None, reduction: str = "mean", pos_weight: Any = None) -> None:
        super().__init__(reduction)
        self.weight = weight
        self.pos_weight = pos_weight

    def forward(self, input: Any, target: Any) -> Any:
        return F.binary_cross_entropy_with_logits(input, target, self.weight, self.reduction,
                                                  self.pos_weight)
