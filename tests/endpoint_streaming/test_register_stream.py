"""C-SPARQL `REGISTER STREAM <s> AS CONSTRUCT` on the endpoint: its evaluations become events of
<s> in the event log, derived inside the ingest request that makes their close final, and feed
registered queries of any dialect reading `FROM STREAM <s>`, with the answers `rsep run --rule`
gives over the same events, exactly once across restarts (docs/endpoint.md, "Streams produced by
queries")."""

from __future__ import annotations

import gc
import shutil
from pathlib import Path

import pytest

from rsep.endpoint.app import create_app
from rsep.endpoint.run_command import RunRequest, StreamFile, derive_streams, load_rules
from rsep.plugin.graph_events import GraphEvent
from rsep.plugin.service.window_runner import WindowRunner
from rsep.plugin.store.event_reader import read_event_file
from rsep.plugin.store.kb import KnowledgeBase
from rsep.plugin.store.windows import OxigraphWindows
from tests.endpoint_streaming.support import at, ingest_each, logged, post, registered
from tests.support.congested_roads import CONGESTED, EX, PRODUCER, TUMBLING
from tests.support.run_cases import output
from tests.support.streaming_endpoint import (
    OTHER,
    caught_up,
    config,
    evaluation_graphs,
    later_event,
    nt,
    number,
    ordered,
    read_back,
    register,
    service,
    shut_down,
    sparql,
    wait_for,
)

CARS = f"{EX}cars"
ALERTS = f"{EX}Alerts"
COUNTED = f"{EX}Counted"
CSPARQL_CONSUMER = f"""PREFIX : <{EX}> SELECT ?road ?n FROM STREAM <{CONGESTED}> [RANGE 20s STEP 10s]
WHERE {{ ?road :congestedWith ?n }}"""
CQELS_CONSUMER = f"""PREFIX : <{EX}> SELECT ?road ?n
WHERE {{ STREAM <{CONGESTED}> [RANGE 10s] {{ ?road :congestedWith ?n }} }}"""
SPASEQ_CONSUMER = f"""PREFIX : <{EX}>
SELECT ?car ?road
FROM STREAM S1 <{CARS}>
FROM STREAM S2 <{CONGESTED}>
WHERE {{ SEQ (A : B)
  DEFINE GPM A ON S1 {{ ?car :on ?road }} DEFINE GPM B ON S2 {{ ?road :congestedWith ?n }} }}"""
ALERTS_PRODUCER = f"""REGISTER STREAM <{ALERTS}> AS PREFIX : <{EX}>
CONSTRUCT {{ ?road :alert ?n }} FROM STREAM <{CONGESTED}> [RANGE 10s TUMBLING]
WHERE {{ ?road :congestedWith ?n }}"""
COUNTING_PRODUCER = f"""REGISTER STREAM <{COUNTED}> AS PREFIX : <{EX}>
CONSTRUCT {{ :cars :counted ?n }} FROM STREAM <{CARS}> [RANGE 5s STEP 5s]
WHERE {{ {{ SELECT (COUNT(?car) AS ?n) WHERE {{ ?car :on ?road }} }} }}"""
"""Constructs something at every close, also over an empty window (COUNT 0)."""


def cars() -> list[GraphEvent]:
    """Cars on r1 at 1, 3 and 21, on r2 at 4, 12 and 15: PRODUCER derives r1 at 10, r2 at 20."""
    return read_event_file(TUMBLING / "cars.trig", CARS, scope="s0")


def rule_events(folder: Path, rules: list[str], streams: dict[str, list[GraphEvent]]) -> dict:
    """What `rsep run --rule` derives from these rules over these streams, per produced stream."""
    paths = []
    for index, text in enumerate(rules):
        path = folder / f"rule{index}.rq"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    stream_rules, _ = load_rules(RunRequest(folder / "none.rq", [], rules=paths, engine="inprocess"))
    derived = dict(streams)
    derive_streams(stream_rules, KnowledgeBase(), derived)
    return {
        rule.query.produced_stream: [
            (e.name, e.time.lexical, e.ntriples) for e in derived[rule.query.produced_stream]
        ]
        for rule in stream_rules
    }


def rsep_run(folder: Path, query: str, rules: list[str]) -> list[dict]:
    """`rsep run QUERY --rule ... --stream cars=cars.trig --format jsonl`, as records."""
    (folder / "consumer.rq").write_text(query, encoding="utf-8")
    paths = []
    for index, text in enumerate(rules):
        path = folder / f"rule{index}.rq"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    request = RunRequest(
        folder / "consumer.rq", [StreamFile(CARS, TUMBLING / "cars.trig")], rules=paths, engine="inprocess"
    )
    return output(request)


def read_matches(client, query_iri: str) -> list[dict]:
    """The match graphs of an event-pattern query as `rsep run --format jsonl` lines."""
    rows = sparql(
        client,
        f"""SELECT ?g ?start ?end ?name ?value WHERE {{
  GRAPH <urn:rsep:matches> {{ ?g prov:wasGeneratedBy <{query_iri}> ; rsep:start ?start ; rsep:end ?end }}
  GRAPH ?g {{ [] rs:solution [ rs:binding [ rs:variable ?name ; rs:value ?value ] ] }}
}}""",
    )
    matches: dict[str, dict] = {}
    for row in rows:
        record = {"start": number(row["start"]), "end": number(row["end"]), "bindings": {}}
        matches.setdefault(row["g"]["value"], record)["bindings"][row["name"]["value"]] = nt(row["value"])
    return ordered(list(matches.values()))


# --------------------------------------------------------------------------- consumers


def test_a_producer_feeds_csparql_cqels_and_spaseq_queries_as_rsep_run_rule_does(app, tmp_path):
    client = app.test_client()
    producer = registered(client, PRODUCER)
    assert producer["produces"] == CONGESTED
    consumers = {
        text: registered(client, text) for text in (CSPARQL_CONSUMER, CQELS_CONSUMER, SPASEQ_CONSUMER)
    }
    answers = ingest_each(client, [*cars(), later_event(cars())])
    # the mark at 0 (the cars' first event) is t0; the car at 12 makes close 10 final: r1's
    # congestion goes into its record, before the car; the car at 21 does the same for close 20
    # (r2); nothing else constructs anything
    assert [a["derived"] for a in answers] == [
        [], [], [], [],
        [{"position": 4, "stream": CONGESTED, "time": 10}],
        [],
        [{"position": 7, "stream": CONGESTED, "time": 20}],
        [],
    ]  # fmt: skip
    assert [(a["accepted"], a["first_position"], a["next_position"]) for a in answers[4:7]] == [
        (1, 4, 6),
        (1, 6, 7),
        (1, 7, 9),
    ]
    assert logged(app, CONGESTED) == rule_events(tmp_path, [PRODUCER], {CARS: cars()})[CONGESTED]
    wait_for(caught_up(app))
    for text in (CSPARQL_CONSUMER, CQELS_CONSUMER):
        expected = rsep_run(tmp_path, text, [PRODUCER])
        assert expected and read_back(client, consumers[text]["iri"]) == ordered(expected), text
    expected = rsep_run(tmp_path, SPASEQ_CONSUMER, [PRODUCER])
    assert len(expected) == 5
    assert read_matches(client, consumers[SPASEQ_CONSUMER]["iri"]) == ordered(expected)
    # the producer still writes its own evaluation graphs, one per evaluation that constructed something
    assert len(evaluation_graphs(client, producer["iri"])) == 2


def test_a_chain_of_producers_runs_in_dependency_order_within_one_request(app, tmp_path):
    """Alerts reads CongestedRoads and is registered first: the request whose car at 12 makes
    close 10 final holds r1's congestion at 10, then the alert it causes at 10, then the car."""
    client = app.test_client()
    alerts = registered(client, ALERTS_PRODUCER)
    registered(client, PRODUCER)
    consumer = registered(client, f"PREFIX : <{EX}> SELECT ?road ?n WHERE {{ ?road :alert ?n }}")
    answers = ingest_each(client, [*cars(), later_event(cars())])
    assert answers[4]["derived"] == [  # after the mark at 0 and the cars at 1, 3 and 4
        {"position": 4, "stream": CONGESTED, "time": 10},
        {"position": 5, "stream": ALERTS, "time": 10},
    ]
    assert answers[6]["derived"] == [
        {"position": 8, "stream": CONGESTED, "time": 20},
        {"position": 9, "stream": ALERTS, "time": 20},
    ]
    expected = rule_events(tmp_path, [ALERTS_PRODUCER, PRODUCER], {CARS: cars()})
    assert logged(app, CONGESTED) == expected[CONGESTED]
    assert logged(app, ALERTS) == expected[ALERTS]
    wait_for(caught_up(app))
    assert client.get(f"/queries/{alerts['id']}").json["produces"] == ALERTS
    lines = rsep_run(
        tmp_path, f"PREFIX : <{EX}> SELECT ?road ?n WHERE {{ ?road :alert ?n }}", [ALERTS_PRODUCER, PRODUCER]
    )
    assert [(line["end"], line["bindings"]["road"]) for line in lines] == [
        (10, f"<{EX}r1>"),
        (20, f"<{EX}r2>"),
    ]
    assert read_matches(client, consumer["iri"]) == ordered(lines)


def test_a_producer_evaluates_every_close_the_log_passes(app, tmp_path):
    """A COUNT constructs at every close, also over an empty window: after its last car (21) the
    closes 30 and 35 are passed by an event at 40 of another stream, and produce 0 each; the close
    at 40 waits for a later event. `rsep run --rule` evaluates up to the run's last event too."""
    client = app.test_client()
    registered(client, COUNTING_PRODUCER)
    ingest_each(client, [*cars(), at(40)])
    counted = [(time, triples.split('"')[1]) for _, time, triples in logged(app, COUNTED)]
    assert counted == [
        ("5", "3"),
        ("10", "0"),
        ("15", "2"),
        ("20", "0"),
        ("25", "1"),
        ("30", "0"),
        ("35", "0"),
    ]
    expected = rule_events(tmp_path, [COUNTING_PRODUCER], {CARS: cars(), OTHER: [at(40)]})[COUNTED]
    assert expected[-1][1] == "40"  # final in a finite run, not yet on the endpoint
    assert logged(app, COUNTED) == expected[:-1]


def test_one_request_spanning_closes_interleaves_the_derived_events_by_time(app, tmp_path):
    """All the cars in one request: each close goes between the events before and after it, and a
    derived event at t' follows the events at t'."""
    client = app.test_client()
    registered(client, COUNTING_PRODUCER)
    events = [*cars(), at(15, CARS, "car-at-close"), at(40)]
    events.sort(key=lambda e: e.time.seconds)
    body = "".join(e.nquads() for e in events if e.stream == CARS)
    response = client.post(f"/streams?stream={CARS}", data=body, content_type="application/n-quads")
    assert response.status_code == 202, response.get_data(as_text=True)
    assert response.json["accepted"] == 8  # the mark at 0 (t0) and the cars
    assert [d["time"] for d in response.json["derived"]] == [5, 10, 15, 20]
    times = [(r.event.stream, r.event.time.lexical) for r in service(app).log.read()]
    assert times == [
        (CARS, "0"), (CARS, "1"), (CARS, "3"), (CARS, "4"), (COUNTED, "5"), (COUNTED, "10"), (CARS, "12"),
        (CARS, "15"), (CARS, "15"), (COUNTED, "15"), (COUNTED, "20"), (CARS, "21"),
    ]  # fmt: skip
    assert post(client, at(40)).json["derived"] == [
        {"position": 12 + i, "stream": COUNTED, "time": t} for i, t in enumerate((25, 30, 35))
    ]
    streams = {CARS: [e for e in events if e.stream == CARS], OTHER: [at(40)]}
    assert logged(app, COUNTED) == rule_events(tmp_path, [COUNTING_PRODUCER], streams)[COUNTED][:-1]


# --------------------------------------------------------------------------- exactly once


def test_a_restart_resumes_producer_and_consumer_exactly_once(make_app, data_dir, tmp_path):
    """Stopped after the cars at 1 and 3, and again after the car at 12 (r1's congestion at 10 is
    in the log) with every checkpoint lost: the producer takes its progress from the log, so close
    10 is not derived again, and re-reads its window from the log, so the car at 12 still counts at
    close 20; the consumer writes no graph twice."""
    events = [*cars(), later_event(cars())]
    app = create_app(config(data_dir))
    client = app.test_client()
    producer = registered(client, PRODUCER)
    consumer = registered(client, CSPARQL_CONSUMER)
    ingest_each(client, events[:3])  # the mark at 0 (t0), the cars at 1 and 3
    wait_for(caught_up(app))
    shut_down(app)
    del client, app
    gc.collect()
    app = create_app(config(data_dir))
    client = app.test_client()
    answers = ingest_each(client, events[3:5])
    wait_for(caught_up(app))
    shut_down(app)
    del client, app
    gc.collect()
    shutil.rmtree(data_dir / "checkpoints")
    app = make_app()
    client = app.test_client()
    answers += ingest_each(client, events[5:])
    assert [d["time"] for a in answers for d in a["derived"]] == [10, 20]
    assert logged(app, CONGESTED) == rule_events(tmp_path, [PRODUCER], {CARS: cars()})[CONGESTED]
    wait_for(caught_up(app))
    assert read_back(client, consumer["iri"]) == ordered(rsep_run(tmp_path, CSPARQL_CONSUMER, [PRODUCER]))
    graphs = evaluation_graphs(client, consumer["iri"])
    # closes 20 and 30: (-10, 10] opened before t0 (the mark at 0, the first event logged)
    assert len(graphs) == client.get(f"/queries/{consumer['id']}").json["matches"] == 2
    assert len(evaluation_graphs(client, producer["iri"])) == 2


def test_a_failed_append_stores_nothing_and_the_next_request_derives_it(app, tmp_path, monkeypatch):
    """The request is not acknowledged, so its derived events are lost with it; the producers,
    whose windows had read it, are rebuilt from the log before the next request."""
    client = app.test_client()
    registered(client, PRODUCER)
    events = cars()
    ingest_each(client, events[:3])
    log = service(app).log
    real = log.append

    def full_disk(batch):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(log, "append", full_disk)
    with pytest.raises(OSError):
        post(client, events[3])
    assert log.next_position == 3
    monkeypatch.setattr(log, "append", real)
    answers = ingest_each(client, events[3:])
    assert [d["time"] for a in answers for d in a["derived"]] == [10, 20]
    assert logged(app, CONGESTED) == rule_events(tmp_path, [PRODUCER], {CARS: cars()})[CONGESTED]


@pytest.mark.parametrize("step", ["evaluate", "read"])
def test_a_producer_that_raises_is_marked_failed_and_ingest_and_the_other_producers_go_on(
    app, monkeypatch, step
):
    """A producer's fault never fails a client's valid events with a 500: the producer stops, its
    registration says why, and the request and the other producers go on (the counting producer
    derives its closes before 21 as if alone)."""
    client = app.test_client()
    broken = registered(client, PRODUCER)
    registered(client, COUNTING_PRODUCER)

    def failing(real):
        def call(self, *args):
            if self.plan.query.produced_stream == CONGESTED:
                raise RuntimeError("the store is unavailable")
            return real(self, *args)

        return call

    if step == "evaluate":
        monkeypatch.setattr(OxigraphWindows, "evaluate", failing(OxigraphWindows.evaluate))
    else:
        monkeypatch.setattr(WindowRunner, "take", failing(WindowRunner.take))
    ingest_each(client, cars())  # each a 202
    summary = client.get(f"/queries/{broken['id']}").json
    assert (summary["status"], summary["error"]) == ("failed", "RuntimeError: the store is unavailable")
    assert logged(app, CONGESTED) == []
    counted = [(time, triples.split('"')[1]) for _, time, triples in logged(app, COUNTED)]
    assert counted == [("5", "3"), ("10", "0"), ("15", "2"), ("20", "0")]
    assert service(app).log.next_position == len(cars()) + 4


# --------------------------------------------------------------------------- refusals


def test_producers_reading_each_other_in_a_cycle_are_refused(app):
    client = app.test_client()
    registered(client, PRODUCER.replace(f"<{CARS}>", f"<{ALERTS}>"))  # CongestedRoads reads Alerts
    response = register(client, ALERTS_PRODUCER)  # Alerts reads CongestedRoads
    assert response.status_code == 400
    assert (
        f"REGISTER STREAM <{ALERTS}> would read its own output: <{ALERTS}> -> <{CONGESTED}> -> <{ALERTS}>"
        in response.get_data(as_text=True)
    )
    own = register(client, COUNTING_PRODUCER.replace(f"<{CARS}>", f"<{COUNTED}>"))
    assert own.status_code == 400
    assert f"<{COUNTED}> -> <{COUNTED}>" in own.get_data(as_text=True)
    assert len(client.get("/queries").json["queries"]) == 1


def test_a_second_producer_of_a_stream_and_an_old_start_are_refused(app):
    client = app.test_client()
    ingest_each(client, [at(1)])
    from_zero = register(client, PRODUCER, **{"from": "0"})
    assert from_zero.status_code == 400
    assert "from=now only" in from_zero.get_data(as_text=True)
    registered(client, PRODUCER)
    again = register(client, PRODUCER.replace(">= 2", ">= 1"))
    assert again.status_code == 400
    assert "a stream has one REGISTER STREAM query" in again.get_data(as_text=True)
    assert len(client.get("/queries").json["queries"]) == 1


def test_a_register_stream_that_produces_no_stream_registers_with_a_warning_saying_why(app):
    """A bare name stays a relative IRI on the endpoint, and only a CONSTRUCT produces events:
    such a REGISTER STREAM writes evaluation graphs only, which its answer says."""
    client = app.test_client()
    bare = registered(client, PRODUCER.replace(f"<{CONGESTED}>", "CongestedRoads"))
    assert "produces" not in bare
    assert bare["warnings"] == [
        "REGISTER STREAM CongestedRoads names no stream: a name that is not an absolute IRI stays a relative "
        "IRI here (it precedes the query's BASE), so the query only writes its evaluation graphs (no event "
        "of any stream); write REGISTER STREAM <http://...> AS to produce a stream other queries read"
    ]
    selecting = registered(
        client,
        f"""REGISTER STREAM <{ALERTS}> AS PREFIX : <{EX}>
SELECT ?road FROM STREAM <{CARS}> [RANGE 10s TUMBLING] WHERE {{ ?car :on ?road }}""",
    )
    assert "produces" not in selecting
    assert selecting["warnings"] == [
        f"REGISTER STREAM <{ALERTS}> AS a SELECT or ASK produces no stream: only a CONSTRUCT's evaluations "
        "become a stream's events, so the query only writes its evaluation graphs (no event of any stream)"
    ]
    producing = registered(client, PRODUCER)
    assert (producing["produces"], producing["warnings"]) == (CONGESTED, [])
    ingest_each(client, cars()[:5])  # the mark at 0, then the car at 12 makes close 10 final
    assert [time for _, time, _ in logged(app, CONGESTED)] == ["10"]  # the producer's only
    assert logged(app, ALERTS) == []


def test_clients_may_not_post_to_a_produced_stream_until_its_producer_is_deleted(app):
    client = app.test_client()
    producer = registered(client, PRODUCER)
    ingest_each(client, cars()[:5])  # the car at 12: r1's congestion at 10 is in the log
    refused = post(client, at(30, CONGESTED))
    assert refused.status_code == 400
    assert f"stream: <{CONGESTED}> is produced by the continuous query {producer['id']}" in refused.get_data(
        as_text=True
    )
    assert client.delete(f"/queries/{producer['id']}").status_code == 204
    answers = ingest_each(client, [*cars()[5:], at(30, CONGESTED)])
    assert [a["derived"] for a in answers] == [[], [], []]  # production stopped at close 20
    assert [time for _, time, _ in logged(app, CONGESTED)] == ["10", "30"]  # what was derived stays


def test_a_register_stream_posted_to_sparql_produces_as_post_queries_does(app, tmp_path):
    client = app.test_client()
    response = client.post("/sparql", data=PRODUCER, content_type="application/sparql-query")
    assert response.status_code == 201, response.get_data(as_text=True)
    assert response.json["produces"] == CONGESTED
    ingest_each(client, cars())
    assert logged(app, CONGESTED) == rule_events(tmp_path, [PRODUCER], {CARS: cars()})[CONGESTED]


# --------------------------------------------------------------------------- Spark


@pytest.mark.spark
def test_a_spaseq_consumer_on_the_spark_engine_reads_the_derived_events(spark, make_app, tmp_path):
    app = make_app(RSEP_ENGINE="spark", RSEP_MASTER="local[2]")
    client = app.test_client()
    registered(client, PRODUCER)
    consumer = registered(client, SPASEQ_CONSUMER)
    assert service(app).engine.events.progress(consumer["id"]) is not None  # on Spark, not in-process
    ingest_each(client, [*cars(), later_event(cars())])
    wait_for(caught_up(app), timeout=60)
    assert read_matches(client, consumer["iri"]) == ordered(rsep_run(tmp_path, SPASEQ_CONSUMER, [PRODUCER]))
