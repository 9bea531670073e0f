"""Variable-length sequences: ``pad_sequence``, ``PackedSequence``, ``pack_padded_sequence``,
``pad_packed_sequence``, ``pack_sequence`` and ``unpad_sequence``/``unpack_sequence``.

A packed sequence stores, for each time step t, the rows of the sequences still running at t
(``batch_sizes[t]`` of them, longest sequences first), one time step after another. The
recurrent layers accept it and only step the running rows, as in torch.

Example:
    >>> import gradcheck.ref as torch
    >>> x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 0.0]]).t()
    >>> packed = pack_padded_sequence(x, torch.tensor([3, 2]))
    >>> packed.data, packed.batch_sizes
    (tensor([1., 4., 2., 5., 3.]), tensor([2, 2, 1]))
"""
from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from gradcheck import ref as torch

Tensor = Any


class PackedSequence(namedtuple("PackedSequence",
                                ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """The packed rows plus how many rows each time step has (and the batch order used)."""

    def __new__(cls, data: Tensor, batch_sizes: Tensor | None = None,
                sorted_indices: Tensor | None = None, unsorted_indices: Tensor | None = None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        return type(self)(self.data.to(*args, **kwargs), self.batch_sizes, self.sorted_indices,
                          self.unsorted_indices)

    def cpu(self) -> PackedSequence:
        return self

    cuda = cpu

    def double(self) -> PackedSequence:
        return self.to(torch.float64)

    def float(self) -> PackedSequence:
        return self.to(torch.float32)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return False


def _invert(permutation: Tensor) -> Tensor:
    order = np.empty_like(permutation._data)
    order[permutation._data] = np.arange(permutation._data.size)
    return torch.tensor(order)


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences of different lengths (dim 0), padding the short ones."""
    sequences = list(sequences)
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        missing = longest - s.shape[0]
        filler = torch.full((missing, *s.shape[1:]), padding_value, dtype=s.dtype)
        pieces = [s, filler] if padding_side == "right" else [filler, s]
        padded.append(torch.cat(pieces, 0))
    out = torch.stack(padded, 0)
    return out if batch_first else out.transpose(0, 1)


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded ``(T, B, *)`` batch (``(B, T, *)`` with batch_first) of given lengths."""
    lengths_np = np.asarray(lengths.tolist() if isinstance(lengths, torch.Tensor) else lengths,
                            dtype=np.int64)
    if enforce_sorted:
        if (np.diff(lengths_np) > 0).any():
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                "exportability.")
        sorted_indices = None
        order = np.arange(lengths_np.size)
    else:
        order = np.argsort(-lengths_np, kind="stable")
        sorted_indices = torch.tensor(order)
    if (lengths_np <= 0).any():
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element "
                           "in 'lengths' that is <= 0")
    x = input if not batch_first else input.transpose(0, 1)
    x = x.index_select(1, torch.tensor(order)) if sorted_indices is not None else x
    ordered = lengths_np[order]
    batch_sizes = np.array([(ordered > t).sum() for t in range(int(ordered[0]))], dtype=np.int64)
    data = torch.cat([x[t, :int(n)] for t, n in enumerate(batch_sizes)], 0)
    return PackedSequence(data, torch.tensor(batch_sizes), sorted_indices)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """The padded ``(T, B, *)`` batch and the lengths, in the original batch order."""
    sizes = sequence.batch_sizes.tolist()
    steps = len(sizes)
    if total_length is not None and total_length < steps:
        raise ValueError(f"Expected total_length to be at least the length of the longest "
                         f"sequence in input, but got total_length={total_length} and max "
                         f"sequence length being {steps}")
    batch, rest = sizes[0], tuple(sequence.data.shape[1:])
    rows, start = [], 0
    for n in sizes:
        step = sequence.data[start:start + n]
        if n < batch:
            step = torch.cat([step, torch.full((batch - n, *rest), padding_value,
                                               dtype=step.dtype)], 0)
        rows.append(step)
        start += n
    for _ in range((total_length or steps) - steps):
        rows.append(torch.full((batch, *rest), padding_value, dtype=sequence.data.dtype))
    padded = torch.stack(rows, 0)
    lengths = np.array([sum(1 for n in sizes if n > b) for b in range(batch)], dtype=np.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices._data]
    return (padded.transpose(0, 1) if batch_first else padded), torch.tensor(lengths)


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor, batch_first: bool = False):
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[i, :int(n)] for i, n in enumerate(lengths.tolist())]


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
