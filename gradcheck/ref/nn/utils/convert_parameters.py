"""``parameters_to_vector`` and ``vector_to_parameters``: all parameters as one flat tensor
and back (the vector's slices are copied into the parameters' data, as in torch).

Example:
    >>> import gradcheck.ref as torch
    >>> layer = torch.nn.Linear(2, 1)
    >>> parameters_to_vector(layer.parameters()).shape
    torch.Size([3])
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gradcheck import ref as torch


def parameters_to_vector(parameters: Iterable[Any]) -> Any:
    return torch.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Any, parameters: Iterable[Any]) -> None:
    if not isinstance(vec, torch.Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    start = 0
    for param in parameters:
        count = param.numel()
        param.data = vec[start:start + count].reshape(param.shape).data
        start += count
