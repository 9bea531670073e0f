"""``torch.nn.attention.flex_attention``: attention whose scores a Python ``score_mod`` edits
and whose pattern a ``mask_mod`` (through a ``BlockMask``) restricts.

Values are those of torch's eager implementation (its math reference): the scores
``q k^T * scale`` (in float64 for float64 inputs, float32 otherwise), ``score_mod`` applied
to every entry, entries where ``mask_mod`` is False set to -inf, a softmax whose fully
masked rows are 0, times ``v``; ``lse`` is the log-sum-exp of a row, -inf when it is fully
masked. torch vmaps the mods over (batch, head, query, key); here they are called once on
index tensors shaped to broadcast against each other ([B,1,1,1], [1,H,1,1], [1,1,L,1],
[1,1,1,S]), which gives the same values for mods made of elementwise ops and indexing.

``create_block_mask`` keeps torch's block bookkeeping (``kv_num_blocks``, ``kv_indices``, the
full blocks, the transposed q blocks) and printing. Difference: torch's CPU build refuses a
backward pass (it raises NotImplementedError when an input requires grad); the engine
records the composed ops, so gradients flow (they equal those of torch's math reference).

>>> import gradcheck.ref as torch
>>> from gradcheck.ref.nn.flex_attention import create_block_mask, flex_attention
>>> mask = create_block_mask(lambda b, h, q, kv: q >= kv, None, None, 4, 4, BLOCK_SIZE=2)
>>> mask.kv_num_blocks.tolist(), mask.full_kv_num_blocks.tolist()
([[[1, 1]]], [[[0, 1]]])
>>> q = torch.ones(1, 1, 4, 2)
>>> flex_attention(q, q, q, block_mask=mask).shape
torch.Size([1, 1, 4, 2])
"""
from __future__ import annotations

import functools
import inspect
import itertools
import math
import operator
from typing import Any, Callable, NamedTuple

import numpy as np

from gradcheck import ref as torch

Tensor = Any
_DEFAULT_SPARSE_BLOCK_SIZE = 128
_LARGE_SPARSE_BLOCK_SIZE = 1 << 30


class AuxRequest(NamedTuple):
    """Which auxiliary outputs ``flex_attention`` should return."""

    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    lse: Tensor | None = None
    max_scores: Tensor | None = None


def _identity(score: Tensor, batch: Tensor, head: Tensor, token_q: Tensor,
              token_kv: Tensor) -> Tensor:
    return score


def noop_mask(batch: Tensor, head: Tensor, token_q: Tensor, token_kv: Tensor) -> Tensor:
    """The mask that keeps everything."""
    return batch.new_ones(size=(), dtype=torch.bool, device=batch.device)


def _sliced_mask_mod_error(batch: Tensor, head: Tensor, token_q: Tensor,
                           token_kv: Tensor) -> Tensor:
    raise RuntimeError("Cannot use mask_mod from a sliced BlockMask")


def or_masks(*mask_mods: Callable) -> Callable:
    """The union of ``mask_mods``."""
    return _combined(mask_mods, "new_zeros", operator.or_, "or_mask")


def and_masks(*mask_mods: Callable) -> Callable:
    """The intersection of ``mask_mods``."""
    return _combined(mask_mods, "new_ones", operator.and_, "and_mask")


def _combined(mask_mods: tuple, start: str, combine: Callable, name: str) -> Callable:
    if not all(callable(arg) for arg in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def combined(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        result = getattr(b, start)((), dtype=torch.bool)
        for mask in mask_mods:
            result = combine(result, mask(b, h, q_idx, kv_idx))
        return result

    combined.__name__ = combined.__qualname__ = name
    return combined


def _positional_count(fn: Callable) -> int:
    if hasattr(fn, "__code__"):
        return fn.__code__.co_argcount - len(getattr(fn, "__defaults__", None) or ())
    return sum(1 for p in inspect.signature(fn).parameters.values()
               if p.default is inspect.Parameter.empty)


def _is_score_mod(fn: Callable) -> bool:
    count = _positional_count(fn)
    if count not in (4, 5):
        raise AssertionError(f"Expected 4 or 5 positional args, got {count}")
    return count == 5


def _grid(B: int, H: int, L: int, S: int) -> tuple:
    """Index tensors that broadcast to [B, H, L, S], standing for torch's four vmaps."""
    return (torch.arange(B).reshape(B, 1, 1, 1), torch.arange(H).reshape(1, H, 1, 1),
            torch.arange(L).reshape(1, 1, L, 1), torch.arange(S).reshape(1, 1, 1, S))


def create_mask(mod_fn: Callable, B: int | None, H: int | None, Q_LEN: int, KV_LEN: int,
                device: Any = None) -> Tensor:
    """The dense boolean [B, H, Q_LEN, KV_LEN] mask of a mask_mod (or of a score_mod: where
    it leaves the score finite)."""
    B, H = B or 1, H or 1
    index = _grid(B, H, Q_LEN, KV_LEN)
    if _is_score_mod(mod_fn):
        out = mod_fn(torch.zeros(B, H, Q_LEN, KV_LEN), *index)
        return torch.where(torch.isneginf(out), False, True)
    return mod_fn(*index).expand(B, H, Q_LEN, KV_LEN).to(torch.bool)


# ----------------------------------------------------------------------------- blocks
def _int32(array: np.ndarray) -> Tensor:
    return torch.tensor(np.ascontiguousarray(array, dtype=np.int32), dtype=torch.int32)


def _dense_to_ordered(dense: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of blocks: how many are on, and their columns first (stable order)."""
    dense = dense.astype(np.int32)
    return dense.sum(-1), np.argsort(-dense, axis=-1, kind="stable")


def _ordered_to_dense(num_blocks: np.ndarray, indices: np.ndarray, num_cols: int) -> np.ndarray:
    dense = np.zeros((*indices.shape[:-1], num_cols), dtype=np.int32)
    for position in np.ndindex(*num_blocks.shape):
        dense[position][indices[position][:num_blocks[position]]] = 1
    return dense


def _transpose_ordered(num_blocks: np.ndarray, indices: np.ndarray):
    dense = _ordered_to_dense(num_blocks, indices, indices.shape[-1])
    return _dense_to_ordered(np.swapaxes(dense, -2, -1))


class BlockMask:
    """Which (query block, key block) tiles attention visits, and the mask_mod within them."""

    def __init__(self, seq_lengths: tuple[int, int], kv_num_blocks: Tensor, kv_indices: Tensor,
                 full_kv_num_blocks: Tensor | None, full_kv_indices: Tensor | None,
                 q_num_blocks: Tensor | None, q_indices: Tensor | None,
                 full_q_num_blocks: Tensor | None, full_q_indices: Tensor | None,
                 BLOCK_SIZE: tuple[int, int] = (_DEFAULT_SPARSE_BLOCK_SIZE,) * 2,
                 mask_mod: Callable = noop_mask, **write_order: Any) -> None:
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise AssertionError("full_kv_num_blocks and full_kv_indices must be both provided "
                                 "or omitted")
        self.seq_lengths, self.BLOCK_SIZE, self.mask_mod = seq_lengths, BLOCK_SIZE, mask_mod
        self.kv_num_blocks, self.kv_indices = kv_num_blocks, kv_indices
        self.full_kv_num_blocks, self.full_kv_indices = full_kv_num_blocks, full_kv_indices
        self.q_num_blocks, self.q_indices = q_num_blocks, q_indices
        self.full_q_num_blocks, self.full_q_indices = full_q_num_blocks, full_q_indices

    @classmethod
    def from_kv_blocks(cls, kv_num_blocks: Tensor, kv_indices: Tensor,
                       full_kv_num_blocks: Tensor | None = None,
                       full_kv_indices: Tensor | None = None,
                       BLOCK_SIZE: int | tuple[int, int] = _DEFAULT_SPARSE_BLOCK_SIZE,
                       mask_mod: Callable | None = None,
                       seq_lengths: tuple[int, int] | None = None,
                       compute_q_blocks: bool = True, **write_order: Any) -> BlockMask:
        """A BlockMask from its kv-side tiles; the q side is their transpose."""
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise AssertionError("full_kv_num_blocks and full_kv_indices must be both provided "
                                 "or omitted")
        q_side: list = [None] * 4
        if compute_q_blocks:
            q_side[:2] = map(_int32, _transpose_ordered(kv_num_blocks.numpy(),
                                                         kv_indices.numpy()))
            if full_kv_num_blocks is not None:
                q_side[2:] = map(_int32, _transpose_ordered(full_kv_num_blocks.numpy(),
                                                             full_kv_indices.numpy()))
        if isinstance(BLOCK_SIZE, int):
            BLOCK_SIZE = (BLOCK_SIZE, BLOCK_SIZE)
        if seq_lengths is None:
            seq_lengths = (kv_indices.shape[-2] * BLOCK_SIZE[0],
                           kv_indices.shape[-1] * BLOCK_SIZE[1])
        return cls(seq_lengths, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices,
                   *q_side, BLOCK_SIZE=BLOCK_SIZE,
                   mask_mod=noop_mask if mask_mod is None else mask_mod)

    def as_tuple(self, flatten: bool = True) -> tuple:
        block_size = self.BLOCK_SIZE if not flatten else tuple(self.BLOCK_SIZE)
        fields = (self.kv_num_blocks, self.kv_indices, self.full_kv_num_blocks,
                  self.full_kv_indices, self.q_num_blocks, self.q_indices,
                  self.full_q_num_blocks, self.full_q_indices)
        if flatten:
            return (*self.seq_lengths, *fields, *block_size, self.mask_mod)
        return (self.seq_lengths, *fields, block_size, self.mask_mod)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.kv_indices.shape[:-2]) + tuple(self.seq_lengths)

    def numel(self) -> int:
        return functools.reduce(operator.mul, self.shape, 1)

    def sparsity(self) -> float:
        """The percentage of the mask's tiles that are skipped."""
        computed = int(self.kv_num_blocks.sum().item())
        if self.full_kv_num_blocks is not None:
            computed += int(self.full_kv_num_blocks.sum().item())
        return 100 * (1 - computed * self.BLOCK_SIZE[0] * self.BLOCK_SIZE[1] / self.numel())

    def to_dense(self) -> Tensor:
        """The [..., query blocks, key blocks] int32 map of the tiles visited."""
        dense = _ordered_to_dense(self.kv_num_blocks.numpy(), self.kv_indices.numpy(),
                                  self.kv_indices.shape[-1])
        if self.full_kv_num_blocks is not None:
            dense = dense | _ordered_to_dense(self.full_kv_num_blocks.numpy(),
                                              self.full_kv_indices.numpy(),
                                              self.full_kv_indices.shape[-1])
        return _int32(dense)

    def to_string(self, grid_size: int | tuple[int, int] = (20, 20), limit: int = 4) -> str:
        """The tile map drawn with blocks (█ visited, ░ partly, blank skipped)."""
        dense = self.to_dense().numpy()
        *batch_dims, rows, cols = dense.shape
        if isinstance(grid_size, int):
            max_rows = max_cols = grid_size
        elif grid_size == -1:
            max_rows, max_cols = rows, cols
        else:
            max_rows, max_cols = grid_size
        row_step, col_step = max(1, -(-rows // max_rows)), max(1, -(-cols // max_cols))
        drawings = []
        for count, batch_idx in enumerate(itertools.product(*[range(i) for i in batch_dims])):
            if count == limit:
                drawings += ["...", "To print out more, set BlockMask.to_string(limit=N)",
                             "You can also index (BlockMask[batch, head]) to choose a specific "
                             "batch or head"]
                break
            drawings.append(_draw(dense[batch_idx], batch_idx, row_step, col_step))
        return "\n".join(drawings)

    def __str__(self) -> str:
        return (f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%, \n"
                f"{self.to_string().strip()}\n)")

    def __repr__(self) -> str:
        def shape_or_none(x: Tensor | None) -> Any:
            return x.shape if x is not None else None

        name = getattr(self.mask_mod, "__name__", self.mask_mod)
        return ("BlockMask(\n"
                f"    kv_num_blocks={self.kv_num_blocks.shape},\n"
                f"    kv_indices={self.kv_indices.shape},\n"
                f"    full_kv_num_blocks={shape_or_none(self.full_kv_num_blocks)},\n"
                f"    full_kv_indices={shape_or_none(self.full_kv_indices)},\n"
                f"    q_num_blocks={shape_or_none(self.q_num_blocks)},\n"
                f"    q_indices={shape_or_none(self.q_indices)},\n"
                f"    full_q_num_blocks={shape_or_none(self.full_q_num_blocks)},\n"
                f"    full_q_indices={shape_or_none(self.full_q_indices)},\n"
                f"    BLOCK_SIZE={self.BLOCK_SIZE},\n"
                f"    shape={self.shape},\n"
                f"    sparsity={self.sparsity():.2f}%,\n"
                f"    mask_mod={name}\n)")

    def __getitem__(self, index: Any) -> BlockMask:
        """The mask of some batches, heads or query blocks (its mask_mod cannot be used)."""
        index = index if isinstance(index, tuple) else (index,)
        padded = (*index, slice(None), slice(None), slice(None))[:3]
        sizes = self.kv_num_blocks.shape[:3]
        index = tuple((slice(i + n, i + n + 1) if -n <= i < 0 else slice(i, i + 1))
                      if isinstance(i, int) else i for i, n in zip(padded, sizes))
        full = ((None, None) if self.full_kv_num_blocks is None
                else (self.full_kv_num_blocks[index], self.full_kv_indices[index]))
        return BlockMask.from_kv_blocks(self.kv_num_blocks[index], self.kv_indices[index], *full,
                                        BLOCK_SIZE=self.BLOCK_SIZE,
                                        mask_mod=_sliced_mask_mod_error,
                                        seq_lengths=self.seq_lengths,
                                        compute_q_blocks=self.q_indices is not None)

    def to(self, device: Any) -> BlockMask:
        return self


def _draw(dense: np.ndarray, batch_idx: tuple, row_step: int, col_step: int) -> str:
    text = f"{batch_idx}\n"
    for r in range(0, dense.shape[0], row_step):
        for c in range(0, dense.shape[1], col_step):
            share = dense[r:r + row_step, c:c + col_step].astype(np.float32).mean()
            text += ("█" if share == 1 else " " if share == 0 else "░") * 2
        text += "\n"
    return text


def _to_block_tiles(mask: np.ndarray, q_block: int, kv_block: int, separate_full: bool):
    mask = mask.reshape((1,) * (4 - mask.ndim) + mask.shape)
    pad_q, pad_kv = (-mask.shape[-2]) % q_block, (-mask.shape[-1]) % kv_block
    mask = np.pad(mask, [(0, 0), (0, 0), (0, pad_q), (0, pad_kv)])
    B, H, Q, KV = mask.shape
    tiles = mask.reshape(B, H, Q // q_block, q_block, KV // kv_block, kv_block)
    counts = tiles.sum(axis=(3, 5))
    if not separate_full:
        return counts > 0, None
    full = q_block * kv_block
    return (counts > 0) & (counts < full), counts == full


def create_block_mask(mask_mod: Callable, B: int | None, H: int | None, Q_LEN: int, KV_LEN: int,
                      device: Any = None, BLOCK_SIZE: int | tuple[int, int] =
                      _DEFAULT_SPARSE_BLOCK_SIZE, _compile: bool = False,
                      separate_full_blocks: bool = True, compute_dq_write_order: bool = False,
                      dq_kv_order: bool = True) -> BlockMask:
    """The BlockMask of ``mask_mod`` over [B, H, Q_LEN, KV_LEN] in BLOCK_SIZE tiles."""
    if _is_score_mod(mask_mod):
        raise AssertionError(f"create-block_mask requires a mask_mod function! Got {mask_mod}")
    q_block, kv_block = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else BLOCK_SIZE
    if compute_dq_write_order:
        raise NotImplementedError("create_block_mask(compute_dq_write_order=True) is not "
                                  "available in gradcheck.ref: it orders a GPU kernel's writes")
    dense = create_mask(mask_mod, B, H, Q_LEN, KV_LEN, device).numpy()
    partial, full = _to_block_tiles(dense, q_block, kv_block, separate_full_blocks)
    partial_num, partial_idx = map(_int32, _dense_to_ordered(partial))
    full_side = (None, None) if full is None else tuple(map(_int32, _dense_to_ordered(full)))
    return BlockMask.from_kv_blocks(partial_num, partial_idx, *full_side,
                                    BLOCK_SIZE=(q_block, kv_block), mask_mod=mask_mod,
                                    seq_lengths=(Q_LEN, KV_LEN))


def _create_empty_block_mask(query: Tensor, key: Tensor) -> BlockMask:
    return BlockMask.from_kv_blocks(torch.ones(1, 1, 1, dtype=torch.int32),
                                    torch.zeros(1, 1, 1, 1, dtype=torch.int32),
                                    BLOCK_SIZE=_LARGE_SPARSE_BLOCK_SIZE, seq_lengths=(1, 1))


# ----------------------------------------------------------------------------- attention
_WARNINGS_SHOWN: set = set()
_FLEX_ATTENTION_DISABLE_COMPILE_DEBUG = False
_EAGER_WARNING = (
    "flex_attention called without torch.compile() - this will use an unfused implementation "
    "that materializes the full scores matrix instead of generating a fused kernel.\n\n"
    "SOLUTION: Use torch.compile(flex_attention)(...)\n\n"
    "If you want to debug your score_mod/mask_mod, you can set:\n"
    "torch.nn.attention.flex_attention._FLEX_ATTENTION_DISABLE_COMPILE_DEBUG = True\n\n"
    "This will allow you to use print statements or breakpoints. Note: This doesn't work with "
    "the backwards pass and may produce incorrect results.")


def _warn_once(warning_id: str, message: str, category: type = UserWarning) -> None:
    import warnings

    if warning_id not in _WARNINGS_SHOWN:
        warnings.warn(message, category, stacklevel=3)
        _WARNINGS_SHOWN.add(warning_id)


def _validate(query: Tensor, key: Tensor, value: Tensor, enable_gqa: bool,
              block_mask: BlockMask | None) -> None:
    if query.device != key.device or query.device != value.device:
        raise ValueError(f"Expected query, key, and value to have the same device type, but got "
                         f"query.device: {query.device}, key.device: {key.device}, and "
                         f"value.device: {value.device} instead.")
    if query.size(-1) != key.size(-1):
        raise ValueError(f"Expect query and key/value to have the same embedding dimension but "
                         f"got E={query.size(-1)} and E={key.size(-1)}.")
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise NotImplementedError("NYI: query, key, and value must be 4D tensors")
    if not enable_gqa and query.size(-3) != key.size(-3):
        raise ValueError(f"Expect query and key/value to have the same number of heads but got "
                         f"Hq={query.size(-3)} and Hkv={key.size(-3)}. Try setting "
                         f"enable_gqa=True for GQA.")
    if enable_gqa and query.size(1) % key.size(1) != 0:
        raise ValueError(f"Expect number of query heads to be a multiple of kv heads for GQA "
                         f"but got Hq={query.size(1)} and Hkv={key.size(1)}.")
    if query.size(0) != key.size(0) and block_mask is None:
        raise ValueError(f"Expect query and key/value to have the same batch size, or non-none "
                         f"block_mask, but got block_mask=None, Bq={query.size(0)}, and "
                         f"Bkv={key.size(0)}.")


def _check_lengths(block_mask: BlockMask, q_len: int, kv_len: int) -> None:
    if block_mask.BLOCK_SIZE == (_LARGE_SPARSE_BLOCK_SIZE, _LARGE_SPARSE_BLOCK_SIZE):
        return
    mask_q, mask_kv = block_mask.shape[-2], block_mask.shape[-1]
    got = (f"block_mask was created for block_mask.shape={block_mask.shape} but got "
           f"q_len={q_len} and kv_len={kv_len}. ")
    if q_len > mask_q or kv_len > mask_kv:
        raise ValueError(got + "As the block mask was created for a smaller length than you're "
                         "using it for, you likely need to create a new block mask.")
    if (q_len, kv_len) != (mask_q, mask_kv):
        raise ValueError(got + "As the block mask was created for a larger length than you're "
                         "using it for, you can either 1. create a new block mask with the "
                         "correct length, or 2. 'adjust' the existing block mask to the correct "
                         "length by calling block_mask._adjust(q_len, kv_len). This essentially "
                         "'crops' the block mask to the upper left corner, which does not work "
                         "for all mask_mods!")


def _math_attention(query: Tensor, key: Tensor, value: Tensor, score_mod: Callable,
                    mask_mod: Callable, scale: float) -> tuple:
    """torch's eager reference: out, and lse and row maxima in base 2."""
    group = query.size(1) // key.size(1)
    key, value = key.repeat_interleave(group, dim=1), value.repeat_interleave(group, dim=1)
    key = key.expand(query.size(0), *key.shape[1:])
    value = value.expand(query.size(0), *value.shape[1:])
    working = torch.float64 if query.dtype == torch.float64 else torch.float32
    scores = (query.to(working) @ key.to(working).transpose(-2, -1)) * scale
    index = _grid(*scores.shape)
    keep = mask_mod(*index).expand(scores.shape).to(torch.bool)
    modded = score_mod(scores, *index).expand(scores.shape)
    post = torch.where(keep, modded, torch.tensor(-math.inf, dtype=working))
    masked_rows = (post == -math.inf).all(dim=-1)
    lse = torch.where(masked_rows, -math.inf, post.logsumexp(dim=-1))
    max_scores = post.max(dim=-1)[0]
    # NOTE: a fully masked row is given finite scores before the softmax and zeroed after, so
    # its backward carries no NaN (torch's _safe_softmax returns 0 there as well)
    safe = torch.where(masked_rows.unsqueeze(-1), 0.0, post)
    probs = torch.where(masked_rows.unsqueeze(-1), 0.0, safe.softmax(dim=-1))
    out = probs.to(query.dtype) @ value.to(query.dtype)
    return out, lse / math.log(2), max_scores / math.log(2)


def flex_attention(query: Tensor, key: Tensor, value: Tensor, score_mod: Callable | None = None,
                   block_mask: BlockMask | None = None, scale: float | None = None,
                   enable_gqa: bool = False, return_lse: bool = False,
                   kernel_options: dict | None = None, *,
                   return_aux: AuxRequest | None = None) -> Any:
    """Attention of [B, H, L, E] queries over [B, Hkv, S, E] keys and [B, Hkv, S, Ev] values,
    with ``score_mod`` editing each score and ``block_mask`` restricting which are kept."""
    _validate(query, key, value, enable_gqa, block_mask)
    score_mod = _identity if score_mod is None else score_mod
    block_mask = _create_empty_block_mask(query, key) if block_mask is None else block_mask
    if block_mask.mask_mod is _sliced_mask_mod_error:
        raise RuntimeError("Cannot use mask_mod from a sliced BlockMask")
    _check_lengths(block_mask, query.size(-2), key.size(-2))
    scale = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    if return_lse and return_aux is not None:
        raise ValueError("Cannot specify both return_lse and return_aux. return_lse is "
                         "deprecated, please use return_aux=AuxRequest(lse=True) instead.")
    if return_lse:
        _warn_once("deprecated_return_lse", "return_lse is deprecated and will be removed in "
                   "v2.10. Please use return_aux=AuxRequest(lse=True) instead.", FutureWarning)
    if return_aux is not None and return_aux.max_scores and query.device.type == "cpu":
        raise NotImplementedError("Returning max scores is not supported on CPU/MPS.")
    if not _FLEX_ATTENTION_DISABLE_COMPILE_DEBUG:
        _warn_once("flex_attention_performance", _EAGER_WARNING)
    out, lse, max_scores = _math_attention(query, key, value, score_mod, block_mask.mask_mod,
                                           scale)
    lse, max_scores = lse * math.log(2), max_scores * math.log(2)
    if return_aux is not None:
        return out, AuxOutput(lse=lse if return_aux.lse else None,
                              max_scores=max_scores if return_aux.max_scores else None)
    return (out, lse) if return_lse else out


def install(attention: Any) -> None:
    """``torch.nn.attention.flex_attention`` is this module."""
    import sys

    this = sys.modules[__name__]
    attention.flex_attention = this
    sys.modules[f"{attention.__name__}.flex_attention"] = this
