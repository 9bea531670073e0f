"""``torch._C``: the few entry points of torch's C extension that training code and libraries
call directly, answered as a CPU build answers them. The JIT fuser switches are flags (each
setter returns the previous value, as torch's do); DataLoader's worker bookkeeping has no
workers to track (the engine's loader runs in the calling process); ``_nn._parse_to`` parses
``Tensor.to``'s arguments. Anything else here is absent, so code that probes it sees an
AttributeError, as with any missing name.

>>> import gradcheck.ref as torch
>>> torch._C._nn._parse_to(torch.float64)
(None, torch.float64, False, None)
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from gradcheck.ref.devices import device  # noqa: F401 - torch._C.device is torch.device

_GLIBCXX_USE_CXX11_ABI = True
_FLAGS = {"profiling_executor": True, "profiling_mode": True, "fuse_on_cpu": False,
          "fuse_on_gpu": False, "texpr_fuser": True, "nvfuser": False}


def _setter(flag: str):
    def set_flag(value: bool) -> bool:
        previous, _FLAGS[flag] = _FLAGS[flag], bool(value)
        return previous

    return set_flag


_jit_set_profiling_executor = _setter("profiling_executor")
_jit_set_profiling_mode = _setter("profiling_mode")
_jit_set_texpr_fuser_enabled = _setter("texpr_fuser")


def _jit_set_nvfuser_enabled(value: bool) -> bool:
    """A no-op in torch 2 (nvfuser left TorchScript); returns False."""
    return False


def _jit_override_can_fuse_on_cpu(value: bool) -> None:
    _FLAGS["fuse_on_cpu"] = bool(value)


def _jit_override_can_fuse_on_gpu(value: bool) -> None:
    _FLAGS["fuse_on_gpu"] = bool(value)


def _jit_can_fuse_on_cpu() -> bool:
    return _FLAGS["fuse_on_cpu"]


def _jit_can_fuse_on_gpu() -> bool:
    return _FLAGS["fuse_on_gpu"]


def _jit_texpr_fuser_enabled() -> bool:
    return _FLAGS["texpr_fuser"]


def _is_tracing() -> bool:
    return False


def _get_tracing_state() -> None:
    return None


def _get_privateuse1_backend_name() -> str:
    return "privateuseone"


def _get_accelerator() -> Any:
    return device("cpu")


def _log_api_usage_once(event: str) -> None:
    """Usage logging: nothing is logged."""


def _add_docstr(obj: Any, docstring: str) -> Any:
    obj.__doc__ = docstring
    return obj


# DataLoader's worker bookkeeping: the engine's loader has no worker processes to watch
def _set_worker_signal_handlers(*args: Any) -> None:
    """No worker processes, no handlers to install."""


def _set_worker_pids(key: int, pids: tuple) -> None:
    """No worker processes to record."""


def _remove_worker_pids(key: int) -> None:
    """No worker processes to forget."""


def _error_if_any_worker_fails() -> None:
    """No worker can have failed."""


def _parse_to(*args: Any, **kwargs: Any) -> tuple:
    """``Tensor.to``'s arguments as (device, dtype, non_blocking, memory_format)."""
    from gradcheck.ref.dtypes import dtype as dtype_type
    from gradcheck.ref.tensors import Tensor

    found_device, found_dtype = kwargs.get("device"), kwargs.get("dtype")
    for arg in args:
        if isinstance(arg, Tensor):
            found_device, found_dtype = arg.device, arg.dtype
        elif isinstance(arg, dtype_type):
            found_dtype = arg
        elif isinstance(arg, (str, device)):
            found_device = device(arg) if isinstance(arg, str) else arg
        elif isinstance(arg, bool):
            kwargs.setdefault("non_blocking", arg)
    if isinstance(found_device, str):
        found_device = device(found_device)
    return (found_device, found_dtype, bool(kwargs.get("non_blocking", False)),
            kwargs.get("memory_format"))


# the functionals torch implements as kernels of torch._C._nn (traced code calls them there)
NN_KERNELS = frozenset({"avg_pool2d", "avg_pool3d", "hardtanh_", "elu_", "leaky_relu_",
                        "logsigmoid", "gelu", "softplus", "softshrink", "linear", "one_hot",
                        "scaled_dot_product_attention"})


class _NN(SimpleNamespace):
    """``torch._C._nn``: ``_parse_to`` and the kernels behind some functionals."""

    def __getattr__(self, name: str) -> Any:
        if name in NN_KERNELS:
            from gradcheck.ref.nn import functional

            if hasattr(functional, name):
                return getattr(functional, name)
        raise AttributeError(f"module 'torch._C._nn' has no attribute '{name}'")


_nn = _NN(_parse_to=_parse_to)


def _infer_size(a: Any, b: Any) -> Any:
    """The broadcast shape of two sizes, with torch's error for a mismatch."""
    from gradcheck.ref.size import Size

    ndim = max(len(a), len(b))
    left, right = (1,) * (ndim - len(a)) + tuple(a), (1,) * (ndim - len(b)) + tuple(b)
    out = []
    for dim, (m, n) in enumerate(zip(left, right)):
        if m != n and 1 not in (m, n):
            raise RuntimeError(f"The size of tensor a ({m}) must match the size of tensor b "
                               f"({n}) at non-singleton dimension {dim}")
        out.append(n if m == 1 else m)
    return Size(out)


def _current_graph_task_id() -> int:
    """The id of the backward pass running now (counted from 0), -1 outside one."""
    from gradcheck.ref.graph import current_graph_task_id

    return current_graph_task_id()


def _current_autograd_node() -> Any:
    """The grad_fn whose hooks or rule run now; None outside a backward pass."""
    from gradcheck.ref.graph import current_autograd_node

    return current_autograd_node()


def _disabled_torch_function_impl(func: Any, types: Any, args: Any = (),
                                  kwargs: Any = None) -> Any:
    """Set as a class's ``__torch_function__`` to opt out of the protocol: call ``func``."""
    return func(*args, **(kwargs or {}))


def _flag(name: str):
    def set_flag(value: Any) -> None:
        _FLAGS[name] = value

    set_flag.__name__ = name
    return set_flag


_debug_set_autodiff_subgraph_inlining = _flag("_debug_set_autodiff_subgraph_inlining")
_jit_set_nvfuser_guard_mode = _flag("_jit_set_nvfuser_guard_mode")
_set_math_sdp_allow_fp16_bf16_reduction = _flag("_set_math_sdp_allow_fp16_bf16_reduction")
