"""A sub-select inside a GPM is matched against each event graph, as SPARQL's GRAPH defines it,
with and without entailment (it crashed without, and matched nothing with `--entailment rdfs`,
because Oxigraph evaluates a sub-select nested in `GRAPH ?event` against the union of the graphs
without binding ?event); so is a pattern that starts without a triple pattern (VALUES, then
OPTIONAL or [NOT] EXISTS), which Oxigraph would match once for all graphs. What cannot be moved
per event graph is refused with its position.
The entailment oracle (test_oracle.py) holds the sub-select shapes against materialised events."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from rsep.endpoint.run_command import run
from tests.entailment.support import request
from tests.support.cli import assert_failure, run_main

HEAD = """PREFIX : <http://example.org/org#>
SELECT *
FROM STREAM S1 <http://example.org/org/people>
WHERE {
  SEQ (A)
"""


def matches(tmp_path, gpm: str, entailment: str | None) -> list[tuple[int, dict[str, str]]]:
    query = tmp_path / "query.rq"
    query.write_text(HEAD + f"  DEFINE GPM A ON S1 {{ {gpm} }}\n}}\n", encoding="utf-8")
    result = run(replace(request("spaseq-subclass", entailment), query_file=query))
    return [(r["start"], r["bindings"]) for r in map(json.loads, result.jsonl().splitlines())]


def org(name: str) -> str:
    return f"<http://example.org/org#{name}>"


def test_a_sub_select_is_matched_against_each_event_graph(tmp_path):
    assert matches(tmp_path, "{ SELECT ?x WHERE { ?x a :Person } }", None) == [(3, {"x": org("cat")})]


def test_a_sub_select_joins_the_rest_of_the_gpm_in_the_same_event_only(tmp_path):
    # e9: hal a Manager ; headOf globex. e8: globex a Company. No event holds both parts.
    gpm = "{ SELECT ?x WHERE { ?x a :Manager } } ?x :headOf ?org"
    assert matches(tmp_path, gpm, None) == [(9, {"x": org("hal"), "org": org("globex")})]
    assert matches(tmp_path, "{ SELECT ?x WHERE { ?x a :Manager } } ?org a :Company", None) == []


def test_a_sub_select_matches_under_entailment(tmp_path):
    found = matches(tmp_path, "{ SELECT ?x WHERE { ?x a :Person } }", "rdfs")
    assert found == [
        (t, {"x": org(n)})
        for t, n in [(1, "ann"), (3, "cat"), (4, "dan"), (5, "eve"), (7, "gus"), (9, "hal")]
    ]


def test_a_grouped_sub_select_counts_per_event_and_entailed_triples_once(tmp_path):
    # e9: hal is a Manager, an Employee and a Person (the last two by two derivations each):
    # three types, as over the event graph with its RDFS consequences
    gpm = "{ SELECT ?x (COUNT(*) AS ?n) WHERE { ?x a [] } GROUP BY ?x }"
    counts = {(t, b["x"]): int(b["n"].split('"')[1]) for t, b in matches(tmp_path, gpm, "rdfs")}
    assert counts == {
        (1, org("ann")): 3,  # Manager, Employee, Person
        (2, org("bob")): 1,  # Robot (Robot ⊑ Person is in a named graph)
        (3, org("cat")): 1,
        (4, org("dan")): 2,  # Employee, Person (domain of worksFor)
        (4, org("acme")): 1,  # Organisation (range)
        (5, org("eve")): 2,
        (5, org("initech")): 1,
        (7, org("gus")): 2,
        (8, org("globex")): 2,  # Company, Organisation
        (9, org("hal")): 3,
        (9, org("globex")): 1,
    }
    plain = {(t, b["x"]): int(b["n"].split('"')[1]) for t, b in matches(tmp_path, gpm, None)}
    assert plain == {(1, org("ann")): 1, (2, org("bob")): 1, (3, org("cat")): 1, (8, org("globex")): 1,
                     (9, org("hal")): 1}  # fmt: skip


@pytest.mark.parametrize("entailment", [None, "rdfs"])
@pytest.mark.parametrize("gpm", ["{ SELECT ?x WHERE { VALUES ?x { :ann } } }", "VALUES ?x { :ann }"])
def test_a_values_block_without_triple_patterns_matches_every_event_once(tmp_path, gpm, entailment):
    # SPARQL's GRAPH ?e { VALUES ... } has the VALUES rows once per graph (Oxigraph binds no ?e)
    assert matches(tmp_path, gpm, entailment) == [(t, {"x": org("ann")}) for t in range(1, 10)]


@pytest.mark.parametrize("entailment", [None, "rdfs"])
def test_a_union_with_a_values_branch_is_grouped_per_event(tmp_path, entailment):
    gpm = (
        "{ SELECT ?x (COUNT(*) AS ?n) WHERE { { VALUES ?x { :ann } } UNION { ?x a :Manager } } GROUP BY ?x }"
    )
    counts = sorted((t, b["x"], int(b["n"].split('"')[1])) for t, b in matches(tmp_path, gpm, entailment))
    others = [(t, org("ann"), 1) for t in range(2, 9)]
    assert counts == [(1, org("ann"), 2), *others, (9, org("ann"), 1), (9, org("hal"), 1)]


@pytest.mark.parametrize(
    ("gpm", "plain", "entailed"),
    [
        # what follows a VALUES block is matched per event graph, as SPARQL's GRAPH defines it
        (
            "VALUES ?x { :ann } FILTER NOT EXISTS { ?x a :Manager }",
            [(t, {"x": org("ann")}) for t in range(2, 10)],
            [(t, {"x": org("ann")}) for t in range(2, 10)],
        ),
        ("VALUES ?x { :hal } FILTER EXISTS { ?x a :Person }", [], [(9, {"x": org("hal")})]),
        (
            "VALUES ?x { :ann } OPTIONAL { ?x a ?c }",
            [(1, {"x": org("ann"), "c": org("Manager")}), *((t, {"x": org("ann")}) for t in range(2, 10))],
            [
                *((1, {"x": org("ann"), "c": org(c)}) for c in ("Employee", "Manager", "Person")),
                *((t, {"x": org("ann")}) for t in range(2, 10)),
            ],
        ),
        (
            "?y a :Company OPTIONAL { VALUES ?x { :ann } OPTIONAL { ?x a ?c } }",
            [(8, {"y": org("globex"), "x": org("ann")})],
            [(8, {"y": org("globex"), "x": org("ann")})],
        ),
    ],
)
def test_a_pattern_that_starts_without_a_triple_pattern_is_matched_per_event(tmp_path, gpm, plain, entailed):
    for entailment, expected in ((None, plain), ("rdfs", entailed)):
        found = sorted(matches(tmp_path, gpm, entailment), key=lambda r: (r[0], sorted(r[1].items())))
        assert found == sorted(expected, key=lambda r: (r[0], sorted(r[1].items()))), entailment


@pytest.mark.parametrize(
    ("sub_select", "reason"),
    [
        ("{ SELECT ?x WHERE { ?x a :Person } LIMIT 1 }", "LIMIT or OFFSET"),
        ("{ SELECT (COUNT(*) AS ?n) WHERE { ?x a :Person } }", "aggregates without GROUP BY"),
    ],
)
def test_a_sub_select_that_needs_one_evaluation_per_event_is_refused_at_the_gpm(
    tmp_path, capsys, sub_select, reason
):
    query = tmp_path / "query.rq"
    query.write_text(HEAD + f"  DEFINE GPM A ON S1 {{ {sub_select} }}\n}}\n", encoding="utf-8")
    result = run_main(capsys, query)
    assert_failure(
        result, rf"{re.escape(str(query))}:6:14: GPM A: a sub-select with {reason} is not supported .*"
    )
