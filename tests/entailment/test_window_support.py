"""Under entailment, a window's hidden graph of entailed triples follows the triples entering and
leaving the window (rsep.plugin.store.entailed): a derived triple stays while another window
triple or the static data still derives it, goes when nothing does, and is never matched twice
when the window holds it too. One evaluator, several evaluations, as a sliding window makes them;
test_oracle.py holds the same against materialised windows for random schemas."""

from __future__ import annotations

from dataclasses import replace

import pyoxigraph as ox
import pytest

from rsep.grammar import parse_event_query
from rsep.plugin.graph_events import Timestamp
from rsep.plugin.store.kb import KnowledgeBase
from rsep.plugin.store.windows import OxigraphWindows
from rsep.plugin.windows import plan_windows
from rsep.plugin.windows.window_replay import StreamItem

E = "http://example.org/e#"
S = "urn:support:stream"
STATIC = "urn:support:static"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
SCHEMA = f"""<{E}Manager> <{RDFS}subClassOf> <{E}Employee> .
<{E}worksFor> <{RDFS}domain> <{E}Employee> .
"""
EMPLOYEES = {
    "csparql": (
        f"REGISTER QUERY q AS PREFIX : <{E}> SELECT ?x FROM STREAM <{S}> [RANGE 100s STEP 100s] "
        f"FROM <{STATIC}> WHERE {{ ?x a :Employee }}"
    ),
    "cqels": f"PREFIX : <{E}> SELECT ?x WHERE {{ STREAM <{S}> [RANGE 100s] {{ ?x a :Employee }} }}",
}
TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
MANAGER = f"<{E}ann> {TYPE} <{E}Manager> ."
WORKS = f"<{E}ann> <{E}worksFor> <{E}acme> ."
EMPLOYEE = f"<{E}ann> {TYPE} <{E}Employee> ."
ANN = f"<{E}ann>"


def evaluator(dialect: str, static: str = "") -> OxigraphWindows:
    kb = KnowledgeBase()
    kb.load_data(SCHEMA, ox.RdfFormat.N_TRIPLES)
    # C-SPARQL's FROM graph must exist to be read
    kb.load_data(f"<urn:m> <urn:m> <urn:m> .\n{static}", ox.RdfFormat.N_TRIPLES, graph=STATIC)
    query = parse_event_query(EMPLOYEES[dialect])
    return OxigraphWindows(plan_windows(replace(query, entailment="rdfs")), kb)


def employees(evaluator: OxigraphWindows, *windows: tuple[str, ...]) -> list[list[str]]:
    """?x of each evaluation, one per window content, in order (multiplicities kept)."""
    found = []
    for window in windows:
        items = [StreamItem(i, Timestamp(float(i), str(i), True), line, i) for i, line in enumerate(window)]
        found.append(sorted(row["x"] for row in evaluator.evaluate([items]).rows))
    return found


@pytest.mark.parametrize("dialect", list(EMPLOYEES))
def test_a_derived_triple_stays_while_another_window_triple_derives_it(dialect):
    # ann is an Employee as a Manager and by the domain of worksFor; the Manager triple leaves first
    found = employees(evaluator(dialect), (MANAGER, WORKS), (WORKS,), (), (MANAGER,), ())
    assert found == [[ANN], [ANN], [], [ANN], []]


@pytest.mark.parametrize("dialect", list(EMPLOYEES))
def test_a_derived_triple_the_window_holds_too_is_matched_once(dialect):
    found = employees(
        evaluator(dialect), (MANAGER, EMPLOYEE), (MANAGER,), (EMPLOYEE,), (MANAGER, EMPLOYEE), ()
    )
    assert found == [[ANN], [ANN], [ANN], [ANN], []]


def test_a_triple_the_static_data_derives_stays_when_its_window_source_leaves():
    # C-SPARQL's FROM graph holds `ann a :Manager`: ann is an Employee with or without the window
    found = employees(evaluator("csparql", MANAGER), (WORKS,), (), (WORKS, EMPLOYEE), (EMPLOYEE,), ())
    assert found == [[ANN], [ANN], [ANN], [ANN], [ANN]]


def test_a_derived_triple_the_static_data_holds_is_matched_once():
    found = employees(evaluator("csparql", EMPLOYEE), (MANAGER,), (MANAGER, WORKS), (WORKS,), ())
    assert found == [[ANN], [ANN], [ANN], [ANN]]


def typed(who: str, cls: str) -> ox.Triple:
    return ox.Triple(ox.NamedNode(E + who), ox.NamedNode(TYPE[1:-1]), ox.NamedNode(E + cls))


def test_nothing_is_kept_about_a_triple_once_it_has_left_the_window():
    """Memory follows the window, not the stream: the reasoning state, the parsed lines and the
    schema's per-term tables (terms the schema does not mention are not cached)."""
    windows = evaluator("cqels")
    for i in range(50):
        lines = (f"<{E}p{i}> {TYPE} <{E}Manager> .", f"<{E}p{i}> {TYPE} <{E}Unknown{i}> .")
        assert employees(windows, lines) == [[f"<{E}p{i}>"]]
    (graph,) = windows.entailed
    assert set(graph._window) == {typed("p49", "Manager"), typed("p49", "Unknown49")}
    assert set(graph._support) == {typed("p49", "Employee")}
    assert len(windows._triples) + len(windows._previous) <= 4
    assert {term for _, term in graph.closure._reached} == {ox.NamedNode(E + "Manager")}
