"""The continuous-query endpoint in tests: applications on a data folder in tmp (in-process
engine, checkpoint after every batch, short SSE heartbeats; the fixtures `data_dir`, `make_app`
and `app` of tests/conftest.py make them), waiting for their engine, and a client's calls:
registering queries, posting events, reading evaluation graphs back with SPARQL."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flask import Flask

from rsep.endpoint.engines import Streaming
from rsep.plugin.graph_events import GraphEvent, Timestamp
from tests.support.run_cases import Case

OTHER = "http://example.org/another-stream"
"""A stream no query reads."""
PREFIXES = """PREFIX rs: <http://www.w3.org/2001/sw/DataAccess/tests/result-set#>
PREFIX rsep: <https://w3id.org/rsep#>
PREFIX prov: <http://www.w3.org/ns/prov#>
"""
NUMBERS = {"integer": int, "decimal": float, "double": float}


def config(data: Path, **overrides: Any) -> dict[str, Any]:
    return {
        "RSEP_DATA_DIR": str(data),
        "RSEP_ENGINE": "inprocess",
        "RSEP_CHECKPOINT_INTERVAL": 0,
        "RSEP_SSE_HEARTBEAT": 0.2,
        "TESTING": True,
        **overrides,
    }


def shut_down(app: Flask) -> None:
    for hook in app.extensions.get("rsep.shutdown", []):
        hook()


def service(app: Flask) -> Streaming:
    found: Streaming = app.extensions["rsep.streaming"]
    return found


def wait_for(predicate: Callable[[], object], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the engine")
        time.sleep(0.02)


def caught_up(app: Flask) -> Callable[[], bool]:
    """Every registered query has read the whole log."""

    def check() -> bool:
        found = service(app)
        head = found.log.next_position
        for query in found.registry.all():
            progress = found.engine.progress(query.id)
            if progress is None or progress.position < head:
                return False
        return True

    return check


def nquads_of(event: GraphEvent) -> str:
    """An event as the N-Quads a client posts (graph + prov:generatedAtTime)."""
    return event.nquads()


# --------------------------------------------------------------------------- a client's calls


def register(client, text: str, **args: str):
    response = client.post("/queries", data=text, content_type="application/sparql-query", query_string=args)
    return response


def later_event(after: list[GraphEvent]) -> GraphEvent:
    """An event on a stream no query reads, after every other: it makes every evaluation final."""
    t = max(e.time.seconds for e in after) + 100_000
    return GraphEvent(OTHER, "<http://example.org/tick>", Timestamp(t, str(int(t)), True), "")


def registration_tick(t0: str) -> GraphEvent:
    """An event at `t0` on a stream no query reads: a query registered after it is registered at
    `t0`, the log's time then, where its windows start (docs/semantics.md, "Evaluation times");
    a fixture's `t0` (tests/support/run_cases.py) on the endpoint."""
    return GraphEvent(OTHER, "<http://example.org/registered>", Timestamp.parse(t0), "")


def register_case(client, case: Case):
    """Register a fixture's query (tests/support/run_cases.py) at the fixture's `t0`, as `rsep run`
    runs it (`Case.request`); the response."""
    if case.t0 is not None:
        ingest(client, [registration_tick(case.t0)])
    return register(client, (case.folder / "query.rq").read_text(encoding="utf-8"))


def ingest(client, events: list[GraphEvent]) -> None:
    for e in events:
        response = client.post(
            f"/streams?stream={e.stream}", data=nquads_of(e), content_type="application/n-quads"
        )
        assert response.status_code == 202, response.get_data(as_text=True)


def sparql(client, query: str) -> list[dict]:
    response = client.post(
        "/sparql", data=PREFIXES + query, content_type="application/sparql-query",
        headers={"Accept": "application/sparql-results+json"},
    )  # fmt: skip
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.json["results"]["bindings"]


def nt(term: dict) -> str:
    """A SPARQL JSON term as N-Triples, as `rsep run` prints bindings."""
    value = term["value"]
    if term["type"] == "uri":
        return f"<{value}>"
    if term["type"] == "bnode":
        return f"_:{value}"
    text = json.dumps(value, ensure_ascii=False)
    if "xml:lang" in term:
        return f"{text}@{term['xml:lang']}"
    datatype = term.get("datatype", "http://www.w3.org/2001/XMLSchema#string")
    return text if datatype.endswith("#string") else f"{text}^^<{datatype}>"


def number(term: dict) -> object:
    kind = term.get("datatype", "").rsplit("#", 1)[-1]
    return NUMBERS[kind](term["value"]) if kind in NUMBERS else term["value"]


def read_back(client, query_iri: str) -> list[dict]:
    """Every solution of every evaluation graph of a query, as `rsep run --format jsonl` lines."""
    rows = sparql(
        client,
        f"""SELECT ?g ?time ?start ?end ?solution ?name ?value WHERE {{
  GRAPH <urn:rsep:matches> {{ ?g prov:wasGeneratedBy <{query_iri}> ; a rsep:Match ;
                              rsep:time ?time ; rsep:start ?start ; rsep:end ?end }}
  GRAPH ?g {{ [] a rs:ResultSet ; rs:solution ?solution .
             OPTIONAL {{ ?solution rs:binding [ rs:variable ?name ; rs:value ?value ] }} }}
}}""",
    )
    solutions: dict[tuple[str, str], dict] = {}
    for row in rows:
        key = (row["g"]["value"], row["solution"]["value"])
        record = {"time": number(row["time"]), "start": number(row["start"]), "end": number(row["end"])}
        found = solutions.setdefault(key, {**record, "bindings": {}})
        if "name" in row:
            found["bindings"][row["name"]["value"]] = nt(row["value"])
    return ordered([{k: v for k, v in s.items() if k != "time"} for s in solutions.values()])


def ordered(records: list[dict]) -> list[dict]:
    return sorted(records, key=lambda r: json.dumps(r, sort_keys=True))


def evaluation_graphs(client, query_iri: str) -> list[str]:
    rows = sparql(
        client, f"SELECT ?g WHERE {{ GRAPH <urn:rsep:matches> {{ ?g prov:wasGeneratedBy <{query_iri}> }} }}"
    )
    return sorted(r["g"]["value"] for r in rows)
