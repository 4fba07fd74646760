"""Hypothesis strategies: small streams and EP-SPARQL patterns over a tiny vocabulary, and the
settings the property tests run them with (`fast`, scaled by RSEP_EPSPARQL_SCALE)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.epsparql.harness import Event
from tests.epsparql.reference import (
    BGP,
    EX,
    TP,
    Bin,
    Extend,
    Filter,
    LeftJoin,
    PathTP,
    Pattern,
    Values,
    iri,
    variables,
)

PREDICATES = [iri("p"), iri("q"), iri("r")]
NODES = [iri("a"), iri("b"), iri("c")]
VARIABLES = ["?x", "?y", "?z", "?w"]

TEMPORAL_OPS = ["JOIN", "SEQ", "EQUALS", "UNION", "OPTIONALSEQ", "EQUALSOPTIONAL", "OPTIONAL"]
SPARQL_OPS = ["JOIN", "UNION", "OPTIONAL"]

SCALE = float(os.environ.get("RSEP_EPSPARQL_SCALE", "1"))
"""Multiplies every example count; any other value than 1 also draws fresh random
examples instead of the fixed (derandomized) ones, for a deeper search."""


def fast(examples: int) -> settings:
    return settings(
        max_examples=max(1, int(examples * SCALE)),
        deadline=None,
        derandomize=SCALE == 1,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


def triples() -> st.SearchStrategy[tuple[str, str, str]]:
    """Over two nodes mostly (a third one rarely), so that random patterns match often."""
    node = st.sampled_from([NODES[0], NODES[1], NODES[0], NODES[1], NODES[2]])
    return st.tuples(node, st.sampled_from(PREDICATES), node)


@st.composite
def streams(draw: st.DrawFn, max_events: int = 7, max_time: int = 4) -> list[Event]:
    """2..max_events events at integer times 0..max_time (several may share a time), 1-3 triples each."""
    count = draw(st.integers(2, max_events))
    events = [
        (
            float(draw(st.integers(0, max_time))),
            draw(st.lists(triples(), min_size=1, max_size=3, unique=True)),
        )
        for _ in range(count)
    ]
    return sorted(events, key=lambda e: e[0])


def occurrences(events: Sequence[Event]) -> set[tuple[tuple[str, str, str], float, float]]:
    return {(triple, time, time) for time, graph in events for triple in graph}


def triple_patterns() -> st.SearchStrategy[TP]:
    subject = st.sampled_from([*VARIABLES[:2], *VARIABLES[:2], NODES[0]])
    obj = st.sampled_from(["?z", "?y", "?x", "?w", NODES[0], NODES[1]])
    return st.builds(TP, subject, st.sampled_from(PREDICATES), obj)


def bgps(max_size: int = 6) -> st.SearchStrategy[BGP]:
    """Juxtaposed triple patterns in one group (a join group for rsep)."""
    return st.builds(BGP, st.lists(triple_patterns(), min_size=2, max_size=max_size).map(tuple))


def path_steps() -> st.SearchStrategy[str]:
    first, second = st.sampled_from(PREDICATES), st.sampled_from(PREDICATES)
    return st.one_of(first, first.map(lambda x: "^" + x), st.builds(lambda x, y: f"({x}|{y})", first, second))


def path_patterns() -> st.SearchStrategy[PathTP]:
    """`s p1/p2[/p3] o`: a path over two or three triple occurrences."""
    subject = st.sampled_from([*VARIABLES[:2], NODES[0]])
    obj = st.sampled_from(["?z", "?y", "?x", NODES[1]])
    return st.builds(PathTP, subject, st.lists(path_steps(), min_size=2, max_size=3).map(tuple), obj)


@dataclass(frozen=True)
class Options:
    """Which shapes the pattern generator may produce."""

    ops: tuple[str, ...] = tuple(TEMPORAL_OPS)
    time_filters: bool = True
    max_leaves: int = 4
    scoped_filters: bool = True
    """FILTERs read only variables their group binds in every solution (else any of ?x ?y ?z ?w)."""
    optional_filters: bool = False
    """OPTIONAL groups may carry a FILTER (evaluated on the joined mapping)."""
    leaves: tuple[str, ...] = ("triple",)
    """Kinds of leaf: "triple" (one triple pattern), "bgp" (up to `bgp_size` juxtaposed ones),
    "path" (a property path over two or three triples)."""
    bgp_size: int = 6
    extensions: bool = False
    """Groups may end with a BIND (of a variable they do not bind) or a VALUES block."""
    group_filters: bool = True
    """FILTERs may stand over groups of several leaves (else over leaves only)."""


def value_expr(draw: st.DrawFn, names: Sequence[str]) -> str:
    pool = list(names)
    v = draw(st.sampled_from(pool))
    w = draw(st.sampled_from(pool))
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return f"?{v} = {draw(st.sampled_from(NODES))}"
    if kind == 1:
        return f"?{v} != ?{w}"
    if kind == 2:
        return f"BOUND(?{v})"
    if kind == 3:
        return f"!BOUND(?{v})"
    return f"sameTerm(?{v}, ?{w})"


def time_expr(draw: st.DrawFn) -> str:
    k = draw(st.integers(0, 4))
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return f'getDURATION() < "PT{k}S"^^xsd:dayTimeDuration'
    if kind == 1:
        return f'getDURATION() >= "PT{k}S"^^xsd:dayTimeDuration'
    if kind == 2:
        return f'getSTARTTIME() >= "1970-01-01T00:00:0{k}Z"^^xsd:dateTime'
    return f'getENDTIME() <= "1970-01-01T00:00:0{k}Z"^^xsd:dateTime'


@st.composite
def filter_exprs(draw: st.DrawFn, names: Sequence[str], time: bool) -> str:
    def atom() -> str:
        return time_expr(draw) if time and (not names or draw(st.booleans())) else value_expr(draw, names)

    atoms = [atom()]
    if draw(st.booleans()):
        atoms.append(atom())
        return f"({atoms[0]}) {draw(st.sampled_from(['&&', '||']))} ({atoms[1]})"
    return atoms[0]


@st.composite
def patterns(draw: st.DrawFn, options: Options = Options(), leaves: int | None = None) -> Pattern:
    budget = options.max_leaves if leaves is None else leaves
    if budget <= 1 or draw(st.integers(0, 3)) == 0:
        node: Pattern = draw(leaf_patterns(options))
    else:
        split = draw(st.integers(1, budget - 1))
        op = draw(st.sampled_from(options.ops))
        left = draw(patterns(options, split))
        right = draw(patterns(options, budget - split))
        if op == "OPTIONAL":
            expr = None
            names = sorted(variables(left) | variables(right))
            if options.optional_filters and names and draw(st.booleans()):
                expr = draw(filter_exprs(names, time=False))
            node = LeftJoin(left, right, expr)
        else:
            node = Bin(op, left, right)
    if options.extensions and draw(st.integers(0, 2)) == 0:
        node = draw(extended(node, options.time_filters))
    if (options.group_filters or isinstance(node, TP | BGP | PathTP)) and draw(st.integers(0, 4)) == 0:
        names = sorted(certain(node)) if options.scoped_filters else [v[1:] for v in VARIABLES]
        time = options.time_filters
        if names or time:
            node = Filter(node, draw(filter_exprs(names, time)))
    return node


@st.composite
def extended(draw: st.DrawFn, pattern: Pattern, time: bool) -> Pattern:
    """`{ P BIND(e AS ?v) }` with ?v one of the pool P does not bind (SPARQL's rule), or
    `{ P VALUES ... }` over one or two of the pool's variables (some rows UNDEF)."""
    fresh = [v[1:] for v in VARIABLES if v[1:] not in variables(pattern)]
    if fresh and draw(st.booleans()):
        return Extend(
            pattern, draw(bind_exprs(sorted(variables(pattern)), time)), draw(st.sampled_from(fresh))
        )
    names = tuple(
        draw(st.lists(st.sampled_from([v[1:] for v in VARIABLES]), min_size=1, max_size=2, unique=True))
    )
    term = st.sampled_from([NODES[0], NODES[1], NODES[0], None])
    rows = draw(st.lists(st.tuples(*(term for _ in names)), min_size=1, max_size=3))
    return Values(pattern, names, tuple(rows))


@st.composite
def bind_exprs(draw: st.DrawFn, names: Sequence[str], time: bool) -> str:
    """A value that joins with the vocabulary (a node, a copy of a variable, which may be
    unbound), one that never does (a string), or an error (arithmetic on an IRI)."""
    kinds = [draw(st.sampled_from(NODES[:2])), f"{NODES[0]} + 1"]
    if names:
        v = f"?{draw(st.sampled_from(names))}"
        kinds += [v, f"IF(BOUND({v}), {v}, {NODES[1]})", f"STR({v})", f"{v} + 1"]
    if time:
        kinds.append("getDURATION()")
    return draw(st.sampled_from(kinds))


OPTIONAL_OPS = ("OPTIONAL", "OPTIONALSEQ", "EQUALSOPTIONAL")


@st.composite
def nested_optionals(draw: st.DrawFn, depth: int = 3, ops: Sequence[str] = ("OPTIONAL",)) -> Pattern:
    """An optional operator whose sides are, often, optional operators again: inside the
    optional side (`{ P OPTIONAL { Q OPTIONAL { R } } }`) or the mandatory one (siblings,
    `{ P OPTIONAL { Q } OPTIONAL { R } }`), up to `depth` levels. Their optional sides
    hold anti-joins of their own, decided at the timestamp of the anti-joins that read
    their solutions. Each triple pattern has its own predicate, so that the stream
    (`instances`) can match some groups and not others."""
    predicates = iter(draw(st.permutations([*PREDICATES, *(iri(name) for name in "stuvw")])))

    def leaf() -> TP:
        predicate = next(predicates)
        fresh = "?" + predicate[len(EX) + 1 : -1]  # a variable no other triple pattern binds
        subject = draw(st.sampled_from(VARIABLES[:3]))
        return TP(subject, predicate, draw(st.sampled_from([fresh, fresh, fresh, *VARIABLES[:3], NODES[0]])))

    def grow(level: int, nest: bool) -> Pattern:
        if level <= 1 or not nest:
            return leaf()
        op = draw(st.sampled_from(ops))
        left = grow(level - 1, draw(st.sampled_from((False, False, True))))
        right = grow(level - 1, draw(st.sampled_from((False, True, True))))
        return LeftJoin(left, right) if op == "OPTIONAL" else Bin(op, left, right)

    return grow(depth, True)


def triple_patterns_of(pattern: Pattern) -> list[TP]:
    if isinstance(pattern, TP):
        return [pattern]
    if isinstance(pattern, BGP):
        return list(pattern.triples)
    if isinstance(pattern, PathTP):
        return []
    if isinstance(pattern, Filter | Extend | Values):
        return triple_patterns_of(pattern.pattern)
    return triple_patterns_of(pattern.left) + triple_patterns_of(pattern.right)


@st.composite
def instances(draw: st.DrawFn, pattern: Pattern, times: Sequence[float] = (7.0,)) -> list[Event]:
    """Some of `pattern`'s triple patterns instantiated under one or two assignments of
    their variables, and a random triple or two, each at one of `times` (one graph per
    time), so that parts of the pattern match and others do not (random triples alone
    rarely match nested groups)."""
    found: list[tuple[float, tuple[str, str, str]]] = []
    for _ in range(draw(st.integers(1, 2))):
        assignment = {f"?{v}": draw(st.sampled_from(NODES[:2])) for v in sorted(variables(pattern))}
        for tp in triple_patterns_of(pattern):
            if draw(st.booleans()):
                triple = (assignment.get(tp.s, tp.s), tp.p, assignment.get(tp.o, tp.o))
                found.append((draw(st.sampled_from(times)), triple))
    found += [(draw(st.sampled_from(times)), t) for t in draw(st.lists(triples(), min_size=1, max_size=2))]
    graphs: dict[float, list[tuple[str, str, str]]] = {}
    for time, triple in found:
        graphs.setdefault(time, []).append(triple)
    return [(time, list(dict.fromkeys(graph))) for time, graph in sorted(graphs.items())]


@st.composite
def nested_optional_cases(
    draw: st.DrawFn, ops: Sequence[str] = ("OPTIONAL",), times: Sequence[float] = (7.0,)
) -> tuple[Pattern, list[Event]]:
    """A well-designed `nested_optionals` pattern and `instances` of it."""
    pattern = draw(nested_optionals(ops=ops).filter(optionals_are_safe))
    return pattern, draw(instances(pattern, times))


def leaf_patterns(options: Options) -> st.SearchStrategy[Pattern]:
    kinds = {"triple": triple_patterns(), "bgp": bgps(options.bgp_size), "path": path_patterns()}
    return st.one_of(*(kinds[kind] for kind in options.leaves))


def window_pushed(pattern: Pattern) -> bool:
    """Does a top-level `getDURATION() <` (or <=) conjunct bound the whole pattern
    (rsep turns it into the automaton's window)?"""
    while isinstance(pattern, Filter | Extend | Values):  # BIND and VALUES keep the interval
        if isinstance(pattern, Filter):
            conjuncts = (
                [pattern.expr] if ") || (" in pattern.expr else pattern.expr.strip("()").split(") && (")
            )
            if any(c.startswith("getDURATION() <") for c in conjuncts):
                return True
        pattern = pattern.pattern
    return False


def certain(pattern: Pattern) -> set[str]:
    """The variables every solution of `pattern` binds."""
    if isinstance(pattern, TP | BGP | PathTP):
        return variables(pattern)
    if isinstance(pattern, Filter | Extend):
        return certain(pattern.pattern)
    if isinstance(pattern, Values):
        always = {n for i, n in enumerate(pattern.names) if all(row[i] for row in pattern.rows)}
        return certain(pattern.pattern) | always
    if isinstance(pattern, LeftJoin) or pattern.op == "EQUALSOPTIONAL":
        return certain(pattern.left)
    if pattern.op == "OPTIONALSEQ":
        return certain(pattern.right)
    if pattern.op == "UNION":
        return certain(pattern.left) & certain(pattern.right)
    return certain(pattern.left) | certain(pattern.right)


def has_optional(pattern: Pattern) -> bool:
    if isinstance(pattern, TP | BGP | PathTP):
        return False
    if isinstance(pattern, Filter | Extend | Values):
        return has_optional(pattern.pattern)
    if isinstance(pattern, LeftJoin) or pattern.op in ("OPTIONALSEQ", "EQUALSOPTIONAL"):
        return True
    return has_optional(pattern.left) or has_optional(pattern.right)


def optionals_are_safe(pattern: Pattern, outside: frozenset[str] = frozenset()) -> bool:
    """The optional side of every optional operator shares with the rest of the
    query (`outside` and its mandatory side) only variables its mandatory side
    binds in every solution (SPARQL's well-designed patterns), and so does every
    optional operator inside it."""
    if isinstance(pattern, TP | BGP | PathTP):
        return True
    if isinstance(pattern, Filter | Extend | Values):
        return optionals_are_safe(pattern.pattern, outside)
    left, right = pattern.left, pattern.right
    if isinstance(pattern, LeftJoin) or pattern.op == "EQUALSOPTIONAL":
        mandatory, optional = left, right
    elif pattern.op == "OPTIONALSEQ":
        mandatory, optional = right, left
    else:
        return optionals_are_safe(left, outside | variables(right)) and optionals_are_safe(
            right, outside | variables(left)
        )
    if variables(optional) & outside - certain(mandatory):
        return False
    return optionals_are_safe(mandatory, outside | variables(optional)) and optionals_are_safe(
        optional, outside | variables(mandatory)
    )
