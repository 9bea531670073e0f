"""``torch.distributed.nn``: differentiable collectives. With one rank, gathering gives the
tensor itself (and its gradient flows straight through), and reducing leaves it unchanged.

>>> import gradcheck.ref as torch
>>> torch.distributed.nn.all_gather(torch.ones(2))[0]
tensor([1., 1.])
"""
from __future__ import annotations

import types
from typing import Any


def all_gather(tensor: Any, group: Any = None) -> tuple:
    return (tensor,)


def all_reduce(tensor: Any, op: Any = None, group: Any = None) -> Any:
    return tensor


functional = types.SimpleNamespace(all_gather=all_gather, all_reduce=all_reduce)


class RemoteModule:
    """``RemoteModule("worker0/cpu", cls, args, kwargs)``: a module made and kept on a worker
    (here the only one), called through rpc, so inputs and outputs travel as copies."""

    def __init__(self, remote_device: str, module_cls: type, args: tuple | None = None,
                 kwargs: dict | None = None) -> None:
        from gradcheck.ref.distributed import rpc

        worker, _, device = remote_device.partition("/")
        self.on, self.device = worker, device or "cpu"
        self.module_rref = rpc.remote(worker, module_cls, tuple(args or ()), dict(kwargs or {}))

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        from gradcheck.ref.distributed import rpc

        return rpc.rpc_sync(self.on, self.module_rref.local_value(), args, kwargs)

    __call__ = forward

    def forward_async(self, *args: Any, **kwargs: Any) -> Any:
        from gradcheck.ref.distributed import rpc

        return rpc.rpc_async(self.on, self.module_rref.local_value(), args, kwargs)

    def get_module_rref(self) -> Any:
        return self.module_rref

    def remote_parameters(self, recurse: bool = True) -> list:
        from gradcheck.ref.distributed import rpc

        return [rpc.RRef(p) for p in self.module_rref.local_value().parameters(recurse)]


_NOT_SUPPORTED = (
    "register_buffer", "register_parameter", "add_module", "apply", "cuda", "ipu", "xpu", "cpu",
    "type", "float", "double", "half", "bfloat16", "to", "register_backward_hook",
    "register_forward_pre_hook", "register_forward_hook", "state_dict", "load_state_dict",
    "named_parameters", "buffers", "named_buffers", "children", "named_children", "modules",
    "named_modules", "requires_grad_", "zero_grad", "share_memory", "extra_repr")


def _not_supported(name: str) -> Any:
    def refuse(self: RemoteModule, *args: Any, **kwargs: Any) -> Any:
        raise ValueError(f"Method ``{name}`` not supported for RemoteModule")

    refuse.__name__ = name
    return refuse


for _name in _NOT_SUPPORTED:  # torch's RemoteModule refuses the Module methods it overrides
    setattr(RemoteModule, _name, _not_supported(_name))
