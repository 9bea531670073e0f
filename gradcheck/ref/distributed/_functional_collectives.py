"""``torch.distributed._functional_collectives``: collectives that return a new tensor
instead of writing into their input. Over one rank each result holds the input's values (the
sum, gather or exchange among one rank), computed by differentiable ops so gradients flow
back as in torch. ``all_reduce``, ``reduce_scatter_tensor`` and ``all_to_all_single`` return
an ``AsyncCollectiveTensor``, whose operations give plain tensors, as torch's do.
"""
from __future__ import annotations

import warnings
from typing import Any

from gradcheck.ref.distributed import _require_group, group
from gradcheck.ref.tensors import Tensor


class AsyncCollectiveTensor(Tensor):
    """A collective's result that may still be in flight (here it never is)."""

    __slots__ = ()

    def trigger_wait(self) -> Tensor:
        return wait_tensor(self)

    def wait(self) -> Tensor:
        return wait_tensor(self)


def _pending(t: Tensor) -> AsyncCollectiveTensor:
    t.__class__ = AsyncCollectiveTensor
    return t


def _one_rank(t: Tensor) -> Tensor:
    _require_group()
    return t.clone()


def _resolve_group_name(group: Any, tag: str = "") -> str:
    """The registered name of a group: "0" for the default group, the only one here."""
    _require_group()
    return group if isinstance(group, str) else "0"


def wait_tensor(tensor: Tensor) -> Tensor:
    """The finished result as a plain tensor (a view, so gradients pass through)."""
    return tensor.view_as(tensor) if isinstance(tensor, AsyncCollectiveTensor) else tensor


def all_reduce(self: Tensor, reduceOp: str, group: Any, tag: str = "") -> Tensor:
    return _pending(_one_rank(self))


def all_gather_tensor(self: Tensor, gather_dim: int, group: Any, tag: str = "") -> Tensor:
    warnings.warn("`torch.distributed._functional_collectives.all_gather_tensor` is deprecated. "
                  "Please use `torch.distributed._functional_collectives.all_gather_single` "
                  "instead.", FutureWarning, stacklevel=2)
    return all_gather_single(self, gather_dim, group, tag)


def all_gather_single(self: Tensor, gather_dim: int, group: Any, tag: str = "") -> Tensor:
    from gradcheck.ref import ops

    _require_group()
    return ops.cat([self], dim=gather_dim)


def reduce_scatter_tensor(self: Tensor, reduceOp: str, scatter_dim: int, group: Any,
                          tag: str = "") -> Tensor:
    return _pending(_one_rank(self))


def all_to_all_single(self: Tensor, output_split_sizes: Any, input_split_sizes: Any,
                      group: Any, tag: str = "") -> Tensor:
    return _pending(_one_rank(self))


def permute_tensor(self: Tensor, src_dst: list, group: Any, tag: str = "") -> Tensor:
    """Rank m sends its tensor to rank ``src_dst[m]``; the only rank sends to itself."""
    return all_to_all_single(self, [self.numel()], [self.numel()], group, tag)


def _one_rank_group(group_size: int) -> None:
    _require_group()
    if group_size != 1:
        raise RuntimeError(f"the group has 1 rank, but the collective was given group_size="
                           f"{group_size}")


def _gather_kernel(input: Tensor, group_size: int, group_name: str) -> Tensor:  # noqa: A002
    _one_rank_group(group_size)
    return input.clone()


def _scatter_kernel(input: Tensor, reduce_op: str, group_size: int,  # noqa: A002
                    group_name: str) -> Tensor:
    _one_rank_group(group_size)
    return input.clone()


def _all_reduce_kernel(input: Tensor, reduce_op: str, group_name: str) -> Tensor:  # noqa: A002
    return _one_rank(input)


def _register_ops() -> None:
    """``torch.ops._c10d_functional``: the collectives as operators (what compiled code and
    DTensor call), with one rank each a copy of its input."""
    from gradcheck.ref import library

    kernels = {"all_gather_into_tensor": _gather_kernel,
               "reduce_scatter_tensor": _scatter_kernel, "all_reduce": _all_reduce_kernel,
               "wait_tensor": lambda tensor: tensor}
    for name, kernel in kernels.items():
        qualname = f"_c10d_functional::{name}"
        library.define(qualname, "")
        library.impl(qualname, "CompositeExplicitAutograd", kernel)


def _install_world() -> None:
    globals()["WORLD"] = group.WORLD


_install_world()


_register_ops()
