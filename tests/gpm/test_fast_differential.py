"""Differential test: the GPM stage's fast path against its Oxigraph path.

Hypothesis draws simple GPMs (random BGPs of one to three triple patterns over a small vocabulary:
shared variables, blank nodes, constants in any position, written canonically or not, variable
predicates; FILTERs with comparisons, arithmetic and functions over literals of many datatypes,
language tags, ill-formed and out-of-range literals) and random events (blank nodes, duplicate
triples, triples that are one once stored), then evaluates the GPM with `GpmEvaluator(fast=True)`
and `GpmEvaluator(fast=False)`: the rows must be the same bag, for every GPM the classifier
accepts; a GPM it refuses must keep the Oxigraph path. Order is not compared: Oxigraph's is not
even the same from one run to the next when events share triples (its memory store hashes with
random seeds); how often both orders agree is counted and printed (-s).

The events' texts come from `rdfio.parse_events` (what `rsep run` and the endpoint store) or are
written line by line as a CONSTRUCT rule's derived events are (terms as given, not canonical).
RSEP_GPM_EXAMPLES raises the example count.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from rsep.plugin.algebra.events import GraphPatternEvent
from rsep.plugin.algebra.sparql import (
    BGP,
    IRI,
    RDF_LANGSTRING,
    XSD,
    XSD_STRING,
    BinaryOp,
    BNode,
    Expr,
    Filter,
    FunctionCall,
    GroupPattern,
    In,
    Literal,
    Node,
    TriplePattern,
    UnaryOp,
    Var,
)
from rsep.plugin.algebra.terms import escape_string
from rsep.plugin.compile.gpm_plan import GpmPlan, plan_gpm
from rsep.plugin.expr import stored_nt
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.store.event_reader import parse_events
from rsep.plugin.store.gpm_stage import GpmEvaluator
from rsep.plugin.vocabulary import PROV_GENERATED_AT

EXAMPLES = int(os.environ.get("RSEP_GPM_EXAMPLES", "400"))
STREAM = "urn:stream"
OUTCOMES: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    yield
    print("\nfast-path differential outcomes:", dict(OUTCOMES))


# --------------------------------------------------------------------------- vocabulary

IRIS = ("urn:a", "urn:b", "urn:c")
PREDICATES = ("urn:p", "urn:q", "urn:r")
BLANKS = ("b0", "b1")
LITERALS: tuple[tuple[str, str, str | None], ...] = (
    *(
        (lex, XSD + "integer", None)
        for lex in ("1", "01", "-0", "+2", "10", "-3", "99999999999999999999", "abc")
    ),
    *((lex, XSD + "decimal", None) for lex in ("1.0", "1.50", ".5", "2", "-0.25", "1.0000000000000000001")),
    *((lex, XSD + "double", None) for lex in ("1.0E0", "1", "62.54", "NaN", "INF", "-0.0", "1e300", "0.1")),
    *((lex, XSD + "float", None) for lex in ("1.5", "0.1")),
    *((lex, XSD + "boolean", None) for lex in ("true", "1", "false", "TRUE")),
    *((lex, XSD + "int", None) for lex in ("5", "300")),
    *(
        (lex, XSD_STRING, None)
        for lex in ("a", "A", "b", "ab c", 'a"b', "line\nbreak", "é", "x\ry", " 1 ", "2", "Straße", "a\\b")
    ),
    *((lex, RDF_LANGSTRING, tag) for lex, tag in (("a", "en"), ("a", "EN"), ("chat", "fr"), ("a", "en-US"))),
    *(
        (lex, XSD + "dateTime", None)
        for lex in (
            "2020-01-01T00:00:00Z",
            "2020-01-01T01:00:00+01:00",
            "2020-01-01T00:00:00",
            "2020-13-01T00:00:00",
        )
    ),
    ("2020-01-01", XSD + "date", None),
    ("P1D", XSD + "dayTimeDuration", None),
    ("x", "urn:dt", None),
)


def literal_text(lexical: str, datatype: str, language: str | None) -> str:
    """N-Triples of a literal exactly as given (tags keep their case, xsd:string is explicit)."""
    body = f'"{escape_string(lexical)}"'
    if language is not None:
        return f"{body}@{language}"
    return f"{body}^^<{datatype}>"


def literal_node(lexical: str, datatype: str, language: str | None) -> Literal:
    return Literal(lexical, RDF_LANGSTRING if language else datatype, language)


COMMON: tuple[tuple[str, str, str | None], ...] = (
    ("1", XSD + "integer", None),
    ("01", XSD + "integer", None),
    ("2", XSD + "decimal", None),
    ("2.0", XSD + "decimal", None),
    ("1", XSD + "double", None),
    ("a", XSD_STRING, None),
    ("a", RDF_LANGSTRING, "en"),
    ("a", RDF_LANGSTRING, "EN"),
    ("true", XSD + "boolean", None),
    ("2020-01-01T00:00:00Z", XSD + "dateTime", None),
)
"""Literals that events and patterns share often (each with a twin that is one once stored)."""

iris = st.sampled_from(IRIS)
common = st.sampled_from(COMMON)
literals = st.one_of(common, common, st.sampled_from(LITERALS))
event_subjects = st.one_of(
    st.just("<urn:a>"),
    st.just("<urn:a>"),
    st.just("<urn:b>"),
    st.sampled_from(BLANKS).map(lambda b: f"_:{b}"),
    st.sampled_from(PREDICATES[:2]).map(lambda p: f"<{p}>"),  # so that ?x ?x ?y can match
)
Term = str | tuple[str, str, str | None]
"""An event's term: an IRI or blank node as N-Triples, or a literal (lexical, datatype, tag)."""
event_objects: st.SearchStrategy[Term] = st.one_of(event_subjects, literals, literals, literals)
event_triples = st.tuples(
    event_subjects, st.sampled_from(PREDICATES[:2]).map(lambda p: f"<{p}>"), event_objects
)
Triple = tuple[str, str, Term]


def text(term: Term) -> str:
    return term if isinstance(term, str) else literal_text(*term)


@dataclass(frozen=True)
class Case:
    gpm: GraphPatternEvent
    events: list[tuple[int, GraphEvent]]


def graph_events(graphs: list[list[Triple]], parsed: bool) -> list[tuple[int, GraphEvent]]:
    """The events, parsed from N-Quads by rdfio or written as given."""
    lines = [[f"{s} {p} {text(o)}" for s, p, o in triples] for triples in graphs]
    if parsed:
        payload = "".join(
            "".join(f"{line} <urn:g{i}> .\n" for line in graph)
            + f'<urn:g{i}> <{PROV_GENERATED_AT}> "{i}"^^<{XSD}integer> .\n'
            for i, graph in enumerate(lines)
        )
        events = parse_events(payload.encode(), ox.RdfFormat.N_QUADS, STREAM, source="<test>", scope="t")
        return list(enumerate(events))
    body = ["".join(f"{line} .\n" for line in graph) for graph in lines]
    return [(i, GraphEvent(STREAM, f"<urn:g{i}>", Timestamp(i, str(i), True), b)) for i, b in enumerate(body)]


VARIABLES = ("x", "y", "z")
variables = st.sampled_from(VARIABLES).map(Var)
blank_nodes = st.sampled_from(("q0", "q1")).map(BNode)
pattern_iris = st.sampled_from(("urn:a", "urn:a", "urn:b", "urn:c")).map(IRI)
pattern_subjects = st.one_of(*[st.just(Var("x"))] * 4, variables, pattern_iris, blank_nodes)
pattern_predicates = st.one_of(*[st.sampled_from(PREDICATES[:2]).map(IRI)] * 4, st.just(Var("p")), variables)
pattern_objects = st.one_of(
    *[st.sampled_from(VARIABLES[1:]).map(Var)] * 5,
    blank_nodes,
    pattern_iris,
    common.map(lambda literal: literal_node(*literal)),
    literals.map(lambda literal: literal_node(*literal)),
)
random_patterns = st.builds(TriplePattern, pattern_subjects, pattern_predicates, pattern_objects)
TWINS: dict[str, list[tuple[str, str, str | None]]] = {}
for _literal in (*COMMON, *LITERALS):
    TWINS.setdefault(stored_nt(literal_text(*_literal)), []).append(_literal)


def constant(term: Term) -> st.SearchStrategy[Node]:
    """An event's term as a pattern's constant: IRIs as they are, literals as written or as a
    twin that is the same term once stored, blank nodes as the pattern's blank nodes."""
    if isinstance(term, tuple):
        return st.sampled_from(TWINS[stored_nt(literal_text(*term))]).map(lambda twin: literal_node(*twin))
    if term.startswith("<"):
        return st.just(IRI(term[1:-1]))
    return blank_nodes


@st.composite
def planted(draw: st.DrawFn, triple: Triple) -> TriplePattern:
    """A pattern that matches `triple`, some positions made variables."""
    s, p, o = triple
    return TriplePattern(
        draw(st.one_of(st.just(Var("x")), st.just(Var("x")), variables, constant(s))),
        draw(st.one_of(constant(p), constant(p), st.just(Var("p")), variables)),  # type: ignore[arg-type]
        draw(st.one_of(st.sampled_from(VARIABLES[1:]).map(Var), constant(o))),
    )


REGEX_PATTERNS = ("a", "^a", "b$", "[a-c]+", "A|b", ".", "\\s", "\\d", "(ab)*c?", "\\w", "x{2,", "é")


def _call(name: str | IRI, *args: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    return st.tuples(*args).map(lambda values: FunctionCall(name, tuple(values)))


def conditions(names: list[str], depth: int = 2) -> st.SearchStrategy[Expr]:
    """FILTER conditions over `names` (the pattern's variables): comparisons, tests, and at most
    `depth` levels of `!`, `&&`, `||`."""
    var = st.sampled_from(names).map(Var)
    constant = st.one_of(literals.map(lambda literal: literal_node(*literal)), iris.map(IRI))
    text = st.one_of(var.map(lambda v: FunctionCall("STR", (v,))), var)
    term = st.one_of(
        var,
        var,
        constant,
        st.tuples(st.sampled_from(["+", "-", "*", "/"]), var, st.one_of(var, constant)).map(
            lambda t: BinaryOp(*t)
        ),
        var.map(lambda v: UnaryOp("-", v)),
        st.sampled_from(["STRLEN", "ABS", "ROUND", "YEAR", "DATATYPE", "LANG", "STR", "UCASE"]).flatmap(
            lambda name: _call(name, text if name in ("STRLEN", "UCASE") else var)
        ),
        st.sampled_from(
            [
                XSD + "integer",
                XSD + "double",
                XSD + "decimal",
                XSD + "string",
                XSD + "boolean",
                XSD + "dateTime",
            ]
        ).flatmap(lambda name: _call(IRI(name), var)),
        _call(
            "SUBSTR",
            text,
            st.sampled_from(["1", "2", "-1", "99999999999999999999"]).map(
                lambda n: Literal(n, XSD + "integer")
            ),
        ),
        _call("CONCAT", text, constant),
        _call("COALESCE", var, constant),
    )
    tests = st.one_of(
        st.tuples(st.sampled_from(["=", "!=", "<", ">", "<=", ">="]), term, term).map(lambda t: BinaryOp(*t)),
        st.sampled_from(["ISIRI", "ISBLANK", "ISLITERAL", "ISNUMERIC"]).flatmap(
            lambda name: _call(name, var)
        ),
        st.sampled_from(["SAMETERM", "CONTAINS", "STRSTARTS"]).flatmap(
            lambda name: _call(name, var, constant)
        ),
        st.tuples(term, st.lists(term, min_size=1, max_size=2), st.booleans()).map(
            lambda t: In(t[0], tuple(t[1]), t[2])
        ),
        _call(
            "LANGMATCHES",
            var.map(lambda v: FunctionCall("LANG", (v,))),
            st.sampled_from(["en", "*", "FR"]).map(Literal),
        ),
        st.tuples(text, st.sampled_from(REGEX_PATTERNS), st.sampled_from(["", "i", "s", "x"])).map(
            lambda t: FunctionCall("REGEX", (t[0], Literal(t[1]), Literal(t[2])))
        ),
        var.map(lambda v: FunctionCall("BOUND", (v,))),
        term,  # its effective boolean value
    )
    if depth == 0:
        return tests
    inner = conditions(names, depth - 1)
    likely = st.one_of(
        st.sampled_from(["ISLITERAL", "ISIRI"]).flatmap(lambda name: _call(name, var)),
        var.map(
            lambda v: BinaryOp(
                ">", FunctionCall("STRLEN", (FunctionCall("STR", (v,)),)), Literal("1", XSD + "integer")
            )
        ),
        st.tuples(var, constant).map(lambda t: BinaryOp("!=", *t)),
    )
    return st.one_of(
        tests,
        inner.map(lambda e: UnaryOp("!", e)),
        st.tuples(st.sampled_from(["&&", "||"]), inner, inner).map(lambda t: BinaryOp(*t)),
        st.tuples(inner, likely).map(lambda t: BinaryOp("||", *t)),
        st.tuples(inner, likely).map(lambda t: BinaryOp("||", *t)),
        likely,
        _call("IF", inner, term, term),
    )


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """A GPM and events: each triple pattern drawn at random or planted in one of the events."""
    graphs = draw(st.lists(st.lists(event_triples, max_size=6), min_size=1, max_size=5))
    everything = [triple for graph in graphs for triple in graph]
    triples = [
        draw(
            planted(draw(st.sampled_from(everything)))
            if everything and draw(st.booleans())
            else random_patterns
        )
        for _ in range(draw(st.integers(1, 3)))
    ]
    names = sorted(
        {
            t.name
            for triple in triples
            for t in (triple.subject, triple.predicate, triple.object)
            if isinstance(t, Var)
        }
    )
    filters: list[Node] = []
    if names:
        count = draw(st.sampled_from([0, 1, 1, 1, 2]))
        filters = [Filter(draw(conditions(names))) for _ in range(count)]
    split = draw(st.integers(0, len(triples)))
    parts: list[Node] = [BGP(tuple(triples[:split])), *filters, BGP(tuple(triples[split:]))]
    if draw(st.booleans()):  # a nested group holding the second part
        parts[-1] = GroupPattern((parts[-1],))
    gpm = GraphPatternEvent("A", (STREAM,), GroupPattern(tuple(p for p in parts if p != BGP(()))))
    return Case(gpm, graph_events(graphs, parsed=draw(st.booleans())))


def bag(rows: list[tuple[int, dict[str, str]]]) -> list[tuple[int, list[tuple[str, str]]]]:
    return sorted((event, sorted(mapping.items())) for event, mapping in rows)


def order(rows: list[tuple[int, dict[str, str]]]) -> list[int]:
    """The events of the rows in order, each run of one event once."""
    out: list[int] = []
    for event, _ in rows:
        if not out or out[-1] != event:
            out.append(event)
    return out


SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


@SETTINGS
@given(cases())
def test_fast_path_rows_are_the_oxigraph_rows(case: Case) -> None:
    plan: GpmPlan = plan_gpm(0, case.gpm)
    note(plan.event_query)
    note(repr([event.ntriples for _, event in case.events]))
    reference = GpmEvaluator([plan], fast=False)
    try:
        expected = reference.evaluate(case.events).get(0, [])
    except (SyntaxError, ValueError, OSError) as error:  # Oxigraph refuses the query or the events
        OUTCOMES["oxigraph error"] += 1
        note(f"Oxigraph: {error}")
        return
    fast = GpmEvaluator([plan])
    got = fast.evaluate(case.events).get(0, [])
    if plan.simple is None:
        OUTCOMES["refused"] += 1
        assert fast.stats.queries[0] == reference.stats.queries[0]  # all through Oxigraph
    else:
        OUTCOMES["fallback" if fast.stats.fallbacks[0] else "fast"] += 1
        OUTCOMES["rows"] += len(got)
        OUTCOMES["with rows"] += bool(got)
        OUTCOMES["filtered, with rows"] += bool(got) and bool(plan.simple.filters)
        OUTCOMES["filtered"] += bool(plan.simple.filters)
        OUTCOMES["same order" if got == expected else "other order"] += 1
        OUTCOMES["same event order" if order(got) == order(expected) else "other event order"] += 1
    assert bag(got) == bag(expected)


@st.composite
def filter_cases(draw: st.DrawFn) -> Case:
    """`?x ?p ?y` (every triple) and one FILTER over it: many terms through each condition."""
    graphs = draw(st.lists(st.lists(event_triples, min_size=1, max_size=8), min_size=1, max_size=3))
    condition = draw(conditions(["x", "p", "y"]))
    pattern = BGP((TriplePattern(Var("x"), Var("p"), Var("y")),))
    gpm = GraphPatternEvent("A", (STREAM,), GroupPattern((pattern, Filter(condition))))
    return Case(gpm, graph_events(graphs, parsed=draw(st.booleans())))


@SETTINGS
@given(filter_cases())
def test_fast_filters_are_oxigraph_filters(case: Case) -> None:
    test_fast_path_rows_are_the_oxigraph_rows.hypothesis.inner_test(case)  # type: ignore[attr-defined]


def test_an_events_triples_are_indexed_once_for_every_query_reading_it():
    """Every query at a log position reads the same event: its index is computed once."""
    from rsep.plugin.store.fast_gpm import event_index

    text = "<urn:s> <urn:p> <urn:o> .\n"
    first = event_index(text)
    assert first is not None and event_index(text) is first
