"""`Embedding`: a lookup table of trainable rows."""
from __future__ import annotations

from typing import Any

from gradcheck import ref as torch
from gradcheck.ref.nn import functional as F
from gradcheck.ref.nn import init
from gradcheck.ref.nn.module import Module
from gradcheck.ref.nn.parameter import Parameter


class Embedding(Module):
    """Rows of an (num_embeddings, embedding_dim) weight ~ N(0, 1); `padding_idx` row is zero.

    Example:
        >>> import gradcheck.ref as torch
        >>> Embedding(10, 3)(torch.tensor([[1, 2]])).shape
        torch.Size([1, 2, 3])
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 _weight: Any = None, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"padding_idx={padding_idx} must be within num_embeddings="
                                 f"{num_embeddings}")
            padding_idx %= num_embeddings
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(torch.empty(num_embeddings, embedding_dim, dtype=dtype,
                                                device=device))
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError(f"_weight has shape {tuple(_weight.shape)}, expected "
                                 f"{(num_embeddings, embedding_dim)}")
            self.weight = Parameter(_weight)

    @classmethod
    def from_pretrained(cls, embeddings: Any, freeze: bool = True,
                        padding_idx: int | None = None) -> Embedding:
        """An embedding whose rows are `embeddings` (2-d); frozen unless `freeze=False`.

        >>> import gradcheck.ref as torch
        >>> Embedding.from_pretrained(torch.eye(2)).weight.requires_grad
        False
        """
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        made = cls(rows, cols, padding_idx=padding_idx, _weight=embeddings)
        made.weight.requires_grad = not freeze
        return made

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with torch.no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input: Any) -> Any:
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        pad = f", padding_idx={self.padding_idx}" if self.padding_idx is not None else ""
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"
