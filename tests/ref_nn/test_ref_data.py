"""utils.data: batching, shuffling, drop_last and collation, against torch.utils.data."""
from __future__ import annotations

import collections

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st


def _as_lists(batch):
    if hasattr(batch, "tolist"):
        return batch.tolist()
    if isinstance(batch, dict):
        return {k: _as_lists(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(_as_lists(v) for v in batch) if not hasattr(batch, "_fields") \
            else [_as_lists(v) for v in batch]
    return batch


def _loader_batches(lib, n, batch_size, drop_last):
    x = lib.arange(n * 2, dtype=lib.float32).reshape(n, 2)
    y = lib.arange(n)
    ds = lib.utils.data.TensorDataset(x, y)
    loader = lib.utils.data.DataLoader(ds, batch_size=batch_size, drop_last=drop_last)
    return len(loader), [_as_lists(b) for b in loader]


@given(n=st.integers(1, 23), batch_size=st.integers(1, 8), drop_last=st.booleans())
def test_sequential_batches_match_torch(n, batch_size, drop_last, ref, torch):
    assert _loader_batches(ref, n, batch_size, drop_last) == \
        _loader_batches(torch, n, batch_size, drop_last)


def test_batch_dtypes_and_shapes(ref):
    ds = ref.utils.data.TensorDataset(ref.zeros(10, 3), ref.arange(10))
    x, y = next(iter(ref.utils.data.DataLoader(ds, batch_size=4)))
    assert tuple(x.shape) == (4, 3) and x.dtype == ref.float32
    assert tuple(y.shape) == (4,) and y.dtype == ref.int64


def _epoch_orders(lib, seed, epochs=3):
    ds = lib.utils.data.TensorDataset(lib.arange(20))
    loader = lib.utils.data.DataLoader(ds, batch_size=5, shuffle=True,
                                       generator=lib.Generator().manual_seed(seed))
    return [[v for (b,) in loader for v in b.tolist()] for _ in range(epochs)]


def test_shuffle_is_a_reproducible_permutation_per_epoch(ref):
    first, again, other = _epoch_orders(ref, 0), _epoch_orders(ref, 0), _epoch_orders(ref, 1)
    assert first == again, "the same generator seed must give the same order"
    assert first != other
    assert all(sorted(order) == list(range(20)) for order in first)
    assert first[0] != first[1], "each epoch draws a fresh permutation"
    assert first[0] != list(range(20))


def test_shuffle_with_global_seed_is_reproducible(ref):
    def order():
        ref.manual_seed(123)
        ds = ref.utils.data.TensorDataset(ref.arange(12))
        return [v for (b,) in ref.utils.data.DataLoader(ds, batch_size=4, shuffle=True)
                for v in b.tolist()]

    assert order() == order() and sorted(order()) == list(range(12))


def test_drop_last_drops_only_the_short_batch(ref):
    ds = ref.utils.data.TensorDataset(ref.arange(10))
    loader = ref.utils.data.DataLoader(ds, batch_size=4, drop_last=True, shuffle=True)
    sizes = [len(b) for (b,) in loader]
    assert sizes == [4, 4] and len(loader) == 2


SAMPLES = {
    "tuple": lambda lib: [(lib.tensor([1.0, 2.0]), 3), (lib.tensor([4.0, 5.0]), 6)],
    "dict": lambda lib: [{"x": lib.tensor([1.0]), "y": 0.5, "name": "a"},
                         {"x": lib.tensor([2.0]), "y": 1.5, "name": "b"}],
    "nested": lambda lib: [{"pair": [1, lib.tensor(2)]}, {"pair": [3, lib.tensor(4)]}],
    "numbers": lambda lib: [1.5, 2.5, 3.5],
    "ints": lambda lib: [1, 2, 3],
    "bools": lambda lib: [True, False],
    "numpy": lambda lib: [np.ones(2, dtype=np.float32), np.zeros(2, dtype=np.float32)],
    "namedtuple": lambda lib: [collections.namedtuple("P", "a b")(1, 2.0),
                               collections.namedtuple("P", "a b")(3, 4.0)],
}


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_default_collate_matches_torch(kind, ref, torch):
    r = ref.utils.data.default_collate(SAMPLES[kind](ref))
    t = torch.utils.data.default_collate(SAMPLES[kind](torch))
    assert type(r).__name__ == type(t).__name__ or type(t).__name__ == "Tensor"
    assert _as_lists(r) == _as_lists(t)

    def dtypes(batch):
        if hasattr(batch, "dtype"):
            return str(batch.dtype)
        if isinstance(batch, dict):
            return {k: dtypes(v) for k, v in batch.items()}
        if isinstance(batch, (list, tuple)):
            return [dtypes(v) for v in batch]
        return type(batch).__name__

    assert dtypes(r) == dtypes(t)


def test_collate_rejects_unknown_types(ref):
    with pytest.raises(TypeError, match="collate_fn"):
        ref.utils.data.default_collate([object(), object()])


def test_subset_concat_and_random_split(ref):
    data = ref.utils.data
    ds = data.TensorDataset(ref.arange(10))
    sub = data.Subset(ds, [9, 0, 5])
    assert [s[0].item() for s in sub] == [9, 0, 5] and len(sub) == 3
    both = data.ConcatDataset([sub, sub])
    assert len(both) == 6 and both[4][0].item() == 0
    parts = data.random_split(ds, [0.5, 0.3, 0.2], generator=ref.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [5, 3, 2]
    seen = sorted(p[i][0].item() for p in parts for i in range(len(p)))
    assert seen == list(range(10))
    with pytest.raises(ValueError, match="does not equal the length"):
        data.random_split(ds, [3, 3])


def test_tensor_dataset_size_mismatch_is_clear(ref):
    with pytest.raises(ValueError, match="Size mismatch"):
        ref.utils.data.TensorDataset(ref.zeros(3), ref.zeros(4))


def test_custom_dataset_and_collate_fn(ref):
    class Squares(ref.utils.data.Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return {"x": float(i), "y": float(i * i)}

    loader = ref.utils.data.DataLoader(Squares(), batch_size=2,
                                       collate_fn=lambda batch: [s["y"] for s in batch])
    assert list(loader) == [[0.0, 1.0], [4.0, 9.0], [16.0]]
    batches = list(ref.utils.data.DataLoader(Squares(), batch_size=5))
    assert batches[0]["y"].dtype == ref.float64
    assert batches[0]["y"].tolist() == [0.0, 1.0, 4.0, 9.0, 16.0]


def test_iterable_dataset_batches_like_torch(ref, torch):
    def run(lib, drop_last):
        class Stream(lib.utils.data.IterableDataset):
            def __iter__(self):
                return iter([(float(i), i) for i in range(7)])

        loader = lib.utils.data.DataLoader(Stream(), batch_size=3, drop_last=drop_last)
        return [_as_lists(b) for b in loader]

    for drop_last in (False, True):
        assert run(ref, drop_last) == run(torch, drop_last)
    with pytest.raises(ValueError, match="IterableDataset"):
        ref.utils.data.DataLoader(ref.utils.data.IterableDataset(), shuffle=True)
