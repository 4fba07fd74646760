"""Nested paths `elt[elt]` (CQELS-CEP §3.1, nSPARQL): the rewrite to materialised node tests
(rsep.plugin.compile.paths) and queries through `rsep run --engine inprocess`, over the background
data (static, materialised once) and over a window (materialised at each evaluation)."""

from __future__ import annotations

import pytest

from rsep.grammar import parse_event_query
from rsep.plugin.algebra.serialize import to_sparql
from rsep.plugin.compile.paths import NESTED_GRAPH, compile_nested_paths
from rsep.plugin.windows import WindowPlanError, plan_windows
from tests.support.run_cases import run_inline

S = "http://example.org/s"
PREFIX = "PREFIX : <http://example.org/>\n"
MAP = """
:conn1 :beg :m ; :end :b ; :means :subway .
:conn2 :beg :b ; :end :c ; :means :subway .
:conn3 :beg :h ; :end :g ; :means :subway .
:conn4 :beg :g ; :end :c ; :means :tram .
:subway :kind :rail . :tram :kind :road .
"""
DELAYS = "".join(
    f":e{t} {{ :v :delayAt :{stop} }} :e{t} prov:generatedAtTime {t} .\n"
    for t, stop in [(1, "m"), (2, "h"), (3, "g")]
)


def stops(tmp_path, path: str, kb_graph: str = "", graph_block: bool = False) -> list[tuple[int, str]]:
    """Evaluations (one per delay, [NOW] window) of `?s <path> :c` for the delayed stop ?s."""
    pattern = f"?s {path} :c"
    if graph_block:
        pattern = f"GRAPH <{kb_graph}> {{ {pattern} }}"
    query = f"{PREFIX}SELECT ?s WHERE {{ STREAM <{S}> [NOW] {{ ?v :delayAt ?s }} {pattern} }}"
    out = run_inline(tmp_path, query, {S: DELAYS}, {kb_graph: MAP})
    return [(line["end"], line["bindings"]["s"].removeprefix("<http://example.org/")[:-1]) for line in out]


def test_the_nested_test_excludes_the_tram_connection(tmp_path):
    """h reaches :c over conn3 (subway) and conn4 (tram): only the plain path admits it."""
    assert stops(tmp_path, "(^:beg/:end)+") == [(1, "m"), (2, "h"), (3, "g")]
    assert stops(tmp_path, "(^:beg/[:means :subway]/:end)+") == [(1, "m")]


@pytest.mark.parametrize(
    "path",
    [
        "(^:beg[:means :subway]/:end)+",  # elt[test] inside parentheses
        "(^:beg/[:means/[:kind :rail]]/:end)+",  # a test nested in a test
        "(^:beg/[:means [:kind :rail]]/:end)+",  # ... written as elt[test]
        "(^:beg/[:means/:kind :rail]/:end)+",
    ],
)
def test_equivalent_nested_forms(tmp_path, path):
    assert stops(tmp_path, path) == [(1, "m")]


def test_a_path_inside_a_graph_block_reads_that_graph(tmp_path):
    found = stops(tmp_path, "(^:beg/[:means :subway]/:end)+", "http://example.org/map", graph_block=True)
    assert found == [(1, "m")]


def test_the_rewrite_names_a_materialised_relation_in_a_scratch_graph():
    query = parse_event_query(
        f"{PREFIX}SELECT ?s WHERE {{ STREAM <{S}> [NOW] {{ ?v :delayAt ?s }} "
        "?v a :subway . ?s (^:beg/[:means :subway]/:end)+ :c }",
        dialect="cqels",
    )
    where, (site,) = compile_nested_paths(query.where)
    scratch, relation = f"{NESTED_GRAPH}0", f"{NESTED_GRAPH}0/0"
    assert site.graph == scratch and site.source is None and [t.relation for t in site.tests] == [relation]
    assert " ".join(site.tests[0].query.split()) == (
        f"SELECT DISTINCT ?node WHERE {{ GRAPH <{scratch}> {{ "
        "?node <http://example.org/means> <http://example.org/subway> . } }"
    )
    text = " ".join(to_sparql(where.elements[1]).split())
    assert text == (
        "{ ?v a <http://example.org/subway> . "
        f"GRAPH <{scratch}> {{ ?s ((^<http://example.org/beg> / <{relation}>) / <http://example.org/end>)+ "
        "<http://example.org/c> . } }"
    )


def test_negated_property_sets_do_not_walk_the_relations(tmp_path):
    """From :y (which passes [:q]) `!(:r)` follows :q and :t, not :r, and not the relation's
    self-loop (y, T, y) that the materialisation wrote."""
    query = f"{PREFIX}SELECT ?o WHERE {{ STREAM <{S}> [NOW] {{ ?s :go ?any }} ?s :p/[:q]/!(:r) ?o }}"
    kb = {"": ":x :p :y . :y :q :z ; :r :w ; :t :u ."}
    out = run_inline(tmp_path, query, {S: ":e { :x :go :now } :e prov:generatedAtTime 1 .\n"}, kb)
    assert [line["bindings"]["o"] for line in out] == ["<http://example.org/u>", "<http://example.org/z>"]


def test_a_nested_path_over_a_window_is_materialised_at_each_evaluation(tmp_path):
    query = f"{PREFIX}SELECT ?a ?b WHERE {{ STREAM <{S}> [RANGE 10s] {{ ?a (:link[:open true])+ ?b }} }}"
    stream = (
        ":e1 { :a :link :b . :b :open true } :e1 prov:generatedAtTime 1 .\n"
        ":e2 { :b :link :c } :e2 prov:generatedAtTime 2 .\n"
        ":e3 { :c :open true } :e3 prov:generatedAtTime 3 .\n"
    )
    out = run_inline(tmp_path, query, {S: stream})
    pairs = [(line["end"], line["bindings"]["a"][-2], line["bindings"]["b"][-2]) for line in out]
    assert pairs == [(1, "a", "b"), (2, "a", "b"), (3, "a", "b"), (3, "a", "c"), (3, "b", "c")]


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("GRAPH ?g { ?s :p/[:q] ?o }", r"GRAPH \?variable"),
        ("?s :p/[:q] [ :r ?o ]", "blank node"),
    ],
)
def test_nested_paths_rsep_cannot_compile(pattern, message):
    query = parse_event_query(
        f"{PREFIX}SELECT * WHERE {{ STREAM <{S}> [NOW] {{ ?v :delayAt ?s }} {pattern} }}", dialect="cqels"
    )
    with pytest.raises(WindowPlanError, match=message):
        plan_windows(query)
