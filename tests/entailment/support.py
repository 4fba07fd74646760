"""The entailment fixtures (tests/fixtures/entailment) and how to run them in-process, the way
`rsep run --engine inprocess [--entailment rdfs]` does."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from rsep.endpoint.run_command import KbFile, RunRequest, StreamFile, load_kb, load_query, read_streams, run
from rsep.plugin.algebra.events import EventQuery, MatchElement
from rsep.plugin.algebra.sparql import GroupPattern
from rsep.plugin.compile.entailment import Mechanism, entail_pattern
from rsep.plugin.compile.query_plan import QueryPlan, compile_query, event_pattern_of
from rsep.plugin.graph_events import Timestamp
from rsep.plugin.numbering import number_events
from rsep.plugin.replay import Replay
from rsep.plugin.results import Projector, jsonl_line
from rsep.plugin.store.gpm_stage import GpmEvaluator
from tests.support.paths import FIXTURES

CASES_DIR = FIXTURES / "entailment"
NFA_CASES = [
    "spaseq-subclass",
    "spaseq-subproperty",
    "spaseq-domain",
    "spaseq-range",
    "epsparql-seq",
]
"""The fixtures `rsep run` replays as they are; `routes` needs knowledge-base updates between its
events (test_routes.py)."""
WINDOW_CASES = ["csparql-staff", "csparql-count", "cqels-cep"]
RULE_CASES = ["epsparql-rule"]
"""EP-SPARQL queries over the stream closed under CONSTRUCT rules (`--rule`)."""
CASES = NFA_CASES + WINDOW_CASES + RULE_CASES


def manifest(case: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((CASES_DIR / case / "manifest.json").read_text(encoding="utf-8"))
    return found


def expected(case: str, entailment: str | None) -> str:
    name = "expected.jsonl" if entailment else "expected-plain.jsonl"
    return (CASES_DIR / case / name).read_text(encoding="utf-8")


def request(case: str, entailment: str | None) -> RunRequest:
    folder = CASES_DIR / case
    streams = [StreamFile(iri, folder / file) for iri, file in manifest(case)["streams"].items()]
    kb = [KbFile(folder / file) for file in manifest(case).get("kb", [])]
    rules = [folder / file for file in manifest(case).get("rules", [])]
    t0 = manifest(case).get("t0")  # when a window query was registered (`rsep run --t0`)
    return RunRequest(
        folder / "query.rq",
        streams,
        kb,
        engine="inprocess",
        rules=rules,
        entailment=entailment,
        t0=None if t0 is None else Timestamp.parse(t0),
    )


def run_case(case: str, entailment: str | None) -> str:
    """What `rsep run --engine inprocess` prints for a fixture."""
    return run(request(case, entailment)).jsonl()


def with_mechanism(query: EventQuery, mechanism: Mechanism) -> EventQuery:
    """The query rewritten under RDFS with a given mechanism (no entailment left to apply)."""
    pattern = entail_pattern(event_pattern_of(query), "rdfs", mechanism)
    return replace(query, where=GroupPattern((MatchElement(pattern),)), entailment=None)


def run_plan(case: str, plan: QueryPlan) -> str:
    """An NFA fixture replayed in-process with a given plan, as jsonl."""
    req = request(case, None)
    kb = load_kb(req.kb)
    events = number_events(read_streams(plan, req.streams))
    matches = Replay(plan, GpmEvaluator(plan.gpms, kb)).run(events)
    return "".join(
        jsonl_line(s) + "\n" for s in Projector.for_plan(plan).solutions(matches, [n.event for n in events])
    )


def case_query(case: str) -> EventQuery:
    return load_query(CASES_DIR / case / "query.rq", RunRequest(CASES_DIR / case / "query.rq", []))


def compiled(case: str, mechanism: Mechanism) -> QueryPlan:
    return compile_query(with_mechanism(case_query(case), mechanism))


def folder(case: str) -> Path:
    return CASES_DIR / case
