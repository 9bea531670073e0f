"""``torch._dynamo``: the hooks scripts touch (``config`` with its flags and ``patch``,
``disable``, ``is_compiling``, shape marks, ``OptimizedModule``); there is no bytecode
compiler behind them, so code runs eagerly and the counters of compiled frames stay empty.

>>> import gradcheck.ref as torch
>>> torch._dynamo.config.cache_size_limit = 64
>>> torch._dynamo.config.recompile_limit, torch._dynamo.is_compiling()
(64, False)
>>> with torch._dynamo.config.patch(capture_scalar_outputs=True):
...     torch._dynamo.config.capture_scalar_outputs
True
>>> del torch._dynamo.config.cache_size_limit   # back to torch's default
>>> torch._dynamo.config.recompile_limit
8
"""
from __future__ import annotations

import collections
import sys
import types
from typing import Any

from gradcheck.ref.compile_config import ConfigModule
from gradcheck.ref.compiler import is_compiling, reset  # noqa: F401
from gradcheck.ref.optimized_module import OptimizedModule
from gradcheck.ref.standins import identity_decorator, module_fallback

__getattr__ = module_fallback("torch._dynamo", "there is no compiler; code runs eagerly")

# torch 2.13's flags and defaults (its environment-variable defaults taken as unset)
_FLAGS = {
    "verbose": False, "verify_correctness": False, "minimum_call_count": 1,
    "recompile_limit": 8, "accumulated_recompile_limit": 256,
    "fail_on_recompile_limit_hit": False, "specialize_int": False, "specialize_float": False,
    "dynamic_shapes": True, "assume_static_by_default": True, "automatic_dynamic_shapes": True,
    "automatic_dynamic_shapes_mark_as": "dynamic", "force_parameter_static_shapes": True,
    "force_nn_module_property_static_shapes": True, "allow_ignore_mark_dynamic": False,
    "guard_nn_modules": True, "guard_nn_modules_using_dict_tags": True,
    "rewrite_assert_with_torch_assert": True, "suppress_errors": False,
    "replay_record_enabled": False, "repro_tolerance": 0.001, "same_two_models_use_fp64": True,
    "capture_scalar_outputs": False, "capture_dynamic_output_shape_ops": False,
    "prefer_deferred_runtime_asserts_over_guards": False,
    "force_unspec_int_unbacked_size_like_on_torchrec_kjt": False,
    "allow_unspec_int_on_nn_module": False, "optimize_ddp": True, "skip_torchrec": True,
    "dont_skip_tracing": False, "optimize_ddp_lazy_compile": False, "skip_fsdp_guards": True,
    "skip_fsdp_hooks": True, "skip_nnmodule_hook_guards": True,
    "skip_no_tensor_aliasing_guards_on_parameters": True,
    "skip_tensor_guards_with_matching_dict_tags": True, "raise_on_ctx_manager_usage": True,
    "raise_on_unsafe_aot_autograd": False, "error_on_nested_jit_trace": True,
    "error_on_nested_fx_trace": True, "allow_rnn": False, "error_on_recompile": False,
    "report_guard_failures": True, "trace_numpy": True, "numpy_default_float": "float64",
    "numpy_default_complex": "complex128", "numpy_default_int": "int64",
    "use_numpy_random_stream": False, "enable_cpp_guard_manager": True,
    "inline_inbuilt_nn_modules": True, "capture_autograd_function": True,
    "capture_func_transforms": True, "capture_profiler_record_function": False,
    "log_compilation_metrics": True, "compiled_autograd": False,
    "enable_dynamo_decompositions": True, "graph_break_on_nn_param_ctor": True,
    "skip_fwd_side_effects_in_bwd_under_checkpoint": False, "only_allow_pt2_compliant_ops": False,
    "cudagraph_backend_keep_input_mutation": False, "allow_empty_graphs": False,
    "debug_dir_root": "torch_compile_debug", "cache_size_limit_warning": True,
}
config = ConfigModule("torch._dynamo.config", _FLAGS,
                      {"cache_size_limit": "recompile_limit",
                       "accumulated_cache_size_limit": "accumulated_recompile_limit"})
disable = allow_in_graph = identity_decorator


def optimize(*args: Any, **kwargs: Any):
    """``@torch._dynamo.optimize(backend)``: the function, unchanged."""
    return lambda fn: fn


def mark_dynamic(tensor: Any, index: Any, **kwargs: Any) -> None:
    """Shape hints for the compiler; eager code computes the same without them."""


def mark_static(tensor: Any, index: Any = None) -> None:
    """Shape hints for the compiler; eager code computes the same without them."""


def mark_unbacked(tensor: Any, index: Any, **kwargs: Any) -> None:
    """Shape hints for the compiler; eager code computes the same without them."""


def reduce_to_scalar_loss(out: Any) -> Any:
    """``torch._dynamo.testing.reduce_to_scalar_loss``: the mean of a tensor, the mean of
    the losses of a list, tuple or dict, as torch's test helper reduces a model's output."""
    from gradcheck import ref

    if isinstance(out, ref.Tensor):
        return out.sum() / out.numel()
    if isinstance(out, (list, tuple)):
        return sum(reduce_to_scalar_loss(x) for x in out) / len(out)
    if isinstance(out, dict):
        return sum(reduce_to_scalar_loss(v) for v in out.values()) / len(out)
    if type(out).__name__ in ("MaskedLMOutput", "Seq2SeqLMOutput",
                              "CausalLMOutputWithCrossAttentions"):
        return reduce_to_scalar_loss(out.logits)
    if type(out).__name__ == "SquashedNormal":
        return out.mean.sum()
    raise NotImplementedError("Don't know how to reduce", type(out))


def is_dynamo_supported() -> bool:
    """torch's answer for this Python (3.15 and free-threaded builds before 3.13.3 are not
    supported); the engine's ``torch.compile`` runs eagerly on any of them."""
    import sysconfig

    if sys.version_info >= (3, 15):
        return False
    return not (sysconfig.get_config_var("Py_GIL_DISABLED") == 1
                and sys.version_info < (3, 13, 3))


_COMPILER_FNS: dict = {}


def register_backend(compiler_fn: Any = None, name: str | None = None, tags: Any = ()) -> Any:
    """Name a compiler backend for ``torch.compile(backend=name)`` (a decorator, as in torch);
    the engine runs compiled modules eagerly, so the backend is recorded, never called."""
    if compiler_fn is None:
        return lambda fn: register_backend(fn, name=name, tags=tags)
    if not callable(compiler_fn):
        raise AssertionError(f"compiler_fn must be callable, got {type(compiler_fn)}")
    name = name or compiler_fn.__name__
    if name in _COMPILER_FNS:
        raise AssertionError(f"duplicate name: {name}")
    _COMPILER_FNS[name] = compiler_fn
    compiler_fn._tags = tuple(tags)
    return compiler_fn


def list_backends(exclude_tags: Any = ("debug", "experimental")) -> list:
    """The backends registered here (torch's own compilers are not among them)."""
    excluded = set(exclude_tags or ())
    return sorted(name for name, fn in _COMPILER_FNS.items() if not excluded & set(fn._tags))


class RecompileError(RuntimeError):
    """Raised by torch when a frame recompiles past its limit; never raised here."""


class Unsupported(RuntimeError):
    """Raised by torch when dynamo cannot trace code; never raised here."""


def _submodules() -> None:
    """``eval_frame``, ``decorators``, ``utils``, ``exc`` and ``testing`` as importable modules
    (the counters of compiled frames and guard failures stay empty: nothing compiles)."""
    this = sys.modules[__name__]
    contents = {
        "eval_frame": {"OptimizedModule": OptimizedModule,
                       "is_dynamo_supported": is_dynamo_supported},
        "backends": {},
        "backends.registry": {"register_backend": register_backend,
                              "list_backends": list_backends},
        "decorators": {"mark_dynamic": mark_dynamic, "mark_static": mark_static,
                       "mark_unbacked": mark_unbacked, "disable": disable,
                       "allow_in_graph": allow_in_graph},
        "utils": {"counters": collections.defaultdict(collections.Counter),
                  "guard_failures": collections.defaultdict(list)},
        "exc": {"RecompileError": RecompileError, "Unsupported": Unsupported},
        "testing": {"reduce_to_scalar_loss": reduce_to_scalar_loss},
    }
    for name, members in contents.items():
        module = types.ModuleType(f"{__name__}.{name}")
        module.__dict__.update(members)
        sys.modules[module.__name__] = module
        parent, _, leaf = name.rpartition(".")
        setattr(getattr(this, parent) if parent else this, leaf, module)
    sys.modules[f"{__name__}.config"] = config


_submodules()
