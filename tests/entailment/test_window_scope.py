"""What a window query's machinery puts into its store stays out of the user's query: under
entailment, the hidden variables a BGP's blank nodes become are never in scope of `SELECT *`,
DISTINCT or a row; with or without entailment, `GRAPH ?g` ranges over the knowledge base's named
graphs only, never over the window graphs, their graphs of entailed triples or nested paths'
scratch graphs (docs/semantics.md, "RDFS entailment" and "CQELS")."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rsep.grammar import parse_event_query
from rsep.plugin.store.kb import KnowledgeBase
from rsep.plugin.store.windows import OxigraphWindows
from rsep.plugin.windows import plan_windows
from tests.support.run_cases import run_inline

S = "http://example.org/s"
SUBCLASS = "<http://www.w3.org/2000/01/rdf-schema#subClassOf>"
SCHEMA = f":Manager {SUBCLASS} :Employee ."
TWO_MANAGERS = (
    ":e1 { :ann a :Manager . :dan a :Manager . :ann :worksFor :acme . } :e1 prov:generatedAtTime 1 .\n"
)
BLANK_NODE_BLOCK = {
    "csparql": (
        "REGISTER QUERY q AS PREFIX : <http://example.org/> SELECT FORM "
        f"FROM STREAM <{S}> [RANGE 10s STEP 10s] WHERE {{ {{ [] a :Employee }} ?y :worksFor ?o }}"
    ),
    "cqels": (
        "PREFIX : <http://example.org/> SELECT FORM WHERE { "
        f"STREAM <{S}> [RANGE 10s] {{ [] a :Employee }} STREAM <{S}> [RANGE 10s] {{ ?y :worksFor ?o }} }}"
    ),
}
ANN_AT_ACME = {"y": "<http://example.org/ann>", "o": "<http://example.org/acme>"}


def bindings(tmp_path, query: str, kb: dict[str, str], entailment: str | None = "rdfs") -> list[dict]:
    """Registered at 0 (`--t0 0`): the C-SPARQL window (0, 10] holds the event at 1."""
    lines = run_inline(tmp_path, query, {S: TWO_MANAGERS}, kb, entailment, t0="0")
    return [line["bindings"] for line in lines]


def count(n: int) -> dict[str, str]:
    return {"n": f'"{n}"^^<http://www.w3.org/2001/XMLSchema#integer>'}


@pytest.mark.parametrize("dialect", list(BLANK_NODE_BLOCK))
@pytest.mark.parametrize(
    ("form", "expected"),
    [
        # `{ [] a :Employee }` has two witnesses (ann, dan): two empty solutions, as SPARQL's
        ("*", [ANN_AT_ACME, ANN_AT_ACME]),
        ("DISTINCT *", [ANN_AT_ACME]),
        ("(COUNT(*) AS ?n)", [count(2)]),
        ("(COUNT(DISTINCT *) AS ?n)", [count(1)]),
    ],
)
def test_a_blank_node_block_without_variables_leaves_nothing_hidden_in_scope(
    tmp_path, dialect, form, expected
):
    query = BLANK_NODE_BLOCK[dialect].replace("FORM", form)
    assert bindings(tmp_path, query, {"": SCHEMA}) == expected


KB_GRAPH = "http://example.org/g1"
IN_KB_GRAPH = {"g": f"<{KB_GRAPH}>", "s": "<http://example.org/bob>", "c": "<http://example.org/Manager>"}
GRAPH_VARIABLE = {
    "csparql": (
        "REGISTER QUERY q AS PREFIX : <http://example.org/> SELECT ?g ?s ?c "
        f"FROM STREAM <{S}> [RANGE 10s STEP 10s] WHERE {{ ?w :worksFor ?o GRAPH ?g {{ ?s a ?c }} }}"
    ),
    "cqels": (
        "PREFIX : <http://example.org/> SELECT ?g ?s ?c WHERE { "
        f"STREAM <{S}> [RANGE 10s] {{ ?w :worksFor ?o }} GRAPH ?g {{ ?s a ?c }} }}"
    ),
    # a nested path makes a scratch graph beside the others
    "cqels, nested path": (
        "PREFIX : <http://example.org/> SELECT ?g ?s ?c WHERE { "
        f"STREAM <{S}> [RANGE 10s] {{ ?w :worksFor ?o }} OPTIONAL {{ ?w :likes/[:kind :rail] ?m }} "
        "GRAPH ?g { ?s a ?c } }"
    ),
}


@pytest.mark.parametrize("entailment", [None, "rdfs"])
@pytest.mark.parametrize("dialect", list(GRAPH_VARIABLE))
def test_graph_variable_ranges_over_the_knowledge_base_s_named_graphs_only(tmp_path, dialect, entailment):
    # the default graph's `:carl a :Clerk` is copied into the nested path's scratch graph
    kb = {"": f"{SCHEMA} :carl a :Clerk .", KB_GRAPH: ":bob a :Manager ."}
    assert bindings(tmp_path, GRAPH_VARIABLE[dialect], kb, entailment) == [IN_KB_GRAPH]


@pytest.mark.parametrize("entailment", [None, "rdfs"])
@pytest.mark.parametrize("dialect", list(GRAPH_VARIABLE))
def test_every_graph_the_window_store_adds_is_one_graph_variables_skip(dialect, entailment):
    kb = KnowledgeBase()
    kb.update(f"INSERT DATA {{ GRAPH <{KB_GRAPH}> {{ <urn:bob> a <urn:Manager> }} }}")
    plan = plan_windows(replace(parse_event_query(GRAPH_VARIABLE[dialect]), entailment=entailment))
    evaluator = OxigraphWindows(plan, kb)
    added = {g.value for g in evaluator.named_graphs} - {KB_GRAPH}
    # the window graphs (CQELS), the entailed graphs, the scratch graphs (C-SPARQL's windows are
    # its default graph)
    assert added <= set(plan.internal_graphs)
