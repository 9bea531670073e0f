"""``torch.func`` (and ``torch.vmap``): ``functional_call`` runs a module with other
parameters and buffers, and ``vmap`` maps a function over a batch dim (by running it on each
slice and stacking the results, which gives the same values and gradients as torch's
batching rules).

>>> import gradcheck.ref as torch
>>> torch.vmap(lambda row: row.sum())(torch.ones(3, 2))
tensor([2., 2., 2.])
"""
from __future__ import annotations

import contextlib
import types
from typing import Any

from gradcheck import ref as torch


@contextlib.contextmanager
def _swapped(module: Any, values: dict):
    """Temporarily bind ``values`` (by dotted name) in place of the module's tensors."""
    saved = []
    for name, value in values.items():
        owner_name, _, attr = name.rpartition(".")
        owner = module.get_submodule(owner_name) if owner_name else module
        for store in ("_parameters", "_buffers"):
            members = owner.__dict__[store]
            if attr in members:
                saved.append((members, attr, members[attr]))
                members[attr] = value
                break
    try:
        yield
    finally:
        for members, attr, old in saved:
            members[attr] = old


def functional_call(module: Any, parameter_and_buffer_dicts: Any, args: Any = (),
                    kwargs: dict | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    values = {}
    dicts = parameter_and_buffer_dicts
    for d in (dicts if isinstance(dicts, (list, tuple)) else (dicts,)):
        values.update(d)
    args = args if isinstance(args, tuple) else (args,)
    with _swapped(module, values):
        return module(*args, **(kwargs or {}))


def vmap(func: Any, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Any:
    def mapped(*args: Any) -> Any:
        dims = in_dims if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
        size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
        results = []
        for i in range(size):
            sliced = [a if d is None else a.select(d, i) for a, d in zip(args, dims)]
            results.append(func(*sliced))
        if isinstance(results[0], tuple):
            outs = out_dims if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(
                results[0])
            return tuple(torch.stack([r[k] for r in results], d) for k, d in enumerate(outs))
        return torch.stack(results, out_dims)

    return mapped


def _gradient_value_aux(func: Any, args: tuple, argnums: int, has_aux: bool) -> tuple:
    """(gradient of ``func`` at ``args`` with respect to argument ``argnums``, value, aux)."""
    args = list(args)
    args[argnums] = args[argnums].detach().requires_grad_(True)
    with torch.enable_grad():
        out = func(*args)
        value, aux = (out if has_aux else (out, None))
        (g,) = torch.autograd.grad(value, args[argnums])
    return g, value, aux


def grad(func: Any, argnums: int = 0, has_aux: bool = False) -> Any:
    """The gradient of a scalar function with respect to argument ``argnums``."""
    def gradient(*args: Any) -> Any:
        g, _, aux = _gradient_value_aux(func, args, argnums, has_aux)
        return (g, aux) if has_aux else g

    return gradient


def grad_and_value(func: Any, argnums: int = 0, has_aux: bool = False) -> Any:
    """Like ``grad``, returning ``(gradient, value)`` (``(gradient, (value, aux))``)."""
    def gradient_and_value(*args: Any) -> Any:
        g, value, aux = _gradient_value_aux(func, args, argnums, has_aux)
        return (g, (value.detach(), aux)) if has_aux else (g, value.detach())

    return gradient_and_value


def jvp(func: Any, primals: Any, tangents: Any, *, strict: bool = False,
        has_aux: bool = False) -> tuple:
    """``(func(*primals), J @ tangents)``: the forward-mode derivative along ``tangents``.

    NOTE: computed as the derivative of a vector-Jacobian product (``J^T u``) with respect to
    the dummy ``u``, which is exact because ``J^T u`` is linear in ``u``.
    """
    primals = tuple(p.detach().requires_grad_(True) for p in primals)
    with torch.enable_grad():
        out = func(*primals)
        out, aux = out if has_aux else (out, None)
        outs = out if isinstance(out, tuple) else (out,)
        dummies = [torch.zeros_like(o).requires_grad_(True) for o in outs]
        pulled = torch.autograd.grad(outs, primals, dummies, create_graph=True,
                                     allow_unused=True)
        along = [(g * t).sum() for g, t in zip(pulled, tangents) if g is not None]
        pushed = torch.autograd.grad(sum(along), dummies, allow_unused=True) if along and any(
            a.requires_grad for a in along) else [None] * len(outs)
    pushed = tuple(torch.zeros_like(o) if p is None else p for o, p in zip(outs, pushed))
    value = tuple(o.detach() for o in outs) if isinstance(out, tuple) else outs[0].detach()
    tangent_out = pushed if isinstance(out, tuple) else pushed[0]
    return (value, tangent_out, aux) if has_aux else (value, tangent_out)


func = types.SimpleNamespace(functional_call=functional_call, vmap=vmap, grad=grad,
                             grad_and_value=grad_and_value, jvp=jvp)
