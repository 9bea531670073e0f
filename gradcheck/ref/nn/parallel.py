"""``nn.parallel`` / ``nn.DataParallel`` stand-ins: with one numpy device there is nothing to
split, so the wrapper runs its module directly (and exposes it as ``.module``, as torch does).
``DistributedDataParallel`` needs an initialized process group, as in torch; with the one
process the engine runs, averaging gradients over ranks leaves them as they are.

Example:
    >>> import gradcheck.ref as torch
    >>> net = DataParallel(torch.nn.Linear(2, 1))
    >>> net(torch.ones(3, 2)).shape, type(net.module).__name__
    (torch.Size([3, 1]), 'Linear')
"""
from __future__ import annotations

import contextlib
from typing import Any

from gradcheck.ref.nn.module import Module


class DataParallel(Module):
    """Runs ``module`` on the only device; ``device_ids`` and friends are accepted and unused."""

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None,
                 dim: int = 0, **kwargs: Any) -> None:
        super().__init__()
        self.module = module

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)


class DistributedDataParallel(Module):
    """Runs ``module`` as the only rank; ``no_sync()`` is accepted (there is nothing to sync)."""

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None,
                 dim: int = 0, **kwargs: Any) -> None:
        from gradcheck.ref import distributed

        if not distributed.is_initialized():
            raise ValueError(distributed.NOT_INITIALIZED)
        super().__init__()
        self.module = module
        self._comm_hook: tuple | None = None
        self._require_sync, self._reduce_queued = True, False

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Gradients accumulate without being reduced (nor passed to a comm hook)."""
        previous, self._require_sync = self._require_sync, False
        try:
            yield
        finally:
            self._require_sync = previous

    def register_comm_hook(self, state: Any, hook: Any) -> None:
        """Reduce the gradients with ``hook(state, bucket)`` after each backward pass."""
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be "
                               "called once.")
        if getattr(hook, "__name__", "") in ("bf16_compress_hook", "bf16_compress_wrapper_hook"):
            raise TypeError("BF16 all reduce communication hook required CUDA 11+ and NCCL "
                            "2.10+ or XPU and XCCL")
        self._comm_hook = (state, hook)
        for param in self.module.parameters():
            if param.requires_grad:
                param.register_post_accumulate_grad_hook(self._gradient_ready)

    def _gradient_ready(self, param: Any) -> None:
        # NOTE: the bucket is reduced once per backward pass, when it has finished (torch's
        # DDP finalizes the same way, through a final callback of the autograd engine)
        if self._require_sync and not self._reduce_queued:
            from gradcheck.ref.graph import queue_callback

            self._reduce_queued = True
            queue_callback(self._reduce_bucket)

    def _reduce_bucket(self) -> None:
        from gradcheck import ref
        from gradcheck.ref.distributed.comm_hooks import GradBucket

        self._reduce_queued = False
        params = [p for p in reversed(list(self.module.parameters())) if p.grad is not None]
        if not params:
            return
        buffer = ref.cat([p.grad.detach().reshape(-1) for p in params])
        state, hook = self._comm_hook
        reduced = hook(state, GradBucket(0, buffer, params, is_last=True)).wait()
        offset = 0
        with ref.no_grad():
            for p in params:
                p.grad.copy_(reduced[offset:offset + p.numel()].reshape(p.shape))
                offset += p.numel()

    @staticmethod
    def _set_params_and_buffers_to_ignore_for_model(module: Module, params_and_buffers_to_ignore:
                                                    Any) -> None:
        """Mark parameters and buffers (by qualified name) that DDP must not synchronize."""
        module._ddp_params_and_buffers_to_ignore = params_and_buffers_to_ignore
        for name, tensor in [*module.named_parameters(), *module.named_buffers()]:
            if name in params_and_buffers_to_ignore:
                tensor._ddp_ignored = True


# torch.nn.parallel's functional forms, for the one device there is
def _find_tensors(obj: Any) -> Any:
    """Every tensor inside ``obj`` (lists, tuples, dict values, dataclass fields), in order."""
    import dataclasses
    import itertools

    from gradcheck.ref.tensors import Tensor

    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return itertools.chain.from_iterable(map(_find_tensors, obj))
    if isinstance(obj, dict):
        return itertools.chain.from_iterable(map(_find_tensors, obj.values()))
    if dataclasses.is_dataclass(obj):
        return itertools.chain.from_iterable(
            _find_tensors(getattr(obj, f.name)) for f in dataclasses.fields(obj))
    return []


def data_parallel(module: Module, inputs: Any, device_ids: Any = None, output_device: Any = None,
                  dim: int = 0, module_kwargs: Any = None) -> Any:
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    return module(*inputs, **(module_kwargs or {}))


def scatter(inputs: Any, target_gpus: Any, dim: int = 0) -> list:
    return [inputs]


def gather(outputs: Any, target_device: Any, dim: int = 0) -> Any:
    return outputs[0] if isinstance(outputs, (list, tuple)) and len(outputs) == 1 else outputs


def replicate(network: Module, devices: Any, detach: bool = False) -> list:
    return [network]


def parallel_apply(modules: list, inputs: list, kwargs_tup: Any = None,
                   devices: Any = None) -> list:
    kwargs_tup = kwargs_tup or [{}] * len(modules)
    return [m(*(i if isinstance(i, tuple) else (i,)), **k)
            for m, i, k in zip(modules, inputs, kwargs_tup)]


def _install_layout() -> None:
    """torch.nn.parallel.distributed / data_parallel / scatter_gather / _functions."""
    import sys
    import types

    from gradcheck.ref.standins import module_fallback

    this = sys.modules[__name__]
    for name, members in {
        "distributed": {"DistributedDataParallel": DistributedDataParallel,
                        "_find_tensors": _find_tensors},
        "data_parallel": {"DataParallel": DataParallel, "data_parallel": data_parallel},
        "scatter_gather": {"scatter": scatter, "gather": gather},
        "replicate": {"replicate": replicate},
        "parallel_apply": {"parallel_apply": parallel_apply},
    }.items():
        module = types.ModuleType(f"{__name__}.{name}")
        module.__dict__.update(members)
        sys.modules[module.__name__] = module
    functions = types.ModuleType(f"{__name__}._functions")
    functions.__getattr__ = module_fallback(
        "torch.nn.parallel._functions", "multi-device broadcast/scatter needs several devices")
    sys.modules[functions.__name__] = functions
    this._functions = functions
    this.distributed = sys.modules[f"{__name__}.distributed"]


_install_layout()
