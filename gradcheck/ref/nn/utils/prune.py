"""``torch.nn.utils.prune``: masks on parameters, as torch applies them.

Pruning ``name`` of a module moves the parameter to ``name + "_orig"``, stores the mask as the
buffer ``name + "_mask"``, and makes ``name`` the plain tensor ``orig * mask``, recomputed by a
forward pre-hook before every call, so gradients reach ``_orig`` through the mask. Pruning
again prunes only the entries still kept (torch's ``PruningContainer``); ``remove`` makes the
pruned tensor the parameter again.

>>> import gradcheck.ref as torch
>>> layer = torch.nn.Linear(2, 2)
>>> with torch.no_grad():
...     _ = layer.weight.copy_(torch.tensor([[1.0, -4.0], [3.0, 2.0]]))
...     _ = l1_unstructured(layer, "weight", amount=2)
>>> layer.weight.tolist(), sorted(dict(layer.named_buffers()))
([[0.0, -4.0], [3.0, 0.0]], ['weight_mask'])
"""
from __future__ import annotations

import numbers
from typing import Any

from gradcheck import ref as torch


def _check_amount(amount: Any) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or
                                                          float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         "non-negative integer")


def _to_prune(amount: Any, size: int) -> int:
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise ValueError(f"amount={amount} should be smaller than the number of parameters "
                             f"to prune={size}")
        return int(amount)
    return round(amount * size)


class BasePruningMethod:
    """A pruning technique: ``compute_mask(t, default_mask)``; applied as a forward pre-hook."""

    PRUNING_TYPE = "unstructured"
    _tensor_name: str

    def __call__(self, module: Any, inputs: Any) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        raise NotImplementedError

    def apply_mask(self, module: Any) -> Any:
        orig = getattr(module, self._tensor_name + "_orig")
        return orig * getattr(module, self._tensor_name + "_mask").to(dtype=orig.dtype)

    @classmethod
    def apply(cls, module: Any, name: str, *args: Any, importance_scores: Any = None,
              **kwargs: Any) -> "BasePruningMethod":
        method = cls(*args, **kwargs)
        method._tensor_name = name
        previous = _find_hook(module, name)
        orig = getattr(module, name + "_orig") if previous is not None else getattr(module, name)
        scores = orig if importance_scores is None else importance_scores
        if previous is not None:
            default_mask = getattr(module, name + "_mask").detach().clone()
            container = previous if isinstance(previous, PruningContainer) else \
                PruningContainer(previous)
            container.add_pruning_method(method)
            method = container
            _remove_hook(module, previous)
        else:
            default_mask = torch.ones_like(orig)
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
        with torch.no_grad():
            mask = method.compute_mask(scores, default_mask=default_mask)
        module.register_buffer(name + "_mask", mask)
        setattr(module, name, method.apply_mask(module))
        module.register_forward_pre_hook(method)
        return method

    def prune(self, t: Any, default_mask: Any = None, importance_scores: Any = None) -> Any:
        scores = t if importance_scores is None else importance_scores
        mask = torch.ones_like(t) if default_mask is None else default_mask
        return t * self.compute_mask(scores, default_mask=mask)

    def remove(self, module: Any) -> None:
        weight = self.apply_mask(module)
        delattr(module, self._tensor_name)
        orig = module._parameters.pop(self._tensor_name + "_orig")
        with torch.no_grad():
            orig.copy_(weight)
        module.register_parameter(self._tensor_name, orig)
        del module._buffers[self._tensor_name + "_mask"]


class PruningContainer(BasePruningMethod):
    """Successive pruning of one tensor: each method prunes what the previous ones kept."""

    def __init__(self, *methods: BasePruningMethod) -> None:
        self._pruning_methods: tuple = ()
        for method in methods:
            self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        self._tensor_name = method._tensor_name
        self._pruning_methods += (method,)

    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        method = self._pruning_methods[-1]
        mask = default_mask.clone()
        if method.PRUNING_TYPE == "unstructured":
            kept = default_mask == 1
            mask[kept] = method.compute_mask(t[kept], default_mask=default_mask[kept])
            return mask
        if method.PRUNING_TYPE == "structured":
            dim = method.dim % t.dim()
            others = [d for d in range(t.dim()) if d != dim]
            alive = default_mask.sum(others) != 0 if others else default_mask != 0
            index = alive.nonzero().reshape(-1)
            partial = method.compute_mask(t.index_select(dim, index),
                                          default_mask.index_select(dim, index))
            return mask.index_copy(dim, index, partial.to(mask.dtype))
        return method.compute_mask(t, default_mask=default_mask) * default_mask


class Identity(BasePruningMethod):
    """Prunes nothing (a mask of ones)."""

    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        return default_mask


class _Unstructured(BasePruningMethod):
    """Zero the ``amount`` entries that rank first by :meth:`_scores` (torch's ``topk``
    order, so ties fall as torch's do)."""

    LARGEST = True

    def __init__(self, amount: Any) -> None:
        _check_amount(amount)
        self.amount = amount

    def _scores(self, t: Any) -> Any:
        raise NotImplementedError

    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        k = _to_prune(self.amount, t.numel())
        mask = default_mask.clone()
        if k:
            chosen = torch.topk(self._scores(t).reshape(-1), k=k, largest=self.LARGEST).indices
            mask.reshape(-1)[chosen] = 0
        return mask


class L1Unstructured(_Unstructured):
    """Zero the ``amount`` entries of smallest absolute value."""

    LARGEST = False

    def _scores(self, t: Any) -> Any:
        return t.abs()


class RandomUnstructured(_Unstructured):
    """Zero ``amount`` entries drawn at random."""

    def _scores(self, t: Any) -> Any:
        return torch.rand_like(t)


class LnStructured(BasePruningMethod):
    """Zero the ``amount`` slices along ``dim`` of smallest L``n`` norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: Any, n: Any, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        dim = self.dim % t.dim()
        k = _to_prune(self.amount, t.shape[dim])
        others = [d for d in range(t.dim()) if d != dim]
        norms = torch.linalg.vector_norm(t, ord=self.n, dim=others) if others else t.abs()
        keep = torch.topk(norms, k=t.shape[dim] - k).indices
        return _slices_mask(t, dim, keep) * default_mask


class RandomStructured(BasePruningMethod):
    """Zero ``amount`` slices along ``dim`` drawn at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: Any, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        dim = self.dim % t.dim()
        k = _to_prune(self.amount, t.shape[dim])
        keep = torch.topk(torch.rand(t.shape[dim]), k=t.shape[dim] - k).indices
        return _slices_mask(t, dim, keep) * default_mask


class CustomFromMask(BasePruningMethod):
    """The given mask."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Any) -> None:
        self.mask = mask

    def compute_mask(self, t: Any, default_mask: Any) -> Any:
        return default_mask * self.mask.to(dtype=default_mask.dtype)


def _slices_mask(t: Any, dim: int, keep: Any) -> Any:
    mask = torch.zeros_like(t)
    index = [slice(None)] * t.dim()
    index[dim] = keep
    mask[tuple(index)] = 1
    return mask


def _find_hook(module: Any, name: str) -> Any:
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            return hook
    return None


def _remove_hook(module: Any, hook: Any) -> None:
    for key, value in list(module._forward_pre_hooks.items()):
        if value is hook:
            del module._forward_pre_hooks[key]


def identity(module: Any, name: str) -> Any:
    Identity.apply(module, name)
    return module


def l1_unstructured(module: Any, name: str, amount: Any, importance_scores: Any = None) -> Any:
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_unstructured(module: Any, name: str, amount: Any) -> Any:
    RandomUnstructured.apply(module, name, amount)
    return module


def ln_structured(module: Any, name: str, amount: Any, n: Any, dim: int,
                  importance_scores: Any = None) -> Any:
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def random_structured(module: Any, name: str, amount: Any, dim: int) -> Any:
    RandomStructured.apply(module, name, amount, dim)
    return module


def custom_from_mask(module: Any, name: str, mask: Any) -> Any:
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters: Any, pruning_method: Any, importance_scores: Any = None,
                        **kwargs: Any) -> None:
    """Prune the ``(module, name)`` pairs together, as one flattened vector."""
    parameters = list(parameters)
    scores = importance_scores or {}
    flat, masks = [], []
    for module, name in parameters:
        flat.append(scores.get((module, name), getattr(module, name)).reshape(-1))
        mask = getattr(module, name + "_mask", None)
        masks.append((torch.ones_like(getattr(module, name)) if mask is None else mask
                      ).reshape(-1))
    method = pruning_method(**kwargs)
    method._tensor_name = "global"
    with torch.no_grad():
        mask = method.compute_mask(torch.cat(flat), default_mask=torch.cat(masks))
    start = 0
    for module, name in parameters:
        size = getattr(module, name).numel()
        custom_from_mask(module, name, mask[start:start + size].reshape(
            getattr(module, name).shape))
        start += size


def remove(module: Any, name: str) -> Any:
    """Make the pruned tensor the parameter again and drop the mask and the hook."""
    hook = _find_hook(module, name)
    if hook is None:
        raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before "
                         "pruning can be removed")
    hook.remove(module)
    _remove_hook(module, hook)
    return module


def is_pruned(module: Any) -> bool:
    return any(isinstance(hook, BasePruningMethod) for sub in module.modules()
               for hook in sub._forward_pre_hooks.values())
