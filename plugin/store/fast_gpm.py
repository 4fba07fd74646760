"""Simple GPMs matched in Python against each event's triples: the GPM stage's fast path.

A simple GPM (rsep.plugin.compile.simple_gpm) is a basic graph pattern with FILTERs over its own
variables. Loading a batch into an Oxigraph store and running a query per GPM costs more than
matching such a pattern directly: an event holds a handful of triples, so each event's triples
are read once per batch into a small index by predicate (`event_index`) and every triple pattern
is a scan of one predicate's pairs; the solutions are computed once per event for all the GPMs
whose patterns are equal up to their variables' names (the stock V-shape's A, B and C), and each
GPM makes its rows from them.

The rows are what the Oxigraph path gives, term for term and as a bag per event:

- terms are printed as Oxigraph gives back what it stored (`rsep.plugin.expr.stored_nt`, property
  tested against a real Store): `"01"^^xsd:integer` is `"1"^^xsd:integer`, a tag is lower case, a
  pattern's constants are read the same way (Oxigraph encodes them as it encodes stored terms);
- an event graph is a set: two triples that are one once stored are matched once;
- a BGP's solutions are one per assignment of its variables and blank nodes (a blank node of the
  pattern is a variable that is not projected), so a pattern matching twice gives two rows;
- FILTERs are evaluated by `ExactFilter`, which hands an event to Oxigraph where the evaluator
  might answer otherwise; an event whose text is not canonical N-Triples as this module reads it
  (a triple term, an escaped IRI, ...) goes to Oxigraph too (`Matched.missed`).

Events come out in the reverse of their order in the batch, and an event's rows in the reverse
order of its triples for a one-pattern GPM: the order Oxigraph's batch store usually gives. It
fixes none (it differs between runs when events share triples), and no answer depends on it: the
runtime offers a timestamp's candidates by (events, bindings), whatever their order, as the Spark
stage's shuffle requires (rsep.plugin.nfa.runtime, `offer_order`; docs/semantics.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from rsep.plugin.algebra.analysis import map_expr
from rsep.plugin.algebra.sparql import IRI, BNode, Expr, Literal, TriplePattern, Var
from rsep.plugin.algebra.terms import literal_nt
from rsep.plugin.compile.simple_gpm import SimpleGpm
from rsep.plugin.expr import stored_nt
from rsep.plugin.expr.values import parse_term
from rsep.plugin.graph_events import GraphEvent
from rsep.plugin.store.exact_filters import ExactFilter

Index = dict[str, dict[tuple[str, str], None]]
"""An event's triples by predicate: its (subject, object) pairs in the event's order, each once."""
Solution = tuple[str, ...]
"""A BGP's solution: the terms of its slots (variables and blank nodes, `Bgp.slots`)."""
Row = tuple[int, dict[str, str]]

_CACHE_SIZE: Final = 1 << 16
_STORED: dict[str, str] = {}
"""Term text -> its stored form ("" when this module does not read it): shared by every batch,
emptied when full. Subjects, predicates and objects repeat across events."""
_XSD = "http://www\\.w3\\.org/2001/XMLSchema#"
_CANONICAL: Final = re.compile(
    rf'"-?(?=[0-9.]{{1,14}}")(?:0|[1-9][0-9]*)(?:\.[0-9]*[1-9])?"\^\^<{_XSD}double>'
    rf'|"(?:0|-?[1-9][0-9]{{0,17}})"\^\^<{_XSD}integer>'
    rf'|"(?:0|-?[1-9][0-9]{{0,18}}|-?(?:0|[1-9][0-9]{{0,18}})\.[0-9]{{0,17}}[1-9])"\^\^<{_XSD}decimal>'
    rf'|"(?:true|false)"\^\^<{_XSD}boolean>'
)
"""Typed literals already in Oxigraph's stored form (a shortcut before `stored_nt`):

- a double in positional form without trailing zeros, in at most 14 characters: its digits are
  the shortest that read back as that double (any other decimal of as many digits is at least
  5e-16 away relatively, more than half a binary64 ulp), which Oxigraph prints;
- a 64-bit integer, a decimal with at most 18 fractional digits below 1e19, a canonical boolean."""
_PLAIN_NODE: Final = re.compile(r"<[^<>\s\\\"{}|^`]*>|_:[^\s<>\"]+")
"""An IRI or blank node as Oxigraph prints it (escapes and triple terms excluded)."""


def stored_term(text: str) -> str:
    """The form Oxigraph gives back for an N-Triples term it stored, "" if not read here."""
    found = _STORED.get(text)
    if found is None:
        if len(_STORED) >= _CACHE_SIZE:
            _STORED.clear()
        found = _STORED[text] = _stored(text)
    return found


def forget_terms() -> None:
    """Empties the term and event caches (and `stored_nt`'s): for measurements that replay one
    stream."""
    _STORED.clear()
    _INDEXED.clear()
    stored_nt.cache_clear()


def _stored(text: str) -> str:
    if not text.startswith('"'):
        return text if _PLAIN_NODE.fullmatch(text) else ""
    if _CANONICAL.fullmatch(text):
        return text
    try:
        return stored_nt(text)
    except ValueError:
        return ""


_INDEXED: dict[str, Index | None] = {}
"""`event_index` of the events read lately, by their text: every query reading a log position
gets the same event (the engine reads a batch once for all queries there), so with many queries
an event's triples are indexed once, not once per query. Cleared when full."""
_INDEXED_LIMIT = 20_000


def event_index(text: str) -> Index | None:
    """The event's triples (canonical N-Triples, one per line) by predicate, in stored form;
    None when a line is not read here (its event then goes to Oxigraph). Memoised by text
    (`_INDEXED`): the index is read, never changed, by the matchers."""
    found = _INDEXED.get(text, _UNSEEN)
    if found is not _UNSEEN:
        return found  # type: ignore[return-value]
    if len(_INDEXED) >= _INDEXED_LIMIT:
        _INDEXED.clear()
    index = _INDEXED[text] = _index(text)
    return index


_UNSEEN = object()


def _index(text: str) -> Index | None:
    index: Index = {}
    cache = _STORED
    for line in text.split("\n"):
        if not line:
            continue
        parts = line.split(" ", 2)
        if len(parts) != 3 or not parts[2].endswith(" ."):
            return None
        subject, predicate, rest = parts
        obj = rest[:-2]
        s = cache.get(subject) or stored_term(subject)
        p = cache.get(predicate) or stored_term(predicate)
        o = cache.get(obj) or stored_term(obj)
        if not (s and p and o) or s[0] == '"' or p[0] != "<":
            return None
        pairs = index.get(p)
        if pairs is None:
            index[p] = {(s, o): None}
        else:
            pairs[(s, o)] = None
    return index


# --------------------------------------------------------------------------- basic graph patterns

_CONST, _BOUND, _NEW = 0, 1, 2
Position = tuple[int, str, int]
"""How a step reads one position of a triple: (_CONST, stored term, -1), or (_BOUND or _NEW, "",
slot): a slot bound by an earlier position (tested) or by this one (bound here)."""
Pairs = dict[tuple[str, str], None]
Step = Callable[[Index, list[str], list[Solution]], None]
Scan = Callable[[Pairs, Index, list[str], list[Solution]], None]
Test = Callable[[tuple[str, str], list[str]], bool]


@dataclass(frozen=True, slots=True)
class Shape:
    """A BGP up to the names of its variables: (subject, predicate, object) positions of its triple
    patterns in join order, slots numbered in the order a step binds them (predicate, subject,
    object); GPMs of one shape share their solutions."""

    steps: tuple[tuple[Position, Position, Position], ...]
    slots: int


def shape_of(triples: Sequence[TriplePattern]) -> tuple[Shape, tuple[Var | BNode, ...]]:
    """The BGP's shape, and what each slot stands for."""
    slot_of: dict[Var | BNode, int] = {}

    def position(term: object) -> Position:
        if not isinstance(term, (Var, BNode)):
            return _CONST, constant_term(term), -1
        slot = slot_of.get(term)
        if slot is None:
            slot = slot_of[term] = len(slot_of)
            return _NEW, "", slot
        return _BOUND, "", slot

    steps = []
    for triple in _join_order(triples):
        p = position(triple.predicate)  # a step reads the predicate first
        s = position(triple.subject)
        steps.append((s, p, position(triple.object)))
    return Shape(tuple(steps), len(slot_of)), tuple(slot_of)


def constant_term(term: object) -> str:
    """A pattern's constant in stored form (Oxigraph encodes it as it encodes a stored term)."""
    if isinstance(term, IRI):
        return f"<{term.value}>"
    assert isinstance(term, Literal)
    return stored_nt(literal_nt(term.lexical, term.datatype, term.language))


def _join_order(triples: Sequence[TriplePattern]) -> list[TriplePattern]:
    """Greedy: next the pattern with the most constant or already bound positions (the first
    such in the written order)."""
    left = list(triples)
    bound: set[Var | BNode] = set()
    ordered = []
    while left:
        best = max(left, key=lambda triple: sum(_fixed(term, bound) for term in _terms(triple)))
        left.remove(best)
        ordered.append(best)
        bound.update(term for term in _terms(best) if isinstance(term, (Var, BNode)))
    return ordered


def _terms(triple: TriplePattern) -> tuple[object, object, object]:
    return triple.subject, triple.predicate, triple.object


def _fixed(term: object, bound: set[Var | BNode]) -> bool:
    return not isinstance(term, (Var, BNode)) or term in bound


class Bgp:
    """A shape compiled to nested loops: `solutions(index)` are its solutions in an event."""

    __slots__ = ("_first", "slots")

    def __init__(self, shape: Shape) -> None:
        self.slots = shape.slots
        step: Step = _emit
        for s, p, o in reversed(shape.steps):
            step = _step(s, p, o, step)
        self._first = step

    def solutions(self, index: Index) -> list[Solution]:
        found: list[Solution] = []
        self._first(index, [""] * self.slots, found)
        return found


def _emit(index: Index, values: list[str], out: list[Solution]) -> None:
    out.append(tuple(values))


def _step(s: Position, p: Position, o: Position, then: Step) -> Step:
    """One triple pattern: the pairs of its predicate (of every predicate when that is a new
    slot), those that agree with the constants and bound slots, the new slots bound."""
    scan = _scanner(s, o, then)
    p_mode, predicate, slot = p
    if p_mode == _CONST:

        def constant_predicate(index: Index, values: list[str], out: list[Solution]) -> None:
            pairs = index.get(predicate)
            if pairs is not None:
                scan(pairs, index, values, out)

        return constant_predicate
    if p_mode == _BOUND:

        def bound_predicate(index: Index, values: list[str], out: list[Solution]) -> None:
            pairs = index.get(values[slot])
            if pairs is not None:
                scan(pairs, index, values, out)

        return bound_predicate

    def each_predicate(index: Index, values: list[str], out: list[Solution]) -> None:
        for name, pairs in index.items():
            values[slot] = name
            scan(pairs, index, values, out)

    return each_predicate


def _scanner(s: Position, o: Position, then: Step) -> Scan:
    """The loop over one predicate's pairs (last first, as Oxigraph's store gives them), the
    common cases written out: this loop is the fast path's hot spot."""
    (s_mode, _, s_slot), (o_mode, _, o_slot) = s, o
    if s_mode == _NEW and o_mode == _NEW:

        def new_new(pairs: Pairs, index: Index, values: list[str], out: list[Solution]) -> None:
            for subject, obj in reversed(pairs):
                values[s_slot] = subject
                values[o_slot] = obj
                then(index, values, out)

        return new_new
    if s_mode == _BOUND and o_mode == _NEW:

        def bound_new(pairs: Pairs, index: Index, values: list[str], out: list[Solution]) -> None:
            wanted = values[s_slot]
            for subject, obj in reversed(pairs):
                if subject == wanted:
                    values[o_slot] = obj
                    then(index, values, out)

        return bound_new
    subject_test, object_test = _test(0, s), _test(1, o)

    def general(pairs: Pairs, index: Index, values: list[str], out: list[Solution]) -> None:
        for pair in reversed(pairs):
            if subject_test(pair, values) and object_test(pair, values):
                then(index, values, out)

    return general


def _test(at: int, position: Position) -> Test:
    """Does a pair agree at `at` (0: subject, 1: object) with a constant or a bound slot? A new
    slot is bound (the subject's first, so that `?x <p> ?x` tests the object against it)."""
    mode, term, slot = position
    if mode == _CONST:
        return lambda pair, values: pair[at] == term
    if mode == _BOUND:
        return lambda pair, values: pair[at] == values[slot]

    def bind(pair: tuple[str, str], values: list[str]) -> bool:
        values[slot] = pair[at]
        return True

    return bind


# --------------------------------------------------------------------------- one GPM


@dataclass(slots=True)
class Matched:
    """One GPM's rows in a stream's events, the events Oxigraph must match instead (an event it
    cannot read, a FILTER it cannot tell), and where their rows go: (position in `rows`, event
    id), in `rows`' order (`spliced`)."""

    rows: list[Row] = field(default_factory=list)
    missed: list[tuple[int, GraphEvent]] = field(default_factory=list)
    holes: list[tuple[int, int]] = field(default_factory=list)

    def miss(self, event_id: int, event: GraphEvent) -> None:
        self.missed.append((event_id, event))
        self.holes.append((len(self.rows), event_id))


class FastGpm:
    """One simple GPM's rows, made from its shape's solutions."""

    __slots__ = ("bgp", "filters", "make", "named")

    def __init__(self, simple: SimpleGpm, bgps: dict[Shape, Bgp]) -> None:
        shape, slots = shape_of(simple.triples)
        bgp = bgps.get(shape)
        if bgp is None:
            bgp = bgps[shape] = Bgp(shape)
        self.bgp = bgp
        slot_of = {term.name: slot for slot, term in enumerate(slots) if isinstance(term, Var)}
        self.named = tuple(slot_of.items())
        self.make = row_maker(simple.projection, tuple(slot_of[name] for name in simple.projection))
        self.filters = tuple(ExactFilter(stored_constants(expr)) for expr in simple.filters)

    def admit(self, event_id: int, found: list[Solution], rows: list[Row]) -> bool:
        """Appends the event's rows that pass the filters; False, with nothing appended, when a
        filter cannot tell (`ExactFilter`)."""
        kept: list[Row] = []
        for solution in found:
            named = {name: solution[slot] for name, slot in self.named}
            verdicts = [check(named) for check in self.filters]
            if None in verdicts:
                return False
            if all(verdicts):
                kept.append((event_id, self.make(solution)))
        rows.extend(kept)
        return True


class FastStage:
    """The simple GPMs of a query, matched together event by event: each event's triples are read
    once, each shape's solutions computed once, and nothing is kept between events but the rows
    (which spares the garbage collector: intermediate structures kept for a whole batch cost
    more in collections than in building them)."""

    def __init__(self, simple: dict[int, SimpleGpm]) -> None:
        bgps: dict[Shape, Bgp] = {}
        self.gpms = {index: FastGpm(gpm, bgps) for index, gpm in simple.items()}

    def match(self, events: Sequence[tuple[int, GraphEvent]], indices: Iterable[int]) -> dict[int, Matched]:
        """The rows of the GPMs `indices` in `events` (of one stream), events last first (module
        docstring)."""
        out = {index: Matched() for index in indices}
        groups: dict[Bgp, list[tuple[FastGpm, Matched]]] = {}
        for index, matched in out.items():
            gpm = self.gpms[index]
            groups.setdefault(gpm.bgp, []).append((gpm, matched))
        shapes = [
            (
                bgp.solutions,
                [(gpm.make, matched.rows) for gpm, matched in items if not gpm.filters],
                [(gpm, matched) for gpm, matched in items if gpm.filters],
            )
            for bgp, items in groups.items()
        ]
        for event_id, event in reversed(events):
            triples = event_index(event.ntriples)
            if triples is None:
                for matched in out.values():
                    matched.miss(event_id, event)
                continue
            for solve, plain, filtered in shapes:
                found = solve(triples)
                if not found:
                    continue
                for make, rows in plain:
                    for solution in found:
                        rows.append((event_id, make(solution)))
                for gpm, matched in filtered:
                    if not gpm.admit(event_id, found, matched.rows):
                        matched.miss(event_id, event)
        return out


def stored_constants(expr: Expr) -> Expr:
    """The expression with its literals in stored form: Oxigraph evaluates the constants of a
    query as it encoded them (`sameTerm(?x, "01"^^xsd:integer)` holds for a stored 1)."""

    def stored(node: Expr) -> Expr | None:
        if not isinstance(node, Literal):
            return None
        value = parse_term(stored_nt(literal_nt(node.lexical, node.datatype, node.language)))
        return Literal(value.lex, value.dt, value.lang)

    return map_expr(expr, stored)


def row_maker(names: tuple[str, ...], slots: tuple[int, ...]) -> Callable[[Solution], dict[str, str]]:
    """A solution -> the row of `names` (the terms of `slots`); dict displays up to four names,
    twice as fast as `dict(zip(...))`."""
    if len(names) == 1:
        (a,), (i,) = names, slots
        return lambda solution: {a: solution[i]}
    if len(names) == 2:
        (a, b), (i, j) = names, slots
        return lambda solution: {a: solution[i], b: solution[j]}
    if len(names) == 3:
        (a, b, c), (i, j, k) = names, slots
        return lambda solution: {a: solution[i], b: solution[j], c: solution[k]}
    if len(names) == 4:
        (a, b, c, d), (i, j, k, m) = names, slots
        return lambda solution: {a: solution[i], b: solution[j], c: solution[k], d: solution[m]}
    return lambda solution: dict(zip(names, [solution[i] for i in slots], strict=True))


def spliced(rows: list[Row], holes: Iterable[tuple[int, int]], oxigraph: list[Row]) -> list[Row]:
    """`rows` with Oxigraph's rows of the missed events put where those events' rows go."""
    by_event: dict[int, list[Row]] = {}
    for row in oxigraph:
        by_event.setdefault(row[0], []).append(row)
    out: list[Row] = []
    start = 0
    for position, event_id in holes:
        out.extend(rows[start:position])
        out.extend(by_event.get(event_id, ()))
        start = position
    out.extend(rows[start:])
    return out
