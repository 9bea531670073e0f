"""Top-level names of torch that are another engine function under torch's calling
convention: ``torch.addcmul``, ``torch.clamp_``, ``torch.relu_``, ``torch.dropout``,
``torch.kl_div`` (aten's integer reduction), ``torch.scalar_tensor``, ``linalg.diagonal``,
and the mode queries; plus the Tensor methods ``cumsum_``, ``resize_as``, ``logical_xor``,
``corrcoef``, ``hardshrink`` and ``xpu``.

>>> import gradcheck.ref as torch
>>> torch.scalar_tensor(3)
tensor(3.)
>>> torch.kl_div(torch.zeros(2), torch.tensor([0.5, 0.5]), 2)
tensor(-0.6931)
"""
from __future__ import annotations

import warnings


from gradcheck.ref import creation, ops
from gradcheck.ref import dtypes as dt
from gradcheck.ref.tensors import Tensor

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:  # noqa: A002
    return input.addcmul(tensor1, tensor2, value=value)


def clamp_(input: Tensor, min=None, max=None) -> Tensor:  # noqa: A002
    return input.clamp_(min, max)


def relu_(input: Tensor) -> Tensor:  # noqa: A002
    return input.relu_()


def dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """aten's dropout: every argument positional, ``train`` decides."""
    from gradcheck.ref.nn import functional

    return functional.dropout(input, p, training=train)


def kl_div(input: Tensor, target: Tensor, reduction: int = 1, *,  # noqa: A002
           log_target: bool = False) -> Tensor:
    """aten's kl_div: ``reduction`` is 0 (none), 1 (mean over every element) or 2 (sum)."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_target:
        pointwise = target.exp() * (target - input)
    else:
        pointwise = _xlogx(target) - target * input
    name = _REDUCTIONS[reduction]
    return pointwise if name == "none" else getattr(pointwise, name)()


def _xlogx(t: Tensor) -> Tensor:
    """t * log(t), 0 where t is 0 (aten's xlogy(t, t))."""
    return ops.where(t == 0, creation.zeros_like(t), t * ops.log(t))


def scalar_tensor(s, *, dtype=None, device=None, layout=None, pin_memory=None,
                  requires_grad: bool = False) -> Tensor:
    """A 0-d tensor of the default float dtype (or ``dtype``) holding ``s``."""
    return creation.tensor(float(s), dtype=dtype or dt.get_default_dtype(),
                           requires_grad=requires_grad)


def is_inference_mode_enabled() -> bool:
    from gradcheck.ref import grad_mode

    return grad_mode._inference[0]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    from gradcheck.ref import compat

    return compat._deterministic["warn_only"]


def linalg_diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """``torch.diagonal`` with the batch dimensions first (the last two dims by default)."""
    return ops.diagonal(A, offset, dim1, dim2)


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:  # noqa: A002
    """A 1-d convolution over (time, batch, channel) input with (width, in, out) weights."""
    from gradcheck.ref.nn import functional

    out = functional.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias,
                            padding=pad)
    return out.permute(2, 0, 1)


def sym_int(a) -> int:
    """A number as an int (floats truncated toward zero), as torch's SymInt helper does."""
    return a if isinstance(a, int) else int(a)


_REMOVED = {
    "eig": "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather "
           "than real tensors mimicking complex tensors.\n\nL, _ = torch.eig(A) should be "
           "replaced with:\nL_complex = torch.linalg.eigvals(A)\n\nand\n\nL, V = "
           "torch.eig(A, eigenvectors=True) should be replaced with:\nL_complex, V_complex = "
           "torch.linalg.eig(A)",
    "symeig": "The default behavior has changed from using the upper triangular portion of "
              "the matrix by default to using the lower triangular portion.\n\nL, _ = "
              "torch.symeig(A, upper=upper) should be replaced with:\nL = "
              "torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\nL, V = "
              "torch.symeig(A, eigenvectors=True) should be replaced with:\nL, V = "
              "torch.linalg.eigh(A, UPLO='U' if upper else 'L')",
}


def _removed(name: str):
    def removed(*args, **kwargs):
        raise RuntimeError("This function was deprecated since version 1.9 and is now "
                           "removed. " + _REMOVED[name])

    removed.__name__ = name
    return removed


def _cumsum_(self: Tensor, dim: int, *, dtype=None) -> Tensor:
    from gradcheck.ref.inplace import inplace

    return inplace(self, lambda t: ops.cumsum(t if dtype is None else t.to(dtype), dim))


def _resize_as(self: Tensor, other: Tensor, memory_format=None) -> Tensor:
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return self.clone().resize_(other.shape)


def _xpu(self: Tensor, *args, **kwargs) -> Tensor:
    # what a build without XPU support answers (torch raises an AssertionError too)
    raise AssertionError("Torch not compiled with XPU enabled")


def _hardshrink(self: Tensor, lambd: float = 0.5) -> Tensor:
    from gradcheck.ref.pointwise_tail import hardshrink

    return hardshrink(self, lambd)


def _corrcoef(self: Tensor) -> Tensor:
    from gradcheck.ref import statistics

    return statistics.corrcoef(self)


FUNCTIONS = {"addcmul": addcmul, "clamp_": clamp_, "relu_": relu_, "dropout": dropout,
             "kl_div": kl_div, "scalar_tensor": scalar_tensor,
             "is_inference_mode_enabled": is_inference_mode_enabled,
             "is_deterministic_algorithms_warn_only_enabled":
                 is_deterministic_algorithms_warn_only_enabled,
             "conv_tbc": conv_tbc, "sym_int": sym_int, "eig": _removed("eig"),
             "symeig": _removed("symeig")}
METHODS = {"cumsum_": _cumsum_, "resize_as": _resize_as, "logical_xor": ops.logical_xor,
           "corrcoef": _corrcoef, "hardshrink": _hardshrink, "xpu": _xpu}


def attach() -> None:
    for name, fn in METHODS.items():
        setattr(Tensor, name, fn)


