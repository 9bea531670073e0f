"""The long tail of the Tensor API that real training code calls: methods that forward to
the functional ops added since (linalg, statistics, pointwise, assemble), in-place variants,
and the answers a dense tensor gives to questions about names, sparsity and quantisation (torch's own answers and errors for a strided float tensor).

``attach()`` installs them on Tensor; ``NAMESPACE`` lists the functions also exported as
``torch.<name>``.

>>> import gradcheck.ref as torch
>>> x = torch.tensor([3.0, 1.0, 2.0])
>>> x.name, x.real.equal(x), x.median()
(None, True, tensor(2.))
"""
from __future__ import annotations

import numpy as np

from gradcheck.ref import assemble, linalg, ops, pointwise, random, statistics
from gradcheck.ref.inplace import inplace
from gradcheck.ref.nn import distance
from gradcheck.ref.tensors import Tensor, _make


def _inplace_of(fn):
    def method(self, *args, **kwargs):
        return inplace(self, fn, *args, **kwargs)

    method.__name__ = fn.__name__ + "_"
    return method


def _dense_only(name: str, layout: str = "sparse tensor"):
    def method(self, *args, **kwargs):
        raise RuntimeError(f"{name} expected {layout} layout but got Strided")

    return method


def _not_quantized(name: str):
    def method(self, *args, **kwargs):
        raise NotImplementedError(f"Could not run 'aten::{name}' with arguments from the 'CPU' "
                                  "backend: the tensor is not quantized (gradcheck.ref has no "
                                  "quantized tensors)")

    return method


def _to_sparse(self, *args, **kwargs):
    raise NotImplementedError("Tensor.to_sparse is not available in gradcheck.ref: there are no "
                              "sparse tensors; keep the tensor dense")


def _apply_(self, fn):
    """Apply a Python function to every element, in place (no gradient, as in torch)."""
    flat = self._data.reshape(-1)
    for i, value in enumerate(flat.tolist()):
        flat[i] = fn(value)
    self._vc[0] += 1
    return self


def _map_(self, other, fn):
    flat, others = self._data.reshape(-1), np.broadcast_to(other._data, self._data.shape)
    for i, (a, b) in enumerate(zip(flat.tolist(), others.reshape(-1).tolist())):
        flat[i] = fn(a, b)
    self._vc[0] += 1
    return self


def _fill_diagonal_(self, fill_value, wrap: bool = False):
    """Fill the main diagonal (all dims equal) in place."""
    n = min(self._data.shape)
    index = tuple(np.arange(n) for _ in range(self._data.ndim))
    if wrap and self._data.ndim == 2 and self._data.shape[0] > self._data.shape[1] + 1:
        step = self._data.shape[1] + 1
        rows = np.arange(0, self._data.shape[0] * self._data.shape[1], step)
        index = (rows // self._data.shape[1], rows % self._data.shape[1])
    mask = np.zeros(self._data.shape, dtype=bool)
    mask[index] = True
    return inplace(self, ops.masked_fill, _make(mask), fill_value)


def _put(self, index, source, accumulate: bool = False):
    """A copy with ``source`` written (or added) at flat positions ``index``."""
    size = self.numel()
    flat_index = _make(index._data.reshape(-1) % max(size, 1))
    flat = self.reshape(-1)
    values = source.reshape(-1).to(self.dtype)
    if accumulate:
        return flat.index_add(0, flat_index, values).reshape(self.shape)
    from gradcheck.ref import shapes

    return shapes.index_put(flat, (flat_index,), values).reshape(self.shape)


def _renorm(self, p, dim, maxnorm):
    """Each slice along ``dim`` rescaled so its p-norm is at most ``maxnorm``."""
    dims = [d for d in range(self._data.ndim) if d != dim % self._data.ndim]
    norms = self.norm(p, dims, keepdim=True)
    scale = ops.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return self * scale.detach()


def _index_put(self, indices, values, accumulate: bool = False):
    from gradcheck.ref import shapes

    indices = tuple(indices)
    if accumulate:
        return ops.add(self, shapes.index_backward(values.expand(self[indices].shape).to(
            self.dtype), self._data.shape, tuple(i._data if isinstance(i, Tensor) else i
                                                 for i in indices)))
    return shapes.index_put(self, indices, values)


def _prelu(self, weight):
    shape = [1] * self._data.ndim
    if weight.numel() > 1:
        shape[1] = weight.numel()
    return ops.where(self >= 0, self, self * weight.reshape(shape))


def _clamp_in_place(which):
    def method(self, value):
        return inplace(self, ops.clamp, **{which: value})

    return method


def _multinomial(self, num_samples, replacement=False, *, generator=None):
    return random.multinomial(self, num_samples, replacement, generator=generator)


def _bernoulli(self, p=None, *, generator=None):
    return random.bernoulli(self, p, generator=generator)


def _exponential_(self, lambd=1.0, *, generator=None):
    uniform = random.rand(*self.shape, dtype=self.dtype, generator=generator)
    return self.copy_(-ops.log1p(-uniform) / lambd)


def _random_(self, low=0, high=None, *, generator=None):
    """Integers from [low, high) (or [0, low) with one bound; the dtype's range with none)."""
    if high is None:
        low, high = (0, low) if low else (0, 2 ** 24 if self.is_floating_point() else
                                          int(np.iinfo(self._data.dtype).max))
    draw = random.randint(low, high, tuple(self.shape), generator=generator)
    return self.copy_(draw.to(self.dtype))


def _cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    uniform = random.rand(*self.shape, dtype=self.dtype, generator=generator)
    return self.copy_(median + sigma * ops.tan(np.pi * (uniform - 0.5)))


def _log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    return self.copy_(ops.exp(random.randn(*self.shape, dtype=self.dtype,
                                           generator=generator) * std + mean))


def _geometric_(self, p, *, generator=None):
    uniform = random.rand(*self.shape, dtype=self.dtype, generator=generator)
    return self.copy_(ops.ceil(ops.log1p(-uniform) / np.log1p(-p)))


def _comparison_(fn):
    def method(self, other):
        return inplace(self, lambda a, b: fn(a, b).to(a.dtype), other)

    return method


def _t_(self):
    return _as_view_in_place(self, self.t())


def _as_view_in_place(self, result):
    """``transpose_``, ``t_``, ``squeeze_``, ``unsqueeze_``: self takes the new shape."""
    from gradcheck.ref.inplace import check_inplace

    check_inplace(self)
    self._data = result._data
    if result.grad_fn is not None and self.grad_fn is not None:
        self.grad_fn = result.grad_fn
    return self


def _shape_in_place(fn):
    def method(self, *args):
        return _as_view_in_place(self, fn(self, *args))

    return method


NAMESPACE = {
    # pointwise
    "atan2": pointwise.atan2, "arctan2": pointwise.atan2, "erfinv": pointwise.erfinv,
    "fmin": pointwise.fmin, "fmax": pointwise.fmax, "logaddexp": pointwise.logaddexp,
    "frac": pointwise.frac, "log10": pointwise.log10, "logit": pointwise.logit,
    "deg2rad": pointwise.deg2rad, "rad2deg": pointwise.rad2deg,
    "clamp_min": pointwise.clamp_min, "clamp_max": pointwise.clamp_max,
    "nan_to_num": pointwise.nan_to_num, "float_power": pointwise.float_power,
    "angle": pointwise.angle, "positive": pointwise.positive, "trace": pointwise.trace,
    "fix": ops.trunc, "floor_divide": lambda a, b: ops.div(a, b, rounding_mode="floor"),
    # linear algebra
    "inverse": linalg.inv, "det": linalg.det, "logdet": linalg.logdet,
    "slogdet": linalg.slogdet, "svd": linalg.torch_svd, "qr": linalg.qr,
    "cholesky": linalg.cholesky, "pinverse": linalg.pinv, "cross": linalg.torch_cross,
    "matrix_power": linalg.matrix_power, "mv": linalg.mv, "addmm": linalg.addmm,
    "baddbmm": linalg.baddbmm, "addmv": linalg.addmv, "tensordot": linalg.tensordot,
    "inner": linalg.inner, "ger": ops.outer,
    # statistics and counting
    "median": statistics.median, "nanmedian": statistics.nanmedian,
    "mode": statistics.mode, "kthvalue": statistics.kthvalue,
    "quantile": statistics.quantile, "nanquantile": statistics.nanquantile,
    "unique": statistics.unique, "unique_consecutive": statistics.unique_consecutive,
    "bincount": statistics.bincount, "histc": statistics.histc,
    "histogram": statistics.histogram, "bucketize": statistics.bucketize,
    "searchsorted": statistics.searchsorted, "count_nonzero": statistics.count_nonzero,
    "nansum": statistics.nansum, "nanmean": statistics.nanmean, "diff": statistics.diff,
    "cov": statistics.cov, "corrcoef": statistics.corrcoef, "isin": statistics.isin,
    # assembling
    "tile": assemble.tile, "rot90": assemble.rot90, "diag_embed": assemble.diag_embed,
    "vstack": assemble.vstack, "row_stack": assemble.row_stack, "hstack": assemble.hstack,
    "dstack": assemble.dstack, "column_stack": assemble.column_stack,
    "atleast_1d": assemble.atleast_1d, "atleast_2d": assemble.atleast_2d,
    "atleast_3d": assemble.atleast_3d, "tensor_split": assemble.tensor_split,
    "take": assemble.take, "take_along_dim": assemble.take_along_dim,
    "masked_scatter": assemble.masked_scatter, "tril_indices": assemble.tril_indices,
    "triu_indices": assemble.triu_indices, "cartesian_prod": assemble.cartesian_prod,
    "block_diag": assemble.block_diag, "range": assemble.torch_range,
    "broadcast_tensors": assemble.broadcast_tensors,
    "lerp": lambda input, end, weight: input.lerp(end, weight),
    # distances
    "cdist": distance.cdist, "pdist": distance.pdist,
    "cosine_similarity": distance.cosine_similarity,
    "pairwise_distance": distance.pairwise_distance,
}

# the functions above that are also Tensor methods under the same name
_METHODS = (
    "atan2 arctan2 erfinv fmin fmax logaddexp frac log10 logit deg2rad rad2deg clamp_min "
    "clamp_max nan_to_num float_power angle positive trace fix floor_divide inverse det "
    "logdet slogdet svd qr cholesky pinverse cross matrix_power mv addmm baddbmm addmv inner "
    "ger median nanmedian mode kthvalue quantile nanquantile unique unique_consecutive "
    "bincount histc histogram count_nonzero nansum nanmean diff isin tile rot90 diag_embed "
    "tensor_split take take_along_dim masked_scatter"
).split()
_IN_PLACE = (
    "atan2 erfinv frac log10 logit deg2rad rad2deg clamp_min clamp_max nan_to_num "
    "float_power fix floor_divide addmm baddbmm masked_scatter"
).split()


def _removed_solve(self, other):
    """Tensor.solve was removed from torch (1.9); it raises torch's message."""
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed. `torch.solve` is "
        "deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` has its arguments "
        "reversed and does not return the LU factorization.\n\nTo get the LU factorization see "
        "`torch.lu`, which can be used with `torch.lu_solve` or `torch.lu_unpack`.\nX = "
        "torch.solve(B, A).solution should be replaced with:\nX = torch.linalg.solve(A, B)")


def _addr(self, vec1, vec2, *, beta=1, alpha=1):
    """beta * self + alpha * outer(vec1, vec2), torch's addr (beta 0 ignores self)."""
    outer = vec1.unsqueeze(1) * vec2.unsqueeze(0)
    scaled = outer if alpha == 1 else alpha * outer
    if beta == 0:  # torch ignores self then (NaNs in it do not propagate)
        return scaled.expand(self.shape).clone()
    return (self if beta == 1 else beta * self) + scaled


def attach() -> None:
    """Install the methods on Tensor."""
    methods = {name: NAMESPACE[name] for name in _METHODS}
    methods.update({name + "_": _inplace_of(NAMESPACE[name]) for name in _IN_PLACE})
    methods.update({
        "absolute": ops.abs, "absolute_": _inplace_of(ops.abs), "negative": ops.neg,
        "negative_": _inplace_of(ops.neg), "subtract": ops.sub, "not_equal": ops.ne,
        "less_equal": ops.le, "greater_equal": ops.ge, "less": ops.lt, "greater": ops.gt,
        "ravel": lambda self: self.reshape(-1), "adjoint": lambda self: self.transpose(-2, -1),
        "dist": lambda self, other, p=2: (self - other).norm(p),
        "resolve_neg": lambda self: self,
        "dequantize": lambda self: self, "to_dense": lambda self, dtype=None: self,
        "bfloat16": lambda self, memory_format=None: self.to(_dtype("bfloat16")),
        "renorm": _renorm, "renorm_": _inplace_of(_renorm), "prelu": _prelu,
        "put": _put, "put_": _inplace_of(_put), "index_put": _index_put,
        "index_put_": _inplace_of(_index_put), "fill_diagonal_": _fill_diagonal_,
        "clamp_min_": _clamp_in_place("min"), "clamp_max_": _clamp_in_place("max"),
        "multinomial": _multinomial, "bernoulli": _bernoulli, "exponential_": _exponential_,
        "random_": _random_, "cauchy_": _cauchy_, "log_normal_": _log_normal_,
        "geometric_": _geometric_, "apply_": _apply_, "map_": _map_,
        "scatter_add_": _inplace_of(ops.scatter_add), "fmod_": _inplace_of(ops.fmod),
        "remainder_": _inplace_of(ops.remainder), "triu_": _inplace_of(ops.triu),
        "tril_": _inplace_of(ops.tril), "logical_and_": _comparison_(ops.logical_and),
        "logical_or_": _comparison_(ops.logical_or), "logical_xor_": _comparison_(
            ops.logical_xor), "logical_not_": _inplace_of(lambda a: ops.logical_not(a).to(
                a.dtype)),
        "bitwise_and_": _inplace_of(ops.bitwise_and), "bitwise_or_": _inplace_of(
            ops.bitwise_or), "bitwise_xor_": _inplace_of(ops.bitwise_xor),
        "eq_": _comparison_(ops.eq), "ne_": _comparison_(ops.ne), "lt_": _comparison_(ops.lt),
        "le_": _comparison_(ops.le), "gt_": _comparison_(ops.gt), "ge_": _comparison_(ops.ge),
        "t_": _t_, "transpose_": _shape_in_place(ops.transpose),
        "squeeze_": _shape_in_place(ops.squeeze), "unsqueeze_": _shape_in_place(ops.unsqueeze),
        "solve": _removed_solve, "split_with_sizes": lambda self, split_sizes, dim=0: tuple(
            self.split(list(split_sizes), dim)),
        "addr": _addr, "addr_": _inplace_of(_addr),
        "values": _dense_only("values"), "_values": _dense_only("_values"),
        "indices": _dense_only("indices", "sparse coordinate tensor"),
        "_indices": _dense_only("_indices", "sparse coordinate tensor"),
        "coalesce": _dense_only("coalesce", "sparse coordinate tensor"),
        "crow_indices": _dense_only("crow_indices", "sparse compressed tensor"),
        "col_indices": _dense_only("col_indices", "sparse compressed tensor"),
        "ccol_indices": _dense_only("ccol_indices", "sparse compressed tensor"),
        "row_indices": _dense_only("row_indices", "sparse compressed tensor"),
        "sparse_mask": _dense_only("sparse_mask", "sparse coordinate tensor"),
        "sparse_dim": lambda self: 0, "dense_dim": lambda self: self._data.ndim,
        "to_sparse": _to_sparse, "to_sparse_csr": _to_sparse,
        "q_scale": _not_quantized("q_scale"), "q_zero_point": _not_quantized("q_zero_point"),
        "int_repr": _not_quantized("int_repr"),
        "is_distributed": lambda self: False, "is_set_to": lambda self, other: (
            self._data is other._data),
        "as_subclass": lambda self, cls: Tensor._make_subclass(cls, self, self.requires_grad),
        "lgamma": lambda self: _special().lgamma(self),
        "digamma": lambda self: _special().digamma(self),
    })
    for name, fn in methods.items():
        setattr(Tensor, name, fn)
    Tensor.name = property(lambda self: None)
    Tensor.volatile = property(lambda self: False)
    Tensor._backward_hooks = property(lambda self: None)
    Tensor._base = property(lambda self: self._view[0] if self._view is not None else None)


def _dtype(name: str):
    from gradcheck.ref import dtypes as dt

    return getattr(dt, name)


def _special():
    from gradcheck.ref import special_functions

    return special_functions
