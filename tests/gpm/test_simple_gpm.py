"""Which GPMs the GPM stage matches in Python (rsep.plugin.compile.simple_gpm), and that the others
keep the Oxigraph path: written in SPAseq and compiled as `rsep run` compiles them."""

from __future__ import annotations

import pyoxigraph as ox
import pytest

from rsep import compiler
from rsep.plugin.algebra.events import GraphPatternEvent, MatchElement, Sequence
from rsep.plugin.algebra.sparql import BGP, IRI, Filter, FunctionCall, Literal, TriplePattern, Var
from rsep.plugin.compile.gpm_plan import split_conjuncts
from rsep.plugin.compile.query_plan import QueryPlan
from rsep.plugin.compile.simple_gpm import refusal
from rsep.plugin.store.event_reader import parse_events
from rsep.plugin.store.gpm_stage import GpmEvaluator
from rsep.plugin.store.kb import KnowledgeBase

STREAM = "http://example.org/s"
KB = "http://example.org/kb"
EVENTS = b"""@prefix : <http://example.org/> .
@prefix prov: <http://www.w3.org/ns/prov#> .
:e1 { :x :p 1 ; :q "a"@en ; :r :y . :y :p 2 . }
:e2 { :x :p 01 ; :q "b" . }
:e3 { :y :q "a" ; :r :x . }
:e1 prov:generatedAtTime 1 . :e2 prov:generatedAtTime 2 . :e3 prov:generatedAtTime 3 .
"""


def query(gpm: str) -> str:
    """A two-GPM SPAseq query: A is `gpm`, B reads A's ?o (its FILTER is a residual)."""
    return (
        "PREFIX : <http://example.org/>\nPREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\nSELECT *\n"
        "FROM STREAM S1 <http://example.org/s>\nWHERE {\n"
        f"  SEQ (A; B)\n  DEFINE GPM A ON S1 {{ {gpm} }}\n"
        "  DEFINE GPM B ON S1 { ?s :p ?o2 FILTER (?o2 != ?o) }\n}\n"
    )


def plan(gpm: str) -> QueryPlan:
    compiled = compiler.compile_text(query(gpm), dialect="spaseq")
    assert isinstance(compiled, QueryPlan)
    return compiled


def why(gpm: str) -> str | None:
    """`refusal` of GPM A's pattern, its FILTERs apart."""
    parsed = compiler.parse(query(gpm), dialect="spaseq")
    (match,) = parsed.where.elements
    assert isinstance(match, MatchElement) and isinstance(match.pattern, Sequence)
    a = match.pattern.elements[0]
    assert isinstance(a, GraphPatternEvent)
    elements = a.pattern.elements
    filters = split_conjuncts([e for e in elements if isinstance(e, Filter)])
    return refusal(tuple(e for e in elements if not isinstance(e, Filter)), tuple(f.expr for f in filters))


ACCEPTED = [
    "?s :p ?o",
    "?s :p ?o . ?s :q ?l",
    "?s :p ?o . FILTER (?o > 1)",
    "?s :p 1",  # "01" is stored as 1: both match
    '?s :q "a"@EN',
    "?s ?pred ?o",
    "?s :r [] . ?s :p ?o",
    "?s :p ?o { ?s :q ?l }",
    "?s :p ?o . FILTER (?o IN (1, 2) && !isBlank(?s) || STRLEN(STR(?s)) > 3)",
    '?s :q ?o . FILTER regex(?o, "^[a-c]+$", "i")',
    "?s :p ?o . FILTER (xsd:integer(?o) = 1)",
    "?s :p ?o . GRAPH <http://example.org/kb> { ?s :label ?o2 }",  # the event part is simple
]

REFUSED = {
    "?s :p ?o OPTIONAL { ?s :q ?l }": "OptionalPattern",
    "{ ?s :p ?o } UNION { ?s :q ?o }": "UnionPattern",
    "?s :p ?o MINUS { ?s :q ?o }": "MinusPattern",
    "?s :p ?o BIND (?o + 1 AS ?n)": "Bind",
    "?s :p ?o VALUES ?o { 1 2 }": "InlineData",
    "?s :p/:p ?o": "property path",
    "?s :p* ?o": "property path",
    "?s ^:r ?o": "property path",
    "?s :p ?o { ?s :q ?l FILTER (?l != 1) }": "nested group",
    "?s :p ?o FILTER EXISTS { ?s :q ?l }": "Exists",
    "?s :p ?o FILTER (RAND() < 2)": "RAND",
    "?s :p ?o FILTER (STRDT(STR(?o), xsd:integer) = 1)": "STRDT",
    '?s :p ?o FILTER (REPLACE(STR(?o), "1", "2") = "2")': "REPLACE",
    "?s :p ?o FILTER (IRI(STR(?s)) = ?s)": "IRI",
    "?s :q ?o FILTER regex(?o, STR(?s))": "constant strings",
    '?s :q ?o FILTER regex(?o, "\\\\w")': "escape",
    '?s :q ?o FILTER regex(?o, "a", "x")': "flags",
    '?s :q ?o FILTER regex(?o, "[a-[b]]")': "range",
    '?s :q ?o FILTER regex(?o, "[a&&b]")': "character class",
    '?s :q ?o FILTER regex(?o, "a{,2}")': "counted repetition",
    '?s :q ?o FILTER regex(?o, "é", "i")': "non-ASCII",
    "{ SELECT ?s ?o WHERE { ?s :p ?o } }": "SubSelect",
    "": "empty pattern",
}


@pytest.mark.parametrize("gpm", ACCEPTED)
def test_accepted(gpm: str) -> None:
    a, b = plan(gpm).gpms
    assert a.simple is not None
    assert b.simple is not None  # ?o2 != ?o reads A's variable: a residual, not the GPM's filter
    assert not b.simple.filters and b.residuals


@pytest.mark.parametrize("gpm", ACCEPTED)
def test_accepted_gpms_give_the_oxigraph_rows(gpm: str) -> None:
    gpms = plan(gpm).gpms
    events = list(enumerate(parse_events(EVENTS, ox.RdfFormat.TRIG, STREAM, source="<test>", scope="t")))
    kb = KnowledgeBase()
    kb.load_data("<http://example.org/x> <http://example.org/label> 1 .", ox.RdfFormat.TURTLE, graph=KB)
    fast, reference = GpmEvaluator(gpms, kb), GpmEvaluator(gpms, kb, fast=False)
    got, expected = fast.evaluate(events), reference.evaluate(events)
    assert {k: sorted(map(repr, v)) for k, v in got.items()} == {
        k: sorted(map(repr, v)) for k, v in expected.items()
    }
    assert not fast.stats.queries and not fast.stats.fallbacks  # no SPARQL query ran


@pytest.mark.parametrize(("gpm", "reason"), REFUSED.items())
def test_refused_gpms_keep_the_oxigraph_path(gpm: str, reason: str) -> None:
    a = plan(gpm).gpms[0]
    assert a.simple is None
    assert reason in (why(gpm) or "")
    events = list(enumerate(parse_events(EVENTS, ox.RdfFormat.TRIG, STREAM, source="<test>", scope="t")))
    evaluator = GpmEvaluator([a])
    evaluator.evaluate(events)
    assert evaluator.stats.queries[0] == 1


def test_refusals_say_why() -> None:
    pattern = (BGP((TriplePattern(Var("s"), IRI("urn:p"), Var("o")),)),)
    assert refusal(pattern, ()) is None
    assert "not bound" in (refusal(pattern, (Var("z"),)) or "")
    assert "RAND" in (refusal(pattern, (FunctionCall("RAND", ()),)) or "")
    assert "escape" in (refusal(pattern, (FunctionCall("REGEX", (Var("o"), Literal("\\w"))),)) or "")
    assert "empty pattern" in (refusal((), ()) or "")


def test_entailment_rewrites_keep_the_oxigraph_path() -> None:
    """An RDFS rewrite adds UNIONs, VALUES and hidden variables (a DISTINCT event query)."""
    compiled = compiler.compile_text(query("?s a :Animal ; :p ?o"), dialect="spaseq", entailment="rdfs")
    assert isinstance(compiled, QueryPlan)
    assert all(gpm.simple is None for gpm in compiled.gpms)
