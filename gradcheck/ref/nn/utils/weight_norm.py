"""Reparametrised weights: ``weight_norm`` (w = g v / |v|) and ``spectral_norm``
(w = W / sigma(W), sigma by power iteration), torch's old hook-based API, with its parameter
and buffer names (``weight_g``/``weight_v``; ``weight_orig``, ``weight_u``, ``weight_v``).

Example:
    >>> import gradcheck.ref as torch
    >>> layer = weight_norm(torch.nn.Linear(3, 2))
    >>> [name for name, _ in layer.named_parameters()]
    ['bias', 'weight_g', 'weight_v']
"""
from __future__ import annotations

import warnings
from typing import Any

from gradcheck import ref as torch

Module = Any


def _norm_except(v: Any, dim: int | None) -> Any:
    """|v| over every dim but ``dim`` (the whole tensor when dim is None), kept broadcastable."""
    if dim is None:
        return v.norm()
    dims = [d for d in range(v.dim()) if d != dim % v.dim()]
    return v.norm(2, dims, keepdim=True) if dims else v.abs()


class _WeightNorm:
    def __init__(self, name: str, dim: int | None) -> None:
        self.name, self.dim = name, dim

    def compute_weight(self, module: Module) -> Any:
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / _norm_except(v, self.dim))

    def __call__(self, module: Module, inputs: Any) -> None:
        # a plain attribute (not a parameter): recomputed from g and v before every forward
        module.__dict__[self.name] = self.compute_weight(module)


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Split ``name`` into a magnitude ``name_g`` and a direction ``name_v``."""
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    if dim == -1:
        dim = None
    hook = _WeightNorm(name, dim)
    weight = getattr(module, name)
    delattr(module, name)
    module.register_parameter(name + "_g", torch.nn.Parameter(_norm_except(weight, dim).detach()))
    module.register_parameter(name + "_v", torch.nn.Parameter(weight.detach()))
    module.__dict__[name] = hook.compute_weight(module)
    handle = module.register_forward_pre_hook(hook)
    module.__dict__.setdefault("_reparametrisations", {})[name] = (hook, handle)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Fold ``name_g`` and ``name_v`` back into one ``name`` parameter."""
    hooks = module.__dict__.get("_reparametrisations", {})
    if name not in hooks or not isinstance(hooks[name][0], _WeightNorm):
        raise ValueError(f"weight_norm of '{name}' not found in {module}")
    hook, handle = hooks.pop(name)
    weight = hook.compute_weight(module).detach()
    handle.remove()
    delattr(module, name + "_g")
    delattr(module, name + "_v")
    module.__dict__.pop(name, None)
    module.register_parameter(name, torch.nn.Parameter(weight))
    return module


class _SpectralNorm:
    def __init__(self, name: str, n_power_iterations: int, dim: int, eps: float) -> None:
        self.name, self.n_power_iterations, self.dim, self.eps = name, n_power_iterations, dim, eps

    def matrix(self, weight: Any) -> Any:
        if self.dim != 0:
            order = [self.dim] + [d for d in range(weight.dim()) if d != self.dim]
            weight = weight.permute(*order)
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Any:
        F = torch.nn.functional
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        matrix = self.matrix(weight)
        if do_power_iteration:
            with torch.no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(matrix.t() @ u, dim=0, eps=self.eps))
                    u.copy_(F.normalize(matrix @ v, dim=0, eps=self.eps))
                if self.n_power_iterations > 0:  # as in torch: fresh copies enter the graph
                    u, v = u.clone(), v.clone()
        sigma = torch.dot(u, matrix @ v)
        return weight / sigma

    def __call__(self, module: Module, inputs: Any) -> None:
        module.__dict__[self.name] = self.compute_weight(module, module.training)


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Divide ``name`` by its largest singular value, estimated by power iteration."""
    F = torch.nn.functional
    if dim is None:
        transposed = type(module).__name__.startswith("ConvTranspose")
        dim = 1 if transposed else 0
    hook = _SpectralNorm(name, n_power_iterations, dim, eps)
    weight = getattr(module, name)
    with torch.no_grad():
        matrix = hook.matrix(weight)
        u = F.normalize(weight.new_empty(matrix.shape[0]).normal_(0, 1), dim=0, eps=eps)
        v = F.normalize(weight.new_empty(matrix.shape[1]).normal_(0, 1), dim=0, eps=eps)
    delattr(module, name)
    module.register_parameter(name + "_orig", weight)
    module.__dict__[name] = weight.detach()
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    handle = module.register_forward_pre_hook(hook)
    module.__dict__.setdefault("_reparametrisations", {})[name] = (hook, handle)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    hooks = module.__dict__.get("_reparametrisations", {})
    if name not in hooks or not isinstance(hooks[name][0], _SpectralNorm):
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    hook, handle = hooks.pop(name)
    weight = hook.compute_weight(module, False).detach()
    handle.remove()
    delattr(module, name + "_orig")
    delattr(module, name + "_u")
    delattr(module, name + "_v")
    module.__dict__.pop(name, None)
    module.register_parameter(name, torch.nn.Parameter(weight))
    return module
