"""A tiny reader for SPAseq sequence expressions over named GPMs, so runtime
tests can state patterns as the paper writes them (`A, B+; C`), independent
of the grammar. GPMs here match whatever the test says they match."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from rsep.plugin.algebra.events import (
    Conjunction,
    Disjunction,
    EventPattern,
    GraphPatternEvent,
    KleenePlus,
    Negation,
    OptionalEvent,
    SelectionStrategy,
    Sequence,
)
from rsep.plugin.algebra.sparql import GroupPattern
from rsep.plugin.compile.nfa_compiler import compile_automaton
from rsep.plugin.nfa.automaton import Automaton, ResidualFilter
from rsep.plugin.nfa.runtime import Group, Match, Runtime

_TOKEN = re.compile(r"\s*([A-Za-z][A-Za-z0-9]*|[(),;:+?!&|])")


def parse(text: str, kleene_iteration: SelectionStrategy | None = None) -> EventPattern:
    tokens = _TOKEN.findall(text)
    pos = 0

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> str:
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def atom() -> EventPattern:
        if peek() == "(":
            take()
            inner = alternatives()
            assert take() == ")"
            return inner
        return GraphPatternEvent(take(), ("urn:s",), GroupPattern())

    def conj() -> EventPattern:
        parts = [atom()]
        while peek() == "&":
            take()
            parts.append(atom())
        return parts[0] if len(parts) == 1 else Conjunction(tuple(parts))

    def alternatives() -> EventPattern:
        parts = [conj()]
        while peek() == "|":
            take()
            parts.append(conj())
        return parts[0] if len(parts) == 1 else Disjunction(tuple(parts))

    def element(first: bool) -> EventPattern:
        inner = alternatives()
        mod = peek()
        if mod == "+":
            take()
            default = SelectionStrategy.SKIP_TILL_NEXT if first else SelectionStrategy.STRICT
            return KleenePlus(inner, kleene_iteration or default)
        if mod == "?":
            take()
            return OptionalEvent(inner)
        if mod == "!":
            take()
            return Negation(inner)
        return inner

    elements = [element(True)]
    strategies = []
    while peek() in (",", ";", ":"):
        strategies.append(SelectionStrategy(take()))
        elements.append(element(False))
    assert peek() is None, f"trailing tokens in {text!r}"
    return elements[0] if len(elements) == 1 else Sequence(tuple(elements), tuple(strategies))


def gpm_names(pattern: EventPattern) -> list[str]:
    if isinstance(pattern, GraphPatternEvent):
        return [pattern.name]
    children: Iterable[EventPattern]
    if isinstance(pattern, Sequence):
        children = pattern.elements
    elif isinstance(pattern, (Conjunction, Disjunction)):
        children = pattern.operands
    else:
        children = (pattern.element,)  # type: ignore[union-attr]
    names: list[str] = []
    for child in children:
        names += [n for n in gpm_names(child) if n not in names]
    return names


Event = tuple[float, Mapping[str, list[dict[str, str]]]]
"""(time, {gpm name: [mappings the GPM yields on this event]})."""


def compile_pattern(
    text: str,
    variables: Mapping[str, Iterable[str]] | None = None,
    residuals: Mapping[str, ResidualFilter] | None = None,
    within: float | None = None,
    key: Iterable[str] = (),
    kleene_iteration: SelectionStrategy | None = None,
) -> tuple[Automaton, dict[str, int]]:
    pattern = parse(text, kleene_iteration)
    index = {name: i for i, name in enumerate(gpm_names(pattern))}
    variables = variables or {}
    filters = tuple((residuals[name],) if residuals and name in residuals else () for name in index)
    automaton = compile_automaton(
        pattern,
        index,
        lambda g: frozenset(variables.get(g.name, ())),
        filters,
        key=frozenset(key),
        within=within,
    )
    return automaton, index


def groups_of(events: list[Event], index: Mapping[str, int]) -> list[Group]:
    """Dense ranks over all events (those matching nothing too); event ids are
    positions in `events`."""
    times = sorted({t for t, _ in events})
    rank = {t: r for r, t in enumerate(times)}
    groups: dict[float, Group] = {}
    for event_id, (time, matched) in enumerate(events):
        group = groups.setdefault(time, Group(rank[time], time, {}))
        for name, mappings in matched.items():
            rows = group.rows.setdefault(index[name], [])  # type: ignore[attr-defined]
            rows.extend((event_id, m) for m in mappings)
    return [groups[t] for t in times if groups[t].rows]


def run(text: str, events: list[Event], **options: object) -> list[Match]:
    automaton, index = compile_pattern(text, **options)  # type: ignore[arg-type]
    runtime = Runtime(automaton)
    _, matches = runtime.process(runtime.new_state(), groups_of(events, index))
    return sorted(matches, key=Match.key)


def events_of(matches: list[Match]) -> list[tuple[int, ...]]:
    return [m.events for m in matches]
