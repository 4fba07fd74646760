"""Generic walks over the frozen syntax-tree dataclasses (SPARQL nodes and event-algebra nodes).

`rebuild` is a bottom-up map: every field that holds a node or a tuple of nodes is rebuilt
first, then the callback sees the node and may return a replacement. Nodes that did not change
are returned as the same objects. Queries are small trees, so plain recursion is fine here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import fields, is_dataclass, replace
from typing import Any


def rebuild(node: Any, visit: Callable[[Any], Any]) -> Any:
    """`node` with `visit` applied bottom-up to every dataclass node inside it (itself included)."""
    if isinstance(node, tuple):
        items = tuple(rebuild(item, visit) for item in node)
        return node if all(a is b for a, b in zip(items, node, strict=True)) else items
    if not is_dataclass(node) or isinstance(node, type):
        return node
    changes = {}
    for field in fields(node):
        value = getattr(node, field.name)
        new = rebuild(value, visit)
        if new is not value:
            changes[field.name] = new
    return visit(replace(node, **changes) if changes else node)


def walk(node: Any) -> Iterator[Any]:
    """Every dataclass node inside `node` (itself included), parents before children."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, tuple):
            stack.extend(reversed(current))
        elif is_dataclass(current) and not isinstance(current, type):
            yield current
            stack.extend(reversed([getattr(current, f.name) for f in fields(current)]))
