"""The Tensor: an array plus the autograd bookkeeping (grad, grad_fn, version counter, hooks).

Arithmetic, reductions and shape methods are attached by ``gradcheck.ref.ops``; this module
keeps the state, the autograd API and the in-place machinery.
"""
from __future__ import annotations

import warnings
import weakref

import numpy as np

from gradcheck.ref import devices as dev
from gradcheck.ref import dtypes as dt
from gradcheck.ref import grad_mode
from gradcheck.ref.size import Size

NON_LEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad field "
    "to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
    "access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See "
    "github.com/pytorch/pytorch/pull/30531 for more information."
)
LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_INPLACE = (
    "a view of a leaf Variable that requires grad is being used in an in-place operation."
)
FLOAT_ONLY = "only Tensors of floating point dtype can require gradients"
INFERENCE_INPLACE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
    "clone to get a normal tensor before doing inplace update.See "
    "https://github.com/pytorch/rfcs/pull/17 for more details."
)
INFERENCE_REQUIRES_GRAD = ("Setting requires_grad=True on inference tensor outside InferenceMode "
                           "is not allowed.")
INFERENCE_SAVED = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a "
    "clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead of "
    "`torch.inference_mode()`."
)


class Tensor:
    """An n-dimensional array with PyTorch's autograd semantics.

    >>> from gradcheck.ref import tensor
    >>> x = tensor([1.0, 2.0], requires_grad=True)
    >>> (x * x).sum().backward(); x.grad
    tensor([2., 4.])
    """

    # _view: [parent, op, attrs, version at which grad_fn was last derived from parent] when
    # this tensor is a view of parent's storage, else None. __dict__ is kept because torch
    # tensors accept any attribute (``pe.require_grad = False`` is a silent no-op there too).
    __slots__ = ("_data", "_rg", "_grad", "grad_fn", "_vc", "_retains_grad", "_hooks",
                 "_post_hooks", "_acc", "_view", "_inf", "__weakref__", "__dict__")

    # `Tensor(...)` is torch's legacy constructor: sizes give an uninitialised float tensor,
    # anything else is data converted to the default float dtype.
    def __new__(cls, *args, **kwargs):
        from gradcheck.ref import creation

        if args and all(isinstance(a, int) for a in args):
            base = creation.empty(*args, **kwargs)
        elif len(args) == 1 and isinstance(args[0], Size):
            base = creation.empty(*args[0], **kwargs)
        else:
            base = creation.tensor(args[0] if args else [], dtype=dt.get_default_dtype(), **kwargs)
        if cls is Tensor:
            return base
        return Tensor._make_subclass(cls, base, False)

    @staticmethod
    def _make_subclass(cls, data: "Tensor", require_grad: bool = False):
        """A ``cls`` instance sharing ``data``'s storage (how nn.Parameter is built)."""
        t = _make(data._data, vc=data._vc, cls=cls)
        if require_grad:
            t.requires_grad = True
        return t

    # ----- basic attributes -------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        """The shape (a Size), or one dimension's length."""
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_dim(dim, self._data.ndim)]

    def dim(self) -> int:
        return self._data.ndim

    ndim = property(dim)

    def ndimension(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    nelement = numel

    @property
    def dtype(self) -> dt.dtype:
        return dt._BY_NP[self._data.dtype]

    @property
    def device(self) -> dev.device:
        return dev.device_of(self._data)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    # Devices and layouts the engine never makes: the answers a dense cpu/cuda tensor gives.
    is_xpu = is_mps = is_meta = is_sparse = is_quantized = is_mkldnn = is_nested = property(
        lambda self: False)
    layout = property(lambda self: "strided")

    def is_complex(self) -> bool:
        return self._data.dtype.kind == "c"

    def is_signed(self) -> bool:
        return self._data.dtype.kind in "fi"

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f"

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def _version(self) -> int:
        return self._vc[0]

    def data_ptr(self) -> int:
        return int(self._data.__array_interface__["data"][0]) if self.device.type == "cpu" else 0

    # ----- requires_grad / grad -----------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self.grad_fn is not None and not value:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        if value and self._data.dtype.kind not in "fc":
            raise RuntimeError(FLOAT_ONLY)
        if value and self._inf and not grad_mode._inference[0]:
            raise RuntimeError(INFERENCE_REQUIRES_GRAD)
        self._rg = bool(value)

    def is_inference(self) -> bool:
        """True for a tensor created inside ``inference_mode()``."""
        return self._inf

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Set ``requires_grad`` in place and return self."""
        self.requires_grad = requires_grad
        return self

    @property
    def grad(self):
        if self.grad_fn is not None and not self._retains_grad:
            warnings.warn(NON_LEAF_GRAD, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            if value._data.shape != self._data.shape:
                raise RuntimeError("assigned grad has data of a different size")
            if value._data.dtype != self._data.dtype:
                raise RuntimeError("assigned grad has data of a different type")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def retain_grad(self) -> None:
        """Make backward populate ``.grad`` of this non-leaf tensor."""
        if not self._rg:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None or self._retains_grad:
            return
        self._retains_grad = True
        self.grad_fn.retained = weakref.ref(self)

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; it may return a new grad."""
        if not self._rg:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            if self.grad_fn.pre_hooks is None:
                self.grad_fn.pre_hooks = []
            hooks = self.grad_fn.pre_hooks
        else:
            if self._hooks is None:
                self._hooks = []
            hooks = self._hooks
        hooks.append(hook)
        return _RemovableHandle(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(tensor)`` after backward accumulated into this leaf's ``.grad``."""
        if self.grad_fn is not None:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors"
            )
        if self._post_hooks is None:
            self._post_hooks = []
        self._post_hooks.append(hook)
        return _RemovableHandle(self._post_hooks, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad`` (see autograd.backward)."""
        from gradcheck.ref import autograd

        autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    # ----- storage views -------------------------------------------------------------------
    @property
    def data(self) -> "Tensor":
        # Shares storage but not the version counter: edits through .data go unnoticed,
        # exactly the trap torch documents.
        return _make(self._data)

    @data.setter
    def data(self, value: "Tensor") -> None:
        self._data = value._data

    def detach(self) -> "Tensor":
        """A tensor sharing storage (and version counter) with no history."""
        return _make(self._data, vc=self._vc)

    def detach_(self) -> "Tensor":
        self.grad_fn = None
        self._rg = False
        return self

    def numpy(self, force: bool = False) -> np.ndarray:
        """The numpy array behind the tensor (shared, not copied)."""
        if self._rg and not force:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        if self.device.type != "cpu":
            raise TypeError(
                "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
                "tensor to host memory first."
            )
        return self._data

    def __array__(self, dtype=None, copy=None):
        array = self._data if self.device.type == "cpu" else self._data.get()
        return array if dtype is None else array.astype(dtype)

    def item(self):
        """The single value as a Python number."""
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        return self._data.item() if self._data.ndim == 0 else self._data.reshape(()).item()

    def tolist(self):
        return self._data.tolist()

    def __repr__(self) -> str:
        from gradcheck.ref.formatting import tensor_repr

        return tensor_repr(self)

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0:
            return format(self.item(), spec)
        return object.__format__(self, spec) if spec else repr(self)

    # ----- Python protocol -------------------------------------------------------------------
    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __hash__(self) -> int:
        return id(self)

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __deepcopy__(self, memo):
        if self.grad_fn is not None:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                "protocol at the moment. Deep-copy a leaf, or call .detach() first."
            )
        new = _make(self._data.copy())
        if type(self) is Tensor:
            new._rg = self._rg
        else:  # keep subclasses (nn.Parameter)
            new = Tensor._make_subclass(type(self), new, self._rg)
        if self.__dict__:  # and the attributes a script set on the tensor
            from copy import deepcopy

            new.__dict__.update(deepcopy(self.__dict__, memo))
        if self._grad is not None:
            new._grad = _make(self._grad._data.copy())
        memo[id(self)] = new
        return new

    def __reduce_ex__(self, protocol):
        return (_rebuild, (self.__array__().copy(), self._rg, type(self)))


def _rebuild(array, requires_grad, cls=None):
    """Unpickle a tensor (on the cpu), keeping subclasses such as nn.Parameter."""
    t = _make(array)
    if cls is not None and cls is not Tensor:
        return Tensor._make_subclass(cls, t, requires_grad)
    t._rg = requires_grad
    return t


class _RemovableHandle:
    """What register_hook returns: ``handle.remove()`` unregisters the hook."""

    def __init__(self, hooks: list, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


_new = object.__new__


def _make(data, grad_fn=None, vc=None, cls=None) -> Tensor:
    """The fast internal constructor: wrap an array without copying or checking it.

    ``cls`` builds a Tensor subclass (``_make_subclass``); ``vc`` shares a version counter.
    """
    t = _new(cls or Tensor)
    t._data = data
    t._rg = grad_fn is not None
    t.grad_fn = grad_fn
    t._grad = None
    t._vc = [0] if vc is None else vc
    t._retains_grad = False
    t._hooks = None
    t._post_hooks = None
    t._acc = None
    t._view = None
    t._inf = grad_mode._inference[0]
    return t


def _dim(dim: int, ndim: int) -> int:
    """Normalise a possibly negative dim, with torch's error when it is out of range."""
    lo, hi = (-ndim, ndim - 1) if ndim else (-1, 0)
    if not lo <= dim <= hi:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})"
        )
    return dim % ndim if ndim else 0


def check_inplace(t: Tensor) -> None:
    """torch's error for an in-place edit of a leaf that requires grad (or a view of one),
    or of an inference tensor outside inference mode."""
    if t._inf and not grad_mode._inference[0]:
        raise RuntimeError(INFERENCE_INPLACE)
    if not grad_mode._enabled[0]:
        return
    if t._rg and t.grad_fn is None:
        raise RuntimeError(LEAF_INPLACE)
    view = t._view
    while view is not None:
        base = view[0]
        if base._rg and base.grad_fn is None:
            raise RuntimeError(VIEW_OF_LEAF_INPLACE)
        view = base._view
