"""C-SPARQL's REGISTER STREAM: a CONSTRUCT's evaluations are graph events of the stream the
registration names, stamped with the evaluation time t' (the window close), which other queries
read with FROM STREAM: through `rsep run --rule` (any dialect as the consumer, merged by time with
the input streams) or through a TriG file written by `--format trig` and read back by `--stream`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsep.endpoint.cli import main
from rsep.grammar import parse_event_query
from rsep.plugin.algebra.events import RegistrationKind
from tests.support.congested_roads import CONGESTED, EX, PRODUCER, TUMBLING

CARS = f"http://example.org/cars={TUMBLING / 'cars.trig'}"
INTEGER = "<http://www.w3.org/2001/XMLSchema#integer>"
READS_CONGESTED = f"SELECT ?s FROM STREAM <{CONGESTED}> [RANGE 1s STEP 1s] WHERE {{ ?s ?p ?o }}"


def write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def rsep(capsys, *args: str) -> list[dict[str, object]]:
    assert main(["run", *args, "--engine", "inprocess"]) == 0, capsys.readouterr().err
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def failing(capsys, *args: str) -> str:
    assert main(["run", *args, "--engine", "inprocess"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    return err


def copy_rule(produced: str, read: str) -> str:
    return (
        f"REGISTER STREAM <{produced}> AS CONSTRUCT {{ ?s ?p ?o }} FROM STREAM <{read}> [RANGE 1s TUMBLING] "
        + ("WHERE { ?s ?p ?o }")
    )


def congested(road: str) -> dict[str, str]:
    return {"road": f"<{EX}{road}>", "n": f'"2"^^{INTEGER}'}


# --------------------------------------------------------------------------- the registration


def test_the_registration_kind_and_stream_are_in_the_algebra():
    query = parse_event_query(PRODUCER)
    assert query.registration is not None
    assert query.registration.kind is RegistrationKind.STREAM
    assert query.produced_stream == CONGESTED and query.name == CONGESTED
    registered = parse_event_query(PRODUCER.replace("REGISTER STREAM", "REGISTER QUERY"))
    assert registered.registration is not None and registered.registration.kind is RegistrationKind.QUERY
    assert registered.produced_stream is None  # a REGISTER QUERY's graphs form no stream


def test_a_bare_name_is_a_relative_iri_resolved_against_the_base():
    text = PRODUCER.replace(f"<{CONGESTED}>", "CongestedRoads")
    query = parse_event_query(text, base_iri="file:///data/queries/producer.rq")
    assert query.name == "CongestedRoads"
    assert query.produced_stream == "file:///data/queries/CongestedRoads"
    assert parse_event_query(text).produced_stream is None  # no base: the name stays relative


def test_a_select_registered_as_stream_yields_solutions_not_graph_events():
    """The paper's own example registers a SELECT as a stream (§2.7): a stream of solution
    mappings, stamped like every evaluation, which forms no RDF stream to read with FROM STREAM."""
    text = (
        f"""REGISTER STREAM cars AS SELECT ?s FROM STREAM <{EX}s> [RANGE 5m STEP 1m] WHERE {{ ?s ?p ?o }}"""
    )
    query = parse_event_query(text, base_iri="file:///q.rq")
    assert query.registration is not None and query.registration.kind is RegistrationKind.STREAM
    assert query.produced_stream is None


# --------------------------------------------------------------------------- --rule


def test_a_register_stream_rule_feeds_a_csparql_query(tmp_path, capsys):
    rule = write(tmp_path, "producer.rq", PRODUCER)
    query = write(
        tmp_path,
        "consumer.rq",
        f"PREFIX : <{EX}> SELECT ?road ?n FROM STREAM <{CONGESTED}> [RANGE 20s STEP 10s] "
        "WHERE { ?road :congestedWith ?n }",
    )
    # closes of windows opening at or after the run's t0 (its first event, the mark at 0): (0, 20]
    # holds r1@10 and r2@20, (10, 30] r2@20, the last close whose window holds an event
    assert rsep(capsys, query, "--rule", rule, "--stream", CARS) == [
        {"start": 0, "end": 20, "bindings": congested("r1")},
        {"start": 0, "end": 20, "bindings": congested("r2")},
        {"start": 10, "end": 30, "bindings": congested("r2")},
    ]


def test_derived_events_are_merged_with_the_input_by_time(tmp_path, capsys):
    """A SPAseq sequence over the input stream and the derived one: a car on a road, then that road
    congested. Cars on r1 at 1 and 3 precede its congestion at 10; on r2 at 4, 12 and 15 precede
    20; the car on r1 at 21 comes after every congestion."""
    rule = write(tmp_path, "producer.rq", PRODUCER)
    query = write(
        tmp_path,
        "consumer.rq",
        f"""PREFIX : <{EX}>
SELECT ?car ?road
FROM STREAM S1 <{EX}cars>
FROM STREAM S2 <{CONGESTED}>
WHERE {{ SEQ (A : B)
  DEFINE GPM A ON S1 {{ ?car :on ?road }} DEFINE GPM B ON S2 {{ ?road :congestedWith ?n }} }}
""",
    )
    lines = rsep(capsys, query, "--rule", rule, "--stream", CARS)
    found = sorted(
        (line["start"], line["end"], line["bindings"]["car"], line["bindings"]["road"]) for line in lines
    )
    assert found == [
        (1, 10, f"<{EX}car1>", f"<{EX}r1>"),
        (3, 10, f"<{EX}car2>", f"<{EX}r1>"),
        (4, 20, f"<{EX}car3>", f"<{EX}r2>"),
        (12, 20, f"<{EX}car4>", f"<{EX}r2>"),
        (15, 20, f"<{EX}car5>", f"<{EX}r2>"),
    ]


def test_an_epsparql_query_reads_the_derived_stream_with_the_others(tmp_path, capsys):
    rule = write(tmp_path, "producer.rq", PRODUCER)
    query = write(
        tmp_path, "consumer.rq", f"PREFIX : <{EX}> SELECT ?road ?n WHERE {{ ?road :congestedWith ?n }}"
    )
    assert rsep(capsys, query, "--rule", rule, "--stream", CARS) == [
        {"start": 10, "end": 10, "bindings": congested("r1")},
        {"start": 20, "end": 20, "bindings": congested("r2")},
    ]


def test_a_rule_evaluates_every_close_up_to_the_runs_last_event(tmp_path, capsys):
    """Past the last close whose window holds a car (25), a rule goes on to the run's last event
    (a tick at 40 on another stream), as a producer on the endpoint evaluates every close the log
    passes: a COUNT constructs 0 over each empty window."""
    rule = write(
        tmp_path,
        "counted.rq",
        f"""REGISTER STREAM <{EX}Counted> AS PREFIX : <{EX}>
CONSTRUCT {{ :cars :counted ?n }} FROM STREAM <{EX}cars> [RANGE 5s STEP 5s]
WHERE {{ {{ SELECT (COUNT(?car) AS ?n) WHERE {{ ?car :on ?road }} }} }}""",
    )
    ticks = write(tmp_path, "ticks.trig", f"<{EX}t40> <http://www.w3.org/ns/prov#generatedAtTime> 40 .\n")
    query = write(tmp_path, "consumer.rq", f"PREFIX : <{EX}> SELECT ?n WHERE {{ :cars :counted ?n }}")
    lines = rsep(capsys, query, "--rule", rule, "--stream", CARS, "--stream", f"{EX}ticks={ticks}")
    assert [(line["end"], line["bindings"]["n"]) for line in lines] == [
        (t, f'"{n}"^^{INTEGER}')
        for t, n in [(5, 3), (10, 0), (15, 2), (20, 0), (25, 1), (30, 0), (35, 0), (40, 0)]
    ]


def test_a_rule_may_read_another_rules_stream_in_any_order(tmp_path, capsys):
    producer = write(tmp_path, "producer.rq", PRODUCER)
    alerts = write(
        tmp_path,
        "alerts.rq",
        f"""REGISTER STREAM <{EX}Alerts> AS PREFIX : <{EX}>
CONSTRUCT {{ ?road :alert ?n }} FROM STREAM <{CONGESTED}> [RANGE 10s TUMBLING]
WHERE {{ ?road :congestedWith ?n }}""",
    )
    query = write(tmp_path, "consumer.rq", f"PREFIX : <{EX}> SELECT ?road ?n WHERE {{ ?road :alert ?n }}")
    assert rsep(capsys, query, "--rule", alerts, "--rule", producer, "--stream", CARS) == [
        {"start": 10, "end": 10, "bindings": congested("r1")},
        {"start": 20, "end": 20, "bindings": congested("r2")},
    ]


def test_a_relative_registered_name_and_stream_meet_in_one_folder(tmp_path, capsys):
    """Both resolve against their file's address: `CongestedRoads` next to `<CongestedRoads>`."""
    rule = write(tmp_path, "producer.rq", PRODUCER.replace(f"<{CONGESTED}>", "CongestedRoads"))
    query = write(
        tmp_path,
        "consumer.rq",
        f"PREFIX : <{EX}> SELECT ?road FROM STREAM <CongestedRoads> [RANGE 10s TUMBLING] "
        "WHERE { ?road :congestedWith ?n }",
    )
    lines = rsep(capsys, query, "--rule", rule, "--stream", CARS)
    assert [(line["end"], line["bindings"]["road"]) for line in lines] == [
        (10, f"<{EX}r1>"),
        (20, f"<{EX}r2>"),
    ]


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (
            PRODUCER.replace("REGISTER STREAM", "REGISTER QUERY"),
            "a window query as --rule is a C-SPARQL REGISTER STREAM",
        ),
        (
            f"REGISTER STREAM <{CONGESTED}> AS SELECT ?road FROM STREAM <{EX}cars> [RANGE 10s TUMBLING] "
            "WHERE { ?car <http://example.org/on> ?road }",
            "(a SELECT or a REGISTER QUERY yields solutions or graphs, no stream)",
        ),
    ],
    ids=["register-query", "select"],
)
def test_only_a_register_stream_construct_is_a_rule(tmp_path, capsys, rule, message):
    path = write(tmp_path, "rule.rq", rule)
    query = write(
        tmp_path,
        "consumer.rq",
        READS_CONGESTED,
    )
    err = failing(capsys, query, "--rule", path, "--stream", CARS)
    assert err.startswith(f"{path}: ") and message in err


def test_rules_reading_each_other_are_refused(tmp_path, capsys):
    one = write(
        tmp_path,
        "one.rq",
        copy_rule(f"{EX}a", f"{EX}b"),
    )
    two = write(
        tmp_path,
        "two.rq",
        copy_rule(f"{EX}b", f"{EX}a"),
    )
    query = write(tmp_path, "q.rq", f"SELECT ?s FROM STREAM <{EX}a> [RANGE 1s STEP 1s] WHERE {{ ?s ?p ?o }}")
    err = failing(capsys, query, "--rule", one, "--rule", two)
    assert f"read each other's streams in a cycle: {one} -> {two} -> {one}" in err


def test_two_rules_may_not_produce_one_stream(tmp_path, capsys):
    one = write(tmp_path, "one.rq", PRODUCER)
    two = write(tmp_path, "two.rq", PRODUCER.replace("COUNT(?car) >= 2", "COUNT(?car) >= 1"))
    query = write(tmp_path, "q.rq", READS_CONGESTED)
    err = failing(capsys, query, "--rule", one, "--rule", two, "--stream", CARS)
    assert err == f"{two}: another --rule also produces <{CONGESTED}>\n"


def test_a_produced_stream_is_not_also_given(tmp_path, capsys):
    rule = write(tmp_path, "producer.rq", PRODUCER)
    query = write(tmp_path, "q.rq", READS_CONGESTED)
    err = failing(
        capsys, query, "--rule", rule, "--stream", CARS, "--stream", f"{CONGESTED}={TUMBLING / 'cars.trig'}"
    )
    assert f"stream <{CONGESTED}> is what --rule {rule} produces" in err


def test_an_input_stream_must_be_read_by_the_query_or_a_rule(tmp_path, capsys):
    query = write(tmp_path, "q.rq", READS_CONGESTED)
    err = failing(capsys, query, "--stream", CARS)
    assert f"unknown stream <{EX}cars>: the query reads <{CONGESTED}>" in err


# --------------------------------------------------------------------------- --format trig


def test_format_trig_writes_what_stream_reads_back(tmp_path, capsys):
    producer = write(tmp_path, "producer.rq", PRODUCER)
    assert main(["run", producer, "--stream", CARS, "--engine", "inprocess", "--format", "trig"]) == 0
    trig = tmp_path / "congested.trig"
    trig.write_text(capsys.readouterr().out, encoding="utf-8")
    query = write(
        tmp_path,
        "consumer.rq",
        f"PREFIX : <{EX}> SELECT ?road ?n FROM STREAM <{CONGESTED}> [RANGE 20s STEP 10s] "
        "WHERE { ?road :congestedWith ?n }",
    )
    ruled = rsep(capsys, query, "--rule", producer, "--stream", CARS)
    # the same events; the rule's run starts at the cars' first event (the mark at 0), so read
    # back, the query is registered then too (--t0 0) and evaluates the same windows
    assert rsep(capsys, query, "--stream", f"{CONGESTED}={trig}", "--t0", "0") == ruled
    assert len(ruled) == 3
    # registered at the file's first event (r1@10) instead, only the windows opening at or after
    # 10 are evaluated
    replayed = rsep(capsys, query, "--stream", f"{CONGESTED}={trig}")
    assert replayed == [line for line in ruled if line["start"] >= 10] and len(replayed) == 1


def test_format_trig_stamps_events_as_the_input_writes_time(tmp_path, capsys):
    """dateTime input, dateTime events: the evaluation time t' as an xsd:dateTime in UTC."""
    cars = write(
        tmp_path,
        "cars.trig",
        f"""@prefix : <{EX}> . @prefix prov: <http://www.w3.org/ns/prov#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
:e0 {{ :m :mark 0 . }} :e0 prov:generatedAtTime "2014-08-01T08:00:00Z"^^xsd:dateTime .
:e1 {{ :car1 :on :r1 . }} :e1 prov:generatedAtTime "2014-08-01T08:00:01Z"^^xsd:dateTime .
:e2 {{ :car2 :on :r1 . }} :e2 prov:generatedAtTime "2014-08-01T08:00:04Z"^^xsd:dateTime .
""",
    )
    producer = write(tmp_path, "producer.rq", PRODUCER)
    assert (
        main(["run", producer, "--stream", f"{EX}cars={cars}", "--engine", "inprocess", "--format", "trig"])
        == 0
    )
    out = capsys.readouterr().out
    assert '"2014-08-01T08:00:10Z"^^xsd:dateTime' in out
    assert f"<{EX}r1> <{EX}congestedWith> 2 ." in out


def test_format_trig_needs_a_construct(capsys):
    cars_query = Path(__file__).resolve().parent / "fixtures" / "cars-turning"
    err = failing(
        capsys,
        str(cars_query / "query.rq"),
        "--stream",
        f"http://streams.org/citycameras.trdf={cars_query / 'cameras.trig'}",
        "--kb",
        f"http://example.org/citymap={cars_query / 'citymap.ttl'}",
        "--format",
        "trig",
    )
    assert "--format trig writes graph events" in err


def test_a_rule_oxigraph_cannot_run_is_refused_in_its_file_before_the_events_are_read(tmp_path, capsys):
    refused = PRODUCER.replace("?car :on ?road }", "?car :on ?road FILTER(:unknownFunction(?car)) }")
    rule = write(tmp_path, "producer.rq", refused)
    query = write(tmp_path, "q.rq", READS_CONGESTED)
    err = failing(capsys, query, "--rule", rule, "--stream", f"{EX}cars={tmp_path / 'missing.trig'}")
    assert err == (
        f"{rule}:3:1: the window query: the custom function <{EX}unknownFunction> is not supported\n"
    )
