"""A REGISTER STREAM producer's blank nodes on the endpoint: fresh per solution and per evaluation,
also when two closes reuse one evaluation's solutions, and the same in the events it derives as in
its own evaluation graphs (both are named after the query id and the evaluation time)."""

from __future__ import annotations

import re

from rsep.plugin.graph_events import GraphEvent, Timestamp
from tests.endpoint_streaming.support import at, ingest_each, logged, registered
from tests.support.streaming_endpoint import caught_up, evaluation_graphs, nt, read_back, sparql, wait_for

EX = "http://ex.org/"
STREAM = f"{EX}s"
OUT = f"{EX}out"
PRODUCER = f"""REGISTER STREAM <{OUT}> AS PREFIX : <{EX}>
CONSTRUCT {{ [] :saw ?c }} FROM STREAM <{STREAM}> [RANGE 2s STEP 1s] WHERE {{ ?c :on ?r }}"""
COUNTER = f"""PREFIX : <{EX}>
SELECT (COUNT(DISTINCT ?b) AS ?n) (COUNT(*) AS ?all)
FROM STREAM <{OUT}> [RANGE 20s STEP 20s]
WHERE {{ ?b :saw ?c }}"""
INTEGER = "<http://www.w3.org/2001/XMLSchema#integer>"
BLANK = re.compile(r"_:\S+")


def seen(t: int, car: str) -> GraphEvent:
    return GraphEvent(
        STREAM, f"<{EX}e{t}>", Timestamp(float(t), str(t), True), f"<{EX}{car}> <{EX}on> <{EX}r> .\n"
    )


def test_a_consumer_of_a_producer_counts_a_blank_node_per_solution_of_every_close(app):
    """Closes 1 (c1), 2 (c1, c2), 3 (c2), 10 (c3) and 11 (c3, the same window as 10): 6 blank nodes,
    named alike in the log's derived events and in the producer's evaluation graphs. Both queries
    are registered after a tick at -1, the log's time then: their t0, so the window (-1, 1] of
    close 1 opens at or after it."""
    client = app.test_client()
    ingest_each(client, [at(-1)])
    producer = registered(client, PRODUCER)
    consumer = registered(client, COUNTER)
    ingest_each(client, [seen(1, "c1"), seen(2, "c2"), seen(10, "c3"), at(30)])
    derived = {node for _, _, triples in logged(app, OUT) for node in BLANK.findall(triples)}
    assert [time for _, time, _ in logged(app, OUT)] == ["1", "2", "3", "10", "11"]
    assert len(derived) == 6
    wait_for(caught_up(app))  # the engine writes the evaluation graphs after the request
    graphs = evaluation_graphs(client, producer["iri"])
    rows = sparql(client, "SELECT ?g ?b WHERE { GRAPH ?g { ?b <http://ex.org/saw> ?c } }")
    written = {nt(row["b"]) for row in rows if row["g"]["value"] in graphs}
    assert written == derived
    six = f'"6"^^{INTEGER}'
    assert read_back(client, consumer["iri"]) == [{"start": 0, "end": 20, "bindings": {"n": six, "all": six}}]
