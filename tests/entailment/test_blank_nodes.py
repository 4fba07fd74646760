"""A blank node in a pattern is an existential variable: under entailment, as without it, each of
its witnesses is a solution of its own. With a schema that derives nothing about the event,
`entailment=rdfs` gives exactly the answer without entailment; what it derives adds witnesses;
two derivations of one triple stay one witness (docs/semantics.md, "Solutions")."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from rsep.endpoint.run_command import KbFile, RunRequest, StreamFile, run
from rsep.grammar import parse_event_query
from rsep.plugin.compile.query_plan import compile_query
from rsep.plugin.graph_events import Timestamp
from rsep.plugin.store.event_reader import read_event_file
from rsep.plugin.store.gpm_stage import GpmEvaluator
from rsep.plugin.store.kb import KnowledgeBase

EX = "http://ex.org/#"
STREAM = "http://ex.org/s"
EVENT = f"""@prefix : <{EX}> .
@prefix prov: <http://www.w3.org/ns/prov#> .
:e1 {{ :x a :K, :L . }}
:e1 prov:generatedAtTime 1 .
"""
PREFIX = f"@prefix : <{EX}> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
SCHEMAS = {
    "nothing derived": ":A rdfs:subClassOf :B .",
    "a stored type derived again": ":K rdfs:subClassOf :L .",
    "one more type, derived twice": ":K rdfs:subClassOf :M . :L rdfs:subClassOf :M .",
}
ZERO = Timestamp.parse("0")
COUNT = f"""REGISTER QUERY q AS PREFIX : <{EX}>
SELECT (COUNT(*) AS ?n) FROM STREAM <{STREAM}> [RANGE 10s STEP 10s] WHERE {{ ?x a [] }}"""
GPM = f"""PREFIX : <{EX}> SELECT * FROM STREAM S1 <{STREAM}>
WHERE {{ SEQ (A) DEFINE GPM A ON S1 {{ ?x a [] }} }}"""


@pytest.fixture
def files(tmp_path: Path):
    def write(schema: str) -> tuple[Path, Path]:
        (tmp_path / "schema.ttl").write_text(PREFIX + SCHEMAS[schema], encoding="utf-8")
        (tmp_path / "events.trig").write_text(EVENT, encoding="utf-8")
        return tmp_path / "schema.ttl", tmp_path / "events.trig"

    return write


def window_count(files, schema: str, entailment: str | None) -> str:
    kb, events = files(schema)
    query = events.parent / "count.rq"
    query.write_text(COUNT, encoding="utf-8")
    # registered at 0 (`--t0 0`): the window (0, 10] opens at t0, so it holds the event at 1
    request = RunRequest(query, [StreamFile(STREAM, events)], [KbFile(kb)], engine="inprocess", t0=ZERO)
    return run(replace(request, entailment=entailment)).jsonl()


def gpm_rows(files, schema: str, entailment: str | None) -> list[dict[str, str]]:
    kb_file, events = files(schema)
    kb = KnowledgeBase()
    kb.load(kb_file)
    plan = compile_query(replace(parse_event_query(GPM), entailment=entailment))
    (event,) = read_event_file(events, STREAM, scope="s")
    return [mapping for _, mapping in GpmEvaluator(plan.gpms, kb).evaluate([(0, event)]).get(0, [])]


def count_line(n: int) -> str:
    return f'{{"start": 0, "end": 10, "bindings": {{"n": "\\"{n}\\"^^<http://www.w3.org/2001/XMLSchema#integer>"}}}}\n'


@pytest.mark.parametrize(
    ("schema", "entailed"),
    [("nothing derived", 2), ("a stored type derived again", 2), ("one more type, derived twice", 3)],
)
def test_a_window_counts_one_solution_per_blank_node_witness(files, schema, entailed):
    assert window_count(files, schema, None) == count_line(2)
    assert window_count(files, schema, "rdfs") == count_line(entailed)


@pytest.mark.parametrize(
    ("schema", "entailed"),
    [("nothing derived", 2), ("a stored type derived again", 2), ("one more type, derived twice", 3)],
)
def test_a_gpm_finds_one_row_per_blank_node_witness(files, schema, entailed):
    x = {"x": f"<{EX}x>"}
    assert gpm_rows(files, schema, None) == [x, x]
    assert gpm_rows(files, schema, "rdfs") == [x] * entailed
