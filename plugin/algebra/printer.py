"""A readable dump of event-algebra trees, for tests, logs and `rsep explain`.

Event operators print as an indented tree in RSEP-QL/SPAseq notation; graph
patterns inside them print as SPARQL (via the serializer), so a dump reads
like the query the user wrote, with everything resolved.
"""

from __future__ import annotations

from rsep.plugin.algebra.events import (
    Conjunction,
    CountWindow,
    Disjunction,
    Equals,
    EqualsOptional,
    EventBind,
    EventFilter,
    EventJoin,
    EventQuery,
    EventValues,
    First,
    GraphPatternEvent,
    KleenePlus,
    LandmarkWindow,
    Last,
    MatchElement,
    Negation,
    NowWindow,
    OptionalEvent,
    OptionalSequence,
    SelectForm,
    Sequence,
    TimeWindow,
    Window,
    WindowElement,
)
from rsep.plugin.algebra.serialize import to_sparql
from rsep.plugin.algebra.sparql import GroupPattern, Node

_INDENT = "  "
_BINARY = {Equals: "EQUALS", OptionalSequence: "OPTIONALSEQ", EqualsOptional: "EQUALSOPTIONAL"}


def dump(node: Node) -> str:
    """Multi-line text of an EventQuery, an event pattern or a SPARQL node."""
    return "\n".join(_lines(node, 0))


def _lines(node: Node, depth: int) -> list[str]:
    pad = _INDENT * depth
    if isinstance(node, EventQuery):
        return _query_lines(node)
    if isinstance(node, GraphPatternEvent):
        streams = ", ".join(f"<{s}>" for s in node.streams) or "every stream"
        return [f"{pad}EVENT {node.name} ON {streams} {_one_line(node.pattern)}"]
    if isinstance(node, Sequence):
        lines = [f"{pad}SEQ"]
        for index, element in enumerate(node.elements):
            if index:
                lines.append(f"{pad}{_INDENT}'{node.strategies[index - 1].value}'")
            lines += _lines(element, depth + 1)
        return lines
    if isinstance(node, KleenePlus):
        return [f"{pad}PLUS iterations '{node.iteration.value}'", *_lines(node.element, depth + 1)]
    unary = {Negation: "NOT", OptionalEvent: "OPTIONAL", First: "FIRST", Last: "LAST"}
    for kind, label in unary.items():
        if isinstance(node, kind):
            return [f"{pad}{label}", *_lines(node.element, depth + 1)]  # type: ignore[attr-defined]
    if isinstance(node, (Conjunction, Disjunction, EventJoin)):
        label = {Conjunction: "AND (same time)", Disjunction: "OR", EventJoin: "JOIN"}[type(node)]
        return [f"{pad}{label}", *(line for op in node.operands for line in _lines(op, depth + 1))]
    if isinstance(node, (Equals, OptionalSequence, EqualsOptional)):
        label = {Equals: "EQUALS", OptionalSequence: "OPTIONALSEQ", EqualsOptional: "EQUALSOPTIONAL"}[
            type(node)
        ]
        return [f"{pad}{label}", *_lines(node.left, depth + 1), *_lines(node.right, depth + 1)]
    if isinstance(node, EventFilter):
        return [f"{pad}FILTER {to_sparql(node.expr)}", *_lines(node.element, depth + 1)]
    if isinstance(node, EventBind):
        visible = "" if node.leading is None else f" (reading the {node.leading} below)"
        return [
            f"{pad}BIND({to_sparql(node.expr)} AS ?{node.var.name}){visible}",
            *_lines(node.element, depth + 1),
        ]
    if isinstance(node, EventValues):
        return [f"{pad}{' '.join(to_sparql(node.data).split())}", *_lines(node.element, depth + 1)]
    if isinstance(node, MatchElement):
        return [f"{pad}MATCH", *_lines(node.pattern, depth + 1)]
    if isinstance(node, WindowElement):
        name = f"<{node.stream}>" if node.stream else "(all windows merged)"
        return [f"{pad}WINDOW {name} {_one_line(node.pattern)}"]
    return [pad + " ".join(to_sparql(node).split())]


def _query_lines(query: EventQuery) -> list[str]:
    form = query.form
    if isinstance(form, SelectForm):
        names = "*" if form.projection is None else " ".join(f"?{p.var.name}" for p in form.projection)
        head = f"SELECT{' DISTINCT' if form.distinct else ''} {names}"
    else:
        head = "CONSTRUCT"
    lines = [f"{query.dialect.name}: {head}"]
    if query.within is not None:
        lines.append(f"WITHIN {query.within.seconds:g} s")
    for stream in query.streams:
        alias = f"{stream.alias} " if stream.alias else ""
        window = f" {_window(stream.window)}" if stream.window is not None else ""
        lines.append(f"STREAM {alias}<{stream.iri}>{window}")
    if query.partition_by:
        lines.append("PARTITION BY " + " ".join(f"?{v.name}" for v in query.partition_by))
    lines.append(f"CONSUMPTION {query.consumption.value}")
    if query.solution_projection is not None:
        lines.append("PROJECT " + " ".join(f"?{p.var.name}" for p in query.solution_projection))
    for element in query.where.elements:
        lines += _lines(element, 0)
    return lines


def _window(window: Window) -> str:
    if isinstance(window, TimeWindow):
        slide = f" STEP {window.slide.seconds:g}s" if window.slide is not None else ""
        return f"[RANGE {window.width.seconds:g}s{slide}]"
    if isinstance(window, CountWindow):
        return f"[TRIPLES {window.size}]"
    return "[ALL]" if isinstance(window, LandmarkWindow) else "[NOW]" if isinstance(window, NowWindow) else ""


def _one_line(pattern: GroupPattern) -> str:
    return " ".join(to_sparql(pattern).split())
