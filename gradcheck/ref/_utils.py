"""``torch._utils``: the flatten/unflatten helpers that distributed and fused-optimizer code
calls directly.

>>> import gradcheck.ref as torch
>>> flat = _flatten_dense_tensors([torch.ones(2), torch.zeros(1, 2)])
>>> [t.shape for t in _unflatten_dense_tensors(flat, [torch.ones(2), torch.zeros(1, 2)])]
[torch.Size([2]), torch.Size([1, 2])]
"""
from __future__ import annotations

from typing import Any

from gradcheck import ref as torch


def _flatten_dense_tensors(tensors: list) -> Any:
    return torch.cat([t.reshape(-1) for t in tensors]) if tensors else torch.zeros(0)


def _unflatten_dense_tensors(flat: Any, tensors: list) -> tuple:
    out, start = [], 0
    for t in tensors:
        count = t.numel()
        out.append(flat[start:start + count].reshape(t.shape))
        start += count
    return tuple(out)


def _take_tensors(tensors: Any, size_limit: int):
    """Chunks of same-type tensors of at most ``size_limit`` bytes each (a single larger
    tensor is a chunk of its own), in order within each type, as torch's generator."""
    buffers: dict = {}
    for tensor in tensors:
        size = tensor.numel() * tensor.element_size()
        chunk = buffers.setdefault(tensor.type(), [[], 0])
        if chunk[1] + size > size_limit and chunk[1] > 0:
            yield chunk[0]
            chunk = buffers[tensor.type()] = [[], 0]
        chunk[0].append(tensor)
        chunk[1] += size
    for chunk, _ in buffers.values():
        if chunk:
            yield chunk
