"""C-SPARQL `REGISTER STREAM` queries that read each other's streams: the order they run in.

A query producing stream <s> runs after the queries producing the streams it reads, so that at
each close it sees their events of that close (`rsep run --rule`, and the endpoint's producers,
rsep.plugin.service.producers). Queries reading each other's streams in a cycle are refused: an
evaluation at t' would read its own output at t'. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Generic, TypeVar

from rsep.plugin.errors import InvalidInput

T = TypeVar("T")


class CycleError(InvalidInput, Generic[T]):
    """Items reading each other's streams in a cycle: `cycle` lists them, the first one again
    at the end (a -> b -> a: a reads what b produces, b reads what a produces)."""

    def __init__(self, cycle: list[T]) -> None:
        super().__init__("the queries read each other's streams in a cycle")
        self.cycle = cycle


def dependency_order(
    items: Sequence[T], produced: Callable[[T], str | None], reads: Callable[[T], Iterable[str]]
) -> list[T]:
    """`items`, each after the items producing a stream it reads (otherwise in the given order);
    raises CycleError."""
    producers = {stream: index for index, item in enumerate(items) if (stream := produced(item)) is not None}
    ordered: list[int] = []
    placed: set[int] = set()
    visiting: list[int] = []

    def visit(index: int) -> None:
        if index in placed:
            return
        if index in visiting:
            raise CycleError([items[i] for i in [*visiting[visiting.index(index) :], index]])
        visiting.append(index)
        for stream in reads(items[index]):
            if stream in producers:
                visit(producers[stream])
        visiting.pop()
        placed.add(index)
        ordered.append(index)

    for index in range(len(items)):
        visit(index)
    return [items[i] for i in ordered]
