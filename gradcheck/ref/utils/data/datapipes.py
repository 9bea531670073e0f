"""``torch.utils.data`` datapipes: ``IterDataPipe``/``MapDataPipe``, the
``functional_datapipe`` decorator that makes a pipe class a chainable method, and the basic
iterable pipes ``Mapper`` (``.map``), ``Filter`` (``.filter``) and ``Batcher`` (``.batch``).

>>> pipe = IterableWrapper(range(5)).map(lambda x: x * 10).filter(lambda x: x > 10)
>>> list(pipe)
[20, 30, 40]
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable, Iterable

from gradcheck.ref.utils.data.dataset import Dataset, IterableDataset


class IterDataPipe(IterableDataset):
    """An iterable dataset whose registered functional forms chain: ``pipe.map(fn)``.
    ``IterDataPipe.getstate_hook``, when set, decides what pickling a pipe saves."""

    functions: dict = {}
    getstate_hook: Callable | None = None

    def __getstate__(self) -> dict:
        state = self.__dict__
        if IterDataPipe.getstate_hook is not None:
            return IterDataPipe.getstate_hook(state)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def __getattr__(self, name: str) -> Any:
        if name in IterDataPipe.functions:
            cls = IterDataPipe.functions[name]
            return lambda *args, **kwargs: cls(self, *args, **kwargs)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


class MapDataPipe(Dataset):
    """A map-style dataset whose registered functional forms chain."""

    functions: dict = {}

    def __getattr__(self, name: str) -> Any:
        if name in MapDataPipe.functions:
            cls = MapDataPipe.functions[name]
            return lambda *args, **kwargs: cls(self, *args, **kwargs)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


class functional_datapipe:  # noqa: N801 - torch's name
    """``@functional_datapipe("name")`` on a pipe class: ``source.name(*args)`` builds it."""

    def __init__(self, name: str, enable_df_api_tracing: bool = False) -> None:
        self.name = name

    def __call__(self, cls: type) -> type:
        base = MapDataPipe if issubclass(cls, MapDataPipe) else IterDataPipe
        base.functions[self.name] = cls
        return cls


@functional_datapipe("map")
class Mapper(IterDataPipe):
    """Apply ``fn`` to each item (or to ``input_col`` of it, written to ``output_col``)."""

    def __init__(self, datapipe: Iterable, fn: Callable, input_col: Any = None,
                 output_col: Any = None) -> None:
        self.datapipe, self.fn, self.input_col, self.output_col = datapipe, fn, input_col, \
            output_col

    def _apply(self, item: Any) -> Any:
        if self.input_col is None:
            return self.fn(item)
        result = self.fn(item[self.input_col])
        item = list(item) if isinstance(item, tuple) else dict(item) if isinstance(
            item, dict) else item
        item[self.input_col if self.output_col is None else self.output_col] = result
        return item

    def __iter__(self):
        for item in self.datapipe:
            yield self._apply(item)

    def __len__(self) -> int:
        return len(self.datapipe)


@functional_datapipe("filter")
class Filter(IterDataPipe):
    """Keep the items for which ``filter_fn`` is true."""

    def __init__(self, datapipe: Iterable, filter_fn: Callable) -> None:
        self.datapipe, self.filter_fn = datapipe, filter_fn

    def __iter__(self):
        return (item for item in self.datapipe if self.filter_fn(item))


@functional_datapipe("batch")
class Batcher(IterDataPipe):
    """Lists of ``batch_size`` items (the last one shorter unless ``drop_last``)."""

    def __init__(self, datapipe: Iterable, batch_size: int, drop_last: bool = False) -> None:
        self.datapipe, self.batch_size, self.drop_last = datapipe, batch_size, drop_last

    def __iter__(self):
        batch = []
        for item in self.datapipe:
            batch.append(item)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch


class IterableWrapper(IterDataPipe):
    """An iterable as a pipe."""

    def __init__(self, iterable: Iterable, deepcopy: bool = True) -> None:
        self.iterable = iterable

    def __iter__(self):
        return self.iterable.__iter__()  # NOTE: `iter` is the namespace below

    def __len__(self) -> int:
        return len(self.iterable)


iter = SimpleNamespace(Mapper=Mapper, Filter=Filter, Batcher=Batcher,  # noqa: A001
                       IterableWrapper=IterableWrapper)
map = SimpleNamespace()  # noqa: A001


def _utils_namespace() -> SimpleNamespace:
    from gradcheck.ref.utils._import_utils import dill_available

    return SimpleNamespace(common=SimpleNamespace(DILL_AVAILABLE=dill_available()))


utils = _utils_namespace()
