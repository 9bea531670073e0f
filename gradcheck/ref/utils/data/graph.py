"""``torch.utils.data.graph``: the graph of a datapipe and the datapipes it reads from.
``traverse_dps(pipe)`` is ``{id(pipe): (pipe, <the same for each source pipe>)}``; a pipe's
sources are the datapipes among its attributes (directly, or in a list, tuple or dict).

>>> from gradcheck.ref.utils.data.datapipes import IterableWrapper
>>> source = IterableWrapper(range(3))
>>> graph = traverse_dps(source.map(abs))
>>> [type(pipe).__name__ for pipe, _ in graph.values()], len(graph[next(iter(graph))][1])
(['Mapper'], 1)
"""
from __future__ import annotations

from typing import Any

from gradcheck.ref.utils.data.datapipes import IterDataPipe, MapDataPipe

DataPipe = IterDataPipe | MapDataPipe
DataPipeGraph = dict[int, tuple[DataPipe, "DataPipeGraph"]]


def _sources(pipe: Any) -> list:
    found: list = []

    def visit(value: Any) -> None:
        if isinstance(value, (IterDataPipe, MapDataPipe)):
            if all(value is not seen for seen in found):
                found.append(value)
        elif isinstance(value, (list, tuple)):
            for item in value:
                visit(item)
        elif isinstance(value, dict):
            for item in value.values():
                visit(item)

    for value in vars(pipe).values():
        visit(value)
    return found


def traverse_dps(datapipe: Any) -> dict:
    """The datapipe graph rooted at ``datapipe`` (a pipe met twice is one key)."""
    return _traverse(datapipe, set())


def _traverse(datapipe: Any, on_path: set) -> dict:
    if id(datapipe) in on_path:
        return {id(datapipe): (datapipe, {})}
    on_path = on_path | {id(datapipe)}
    children: dict = {}
    for source in _sources(datapipe):
        children.update(_traverse(source, on_path))
    return {id(datapipe): (datapipe, children)}


def list_dps(graph: dict, exclude_dps: Any = None) -> list:
    """Every datapipe in ``graph``, each once, breadth first."""
    excluded = {id(dp) for dp in (exclude_dps or [])}
    seen, order, queue = set(), [], list(graph.items())
    while queue:
        key, (pipe, children) = queue.pop(0)
        if key in seen or key in excluded:
            continue
        seen.add(key)
        order.append(pipe)
        queue.extend(children.items())
    return order
