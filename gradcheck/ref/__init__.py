"""``import gradcheck.ref as torch``: a small numpy engine with PyTorch 2.x autograd semantics.

>>> import gradcheck.ref as torch
>>> x = torch.tensor(2.0, requires_grad=True)
>>> (3 * x ** 2).backward(); x.grad
tensor(12.)
"""
from gradcheck.ref import methods as _methods
from gradcheck.ref.dtypes import (  # noqa: F401
    bfloat16,
    bool_ as bool,  # noqa: A001
    complex64,
    complex128,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    qint8,
    qint32,
    quint4x2,
    quint2x4,
    uint1,
    uint2,
    uint3,
    uint4,
    uint5,
    uint6,
    uint7,
    quint8,
    dtype,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    result_type,
    set_default_dtype,
    uint8,
)
from gradcheck.ref.tensors import Tensor  # noqa: F401
from gradcheck.ref.size import Size  # noqa: F401
from gradcheck.ref.devices import device  # noqa: F401
from gradcheck.ref.grad_mode import (  # noqa: F401
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from gradcheck.ref.creation import (  # noqa: F401
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    tensor,
    zeros,
    zeros_like,
)
from gradcheck.ref.random import (  # noqa: F401
    Generator,
    bernoulli,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    multinomial,
    normal,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    seed,
    set_rng_state,
)
from gradcheck.ref.ops import (  # noqa: F401
    abs,
    absolute,
    add,
    all,
    allclose,
    amax,
    amin,
    any,
    argmax,
    argmin,
    argsort,
    bmm,
    broadcast_shapes,
    broadcast_to,
    cat,
    ceil,
    chunk,
    clamp,
    clip,
    clone,
    concat,
    concatenate,
    cos,
    cumsum,
    asin,
    acos,
    atan,
    exp2,
    sinh,
    cosh,
    asinh,
    acosh,
    atanh,
    arcsin,
    arccos,
    arctan,
    arcsinh,
    arccosh,
    arctanh,
    bitwise_not,
    diag,
    diagonal,
    masked_select,
    logcumsumexp,
    std_mean,
    var_mean,
    remainder,
    fmod,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    bitwise_left_shift,
    bitwise_right_shift,
    cummax,
    cummin,
    cumprod,
    prod,
    erf,
    flip,
    fliplr,
    flipud,
    log2,
    meshgrid,
    moveaxis,
    movedim,
    repeat_interleave,
    roll,
    scatter,
    scatter_reduce,
    div,
    divide,
    dot,
    einsum,
    eq,
    equal,
    exp,
    expand,
    expm1,
    flatten,
    floor,
    gather,
    ge,
    greater,
    greater_equal,
    gt,
    index_select,
    is_floating_point,
    is_tensor,
    isclose,
    isfinite,
    isinf,
    isnan,
    le,
    less,
    less_equal,
    log,
    log1p,
    log_softmax,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    logsumexp,
    lt,
    masked_fill,
    matmul,
    max,
    maximum,
    mean,
    min,
    minimum,
    mm,
    mul,
    multiply,
    narrow,
    ne,
    neg,
    nonzero,
    negative,
    norm,
    not_equal,
    numel,
    outer,
    permute,
    pow,
    reciprocal,
    relu,
    repeat,
    reshape,
    round,
    rsqrt,
    scatter_add,
    select,
    sigmoid,
    sign,
    sin,
    softmax,
    sort,
    split,
    sqrt,
    square,
    squeeze,
    stack,
    std,
    sub,
    subtract,
    sum,
    swapaxes,
    t,
    tan,
    tanh,
    topk,
    transpose,
    tril,
    triu,
    true_divide,
    trunc,
    unbind,
    unflatten,
    unsqueeze,
    var,
    where,
)
from gradcheck.ref.indexed import index_add, index_copy, index_fill  # noqa: F401, E402
from gradcheck.ref import autograd, cuda  # noqa: F401, E402
from gradcheck.ref.serialization import load, save  # noqa: F401, E402
from gradcheck.ref import accelerator, amp, backends, distributed  # noqa: F401, E402
from gradcheck.ref.amp import (  # noqa: F401, E402
    autocast,
    get_autocast_cpu_dtype,
    get_autocast_dtype,
    get_autocast_gpu_dtype,
    is_autocast_cache_enabled,
    is_autocast_enabled,
)
from gradcheck.ref.legacy import (  # noqa: F401, E402
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
)
from gradcheck.ref.compat import (  # noqa: F401, E402
    _assert,
    are_deterministic_algorithms_enabled,
    e,
    finfo,
    get_float32_matmul_precision,
    get_num_threads,
    iinfo,
    inf,
    is_complex,
    is_nonzero,
    is_storage,
    nan,
    newaxis,
    pi,
    set_default_device,
    set_default_tensor_type,
    set_float32_matmul_precision,
    set_num_threads,
    set_printoptions,
    typename,
    use_deterministic_algorithms,
)
from gradcheck.ref import hub, version  # noqa: F401, E402
from gradcheck.ref.storage import TypedStorage, UntypedStorage  # noqa: F401, E402
from gradcheck.ref.legacy_storage import (  # noqa: F401, E402
    BoolStorage,
    ByteStorage,
    CharStorage,
    DoubleStorage,
    FloatStorage,
    HalfStorage,
    IntStorage,
    LongStorage,
    ShortStorage,
)

_methods.attach()

long = int64
int = int32  # noqa: A001
float = float32  # noqa: A001
double = float64
half = float16
short = int16
cfloat, cdouble = complex64, complex128
strided = "strided"
# memory formats are plain strings here; only contiguous and preserve change behaviour
contiguous_format = "contiguous_format"
preserve_format = "preserve_format"
channels_last = "channels_last"
from gradcheck.ref import torch_version  # noqa: E402

__version__ = torch_version.TorchVersion("2.13.0+gradcheck.ref")


def get_default_device():
    """The device new tensors go to (always cpu here)."""
    return device("cpu")


def compile(model=None, **kwargs):  # noqa: A001
    """No compiler here: a module comes back wrapped as torch wraps it (``OptimizedModule``,
    running the module eagerly), a function unchanged."""
    if model is None:
        return lambda fn: compile(fn, **kwargs)
    from gradcheck.ref.nn.module import Module
    from gradcheck.ref.optimized_module import OptimizedModule

    return OptimizedModule(model) if isinstance(model, Module) else model


from gradcheck.ref import nn, optim, utils  # noqa: F401, E402
from gradcheck.ref import _dynamo, compiler, fx, jit, library, multiprocessing  # noqa: F401, E402
from gradcheck.ref.differential import compare_with_torch  # noqa: F401, E402
from gradcheck.ref import distributions, linalg, storage, tensor_extras  # noqa: F401, E402
from gradcheck.ref import autograd_tools, profiler, testing  # noqa: F401, E402

from gradcheck.ref import _utils, onnx  # noqa: F401, E402
from gradcheck.ref.compat import (  # noqa: F401, E402
    OutOfMemoryError,
    clear_autocast_cache,
    get_device_module,
    is_autocast_cpu_enabled,
)
from gradcheck.ref.special_functions import digamma, lgamma, polygamma  # noqa: F401, E402
from gradcheck.ref.odds import (  # noqa: F401, E402
    _foreach_add_,
    _foreach_div_,
    _foreach_mul_,
    _foreach_norm,
    _foreach_sub_,
    _foreach_zero_,
    asarray,
    detach,
    dist,
    empty_strided,
    fill,
    frombuffer,
    kron,
    logspace,
    randint_like,
    real,
)
from gradcheck.ref.functional_api import func, vmap  # noqa: F401, E402
from gradcheck.ref import serialization  # noqa: F401, E402
from gradcheck.ref.devices_other import mps, xpu  # noqa: F401, E402

autograd_tools.install(autograd)

storage.attach()
tensor_extras.attach()
globals().update(tensor_extras.NAMESPACE)
svd, qr, cross = linalg.torch_svd, linalg.qr, linalg.torch_cross
from gradcheck.ref.lowrank import svd_lowrank  # noqa: E402,F401

from gradcheck.ref import odds, special_functions  # noqa: E402

linalg.solve_triangular = odds.solve_triangular
special = special_functions._special_namespace()
from gradcheck.ref import cpu  # noqa: E402
from gradcheck.ref.streams import Event, Stream  # noqa: E402,F401

from gradcheck.ref.windows import (  # noqa: F401, E402
    bartlett_window,
    blackman_window,
    hamming_window,
    hann_window,
    kaiser_window,
)
from gradcheck.ref import foreach as _foreach  # noqa: E402
from gradcheck.ref.random import binomial  # noqa: F401, E402
from gradcheck.ref import _C  # noqa: F401, E402
from gradcheck.ref.amp import (  # noqa: F401, E402
    _amp_foreach_non_finite_check_and_unscale_,
    _amp_update_scale_,
)
from gradcheck.ref.odds import _check, _check_is_size, frobenius_norm  # noqa: F401, E402

globals().update(_foreach.namespace())

from gradcheck.ref import futures, integration, namespace_tail, pointwise_tail  # noqa: E402,F401
from gradcheck.ref import scatter_views  # noqa: E402

for _tail in (integration, namespace_tail, pointwise_tail, scatter_views):
    globals().update(_tail.FUNCTIONS)
for _tail in (namespace_tail, pointwise_tail, scatter_views):
    _tail.attach()
special.ndtri, special.sinc = pointwise_tail.ndtri, pointwise_tail.sinc
linalg.diagonal = namespace_tail.linalg_diagonal
legacy_contiguous_format = contiguous_format
sparse_coo, sparse_csr, sparse_csc = "sparse_coo", "sparse_csr", "sparse_csc"
nn.functional.hardshrink = pointwise_tail.hardshrink

from gradcheck.ref import cpu_build  # noqa: E402

cpu_build.install()

from gradcheck.ref.nn import parallel_functions as _parallel_functions  # noqa: E402

_parallel_functions.install(nn.parallel, cuda)

from gradcheck.ref.nn import flex_attention as _flex_attention  # noqa: E402

_flex_attention.install(nn.attention)

from gradcheck.ref import _inductor  # noqa: E402

_inductor.install(__import__("sys").modules[__name__])

from gradcheck.ref import private_entry_points  # noqa: E402

private_entry_points.install(__import__("sys").modules[__name__])

from gradcheck.ref import sparse  # noqa: E402

sparse.attach()
sparse_coo_tensor, spmm = sparse.sparse_coo_tensor, sparse.mm

from gradcheck.ref import autograd_graph  # noqa: E402

autograd_graph.install()

from gradcheck.ref import functional  # noqa: E402

functional.install()
torch = __import__("sys").modules[__name__]  # torch.torch is torch itself, as in torch
Storage = FloatStorage  # the default-dtype storage, torch's alias
_builtins = __import__("builtins")  # int, float and bool are dtypes in this namespace
types = __import__("types").SimpleNamespace(  # torch.types
    Number=_builtins.int | _builtins.float | _builtins.bool)

from gradcheck.ref import overrides  # noqa: E402

nn.functional.has_torch_function = overrides.has_torch_function
nn.functional.handle_torch_function = overrides.handle_torch_function

from gradcheck.ref import _jit_internal, _prims_common, _tensor  # noqa: E402,F401


def _softmax_backward_data(grad_output, output, dim: int, input_dtype):  # noqa: ANN001
    """The gradient of softmax's input from its output: y * (g - sum(g * y, dim))."""
    grad = output * (grad_output - (grad_output * output).sum(dim, keepdim=True))
    return grad.to(input_dtype)

from gradcheck.ref import dlpack, numa  # noqa: E402,F401

dlpack.attach()
utils.dlpack = dlpack
from_dlpack = dlpack.from_dlpack


class qscheme:  # noqa: N801 - torch's name
    """A quantization scheme's name (the engine has no quantized tensors)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __reduce__(self):
        return (getattr, (__import__("sys").modules[__name__], self.name))


per_tensor_affine, per_channel_affine, per_tensor_symmetric, per_channel_symmetric, \
    per_channel_affine_float_qparams = (qscheme(name) for name in (
        "per_tensor_affine", "per_channel_affine", "per_tensor_symmetric",
        "per_channel_symmetric", "per_channel_affine_float_qparams"))
version.xpu = None  # a build without XPU support
distributed._rank_not_in_group = distributed.distributed_c10d._rank_not_in_group

from gradcheck.ref import complex_numbers  # noqa: E402

complex_numbers.install(globals())
from gradcheck.ref import fft  # noqa: E402,F401
from gradcheck.ref import short_time  # noqa: E402

stft, istft = short_time.stft, short_time.istft
Tensor.stft, Tensor.istft = short_time.stft, short_time.istft
from gradcheck.ref import script_types  # noqa: E402

globals().update(script_types.NAMES)
from gradcheck.ref import logging_config  # noqa: E402

_logging = __import__("types").SimpleNamespace(set_logs=logging_config.set_logs)
