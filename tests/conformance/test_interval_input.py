"""Interval-stamped events in event files (`<g> prov:startedAtTime S` beside `<g>
prov:generatedAtTime T`: the event spans [S, T]) through `rsep run`: what each dialect makes of
them (EP-SPARQL: triple occurrences over [S, T]; SPAseq and C-SPARQL: points at T), the errors,
and `--format trig` writing an EP-SPARQL CONSTRUCT's intervals so that a second run reads them
back as `--rule` would have fed them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsep.endpoint.cli import main
from rsep.plugin.store.event_reader import read_event_file
from tests.support.paths import REPO

EX = "http://example.org/"
STREAM = f"{EX}s"
PREAMBLE = "@prefix : <http://example.org/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
RATINGS = REPO / "tests" / "fixtures" / "epsparql" / "q2-downrated-by-rule4"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def run(capsys, query: Path, *streams: str, fmt: str = "jsonl") -> str:
    args = ["run", str(query), *(a for s in streams for a in ("--stream", s)), "--engine", "inprocess"]
    assert main([*args, "--format", fmt]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def jsonl(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines()]


def failing(capsys, query: Path, stream: Path) -> str:
    assert main(["run", str(query), "--stream", f"{STREAM}={stream}", "--engine", "inprocess"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    return err


def a_then_b(folder: Path, b_start: int) -> Path:
    """:a over [1, 5], then :b over [b_start, 8]."""
    return write(
        folder,
        "events.trig",
        PREAMBLE
        + ":e1 { :k :a :v } :e1 prov:generatedAtTime 5 ; prov:startedAtTime 1 .\n"
        + f":e2 {{ :k :b :v }} :e2 prov:generatedAtTime 8 ; prov:startedAtTime {b_start} .\n",
    )


EPSPARQL_SEQ = "PREFIX : <http://example.org/>\nSELECT ?x WHERE { ?x :a ?y } SEQ { ?x :b ?y }\n"
SPASEQ_SEQ = (
    "PREFIX : <http://example.org/>\nSELECT ?x\nFROM STREAM S1 <http://example.org/s>\n"
    "WHERE { SEQ (A; B) DEFINE GPM A ON S1 { ?x :a ?y } DEFINE GPM B ON S1 { ?x :b ?y } }\n"
)
K = {"x": f"<{EX}k>"}


@pytest.mark.parametrize(
    ("b_start", "expected"),
    [(3, []), (5, []), (6, [{"start": 1, "end": 8, "bindings": K}])],
    ids=["overlapping", "touching", "disjoint"],
)
def test_epsparql_reads_an_input_event_as_triple_occurrences_over_its_interval(
    tmp_path, capsys, b_start, expected
):
    """SEQ (SeqJoin, §4.2): the first ends strictly before the second starts; the match spans
    from the earliest start to the latest end."""
    query = write(tmp_path, "q.rq", EPSPARQL_SEQ)
    assert jsonl(run(capsys, query, f"{STREAM}={a_then_b(tmp_path, b_start)}")) == expected


def test_spaseq_reads_an_interval_event_as_a_point_at_its_end(tmp_path, capsys):
    """SPAseq's events are points (Def. 1): [1, 5] then [3, 8] is a sequence 5 < 8, printed from 5."""
    query = write(tmp_path, "q.rq", SPASEQ_SEQ)
    out = run(capsys, query, f"{STREAM}={a_then_b(tmp_path, 3)}")
    assert jsonl(out) == [{"start": 5, "end": 8, "bindings": K}]


def test_csparql_windows_hold_an_interval_event_by_its_end(tmp_path, capsys):
    """[1, 7] is in the tumbling window (5, 10] that its end falls in, not in (0, 5]. An event
    at 0 that the query does not match is the run's t0, so (0, 5] is evaluated too."""
    query = write(
        tmp_path,
        "q.rq",
        "REGISTER QUERY q AS PREFIX : <http://example.org/> SELECT ?x\n"
        "FROM STREAM <http://example.org/s> [RANGE 5s STEP 5s] WHERE { ?x :a ?y }\n",
    )
    events = write(
        tmp_path,
        "e.trig",
        PREAMBLE + ":e0 { :k :other :v } :e0 prov:generatedAtTime 0 .\n"
        ":e1 { :k :a :v } :e1 prov:generatedAtTime 7 ; prov:startedAtTime 1 .\n",
    )
    assert jsonl(run(capsys, query, f"{STREAM}={events}")) == [{"start": 5, "end": 10, "bindings": K}]


def test_interval_ends_may_be_datetimes(tmp_path):
    events = write(
        tmp_path,
        "e.trig",
        PREAMBLE + "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
        ':e1 { :k :a :v } :e1 prov:generatedAtTime "2024-01-01T00:00:05Z"^^xsd:dateTime ;\n'
        '  prov:startedAtTime "2024-01-01T00:00:01Z"^^xsd:dateTime .\n',
    )
    [event] = read_event_file(events, STREAM, scope="s0")
    assert event.start is not None
    assert (event.start.lexical, event.time.lexical, event.time.seconds - event.start.seconds) == (
        "2024-01-01T00:00:01Z",
        "2024-01-01T00:00:05Z",
        4.0,
    )


@pytest.mark.parametrize(
    ("stamps", "message"),
    [
        (
            ":e1 prov:generatedAtTime 5 .\n:e1 prov:startedAtTime 7 .\n",
            "5:1: the interval of <http://example.org/e1> starts at 7, after its end 5",
        ),
        (
            ":e1 prov:startedAtTime 3 .\n",
            "4:1: event graph <http://example.org/e1> has a prov:startedAtTime but no prov:generatedAtTime",
        ),
        (
            ":e1 prov:generatedAtTime 5 .\n"
            ':e1 prov:startedAtTime "2024-01-01T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> .\n',
            "5:1: the interval of <http://example.org/e1> starts at 2024-01-01T00:00:00Z, an xsd:dateTime, "
            "but ends at 5, a number: both ends must be of one kind",
        ),
        (
            ":e1 prov:generatedAtTime 5 .\n:e1 prov:startedAtTime :t .\n",
            "5:1: the interval start of <http://example.org/e1> must be a literal, not <http://example.org/t>",
        ),
        (
            ":e1 prov:generatedAtTime 5 .\n:e1 prov:startedAtTime 1 , 2 .\n",
            "3:1: event graph <http://example.org/e1> has two interval starts",
        ),
    ],
    ids=["start-after-end", "no-end", "mixed-kinds", "not-a-literal", "two-starts"],
)
def test_a_bad_interval_is_exit_2_at_its_triple(tmp_path, capsys, stamps, message):
    query = write(tmp_path, "q.rq", EPSPARQL_SEQ)
    events = write(tmp_path, "e.trig", PREAMBLE + ":e1 { :k :a :v }\n" + stamps)
    assert failing(capsys, query, events) == f"{events}:{message}\n"


DERIVED_FIRST = (
    "PREFIX : <http://example.org/>\nSELECT ?c ?a ?p\n"
    "WHERE { ?c :hasStockPrice ?p } SEQ { ?c :downratedby ?a }\n"
)


def test_format_trig_writes_an_epsparql_constructs_intervals_and_reads_them_back(tmp_path, capsys):
    """Rule (4) derives :downratedby over [1, 2] (acme), [7, 8] (bigco) and [9, 11] (cyan). A price
    SEQ a downrating needs the price before the derived interval *starts*: bigco's prices at 5 and
    6 precede 7; cyan's price at 10 does not precede 9 (as a point at 11 it would); acme's come
    after 2. The file written with --format trig gives what --rule gives."""
    ratings = f"{EX}stream={RATINGS / 'events.trig'}"
    trig = write(tmp_path, "derived.trig", run(capsys, RATINGS / "rules" / "rule4.rq", ratings, fmt="trig"))
    spans = sorted(
        (e.start.json() if e.start else None, e.time.json()) for e in read_event_file(trig, "d", scope="d")
    )
    assert spans == [(1, 2), (7, 8), (9, 11)]
    query = write(tmp_path, "q.rq", DERIVED_FIRST)
    expected = [
        {"start": start, "end": 8, "bindings": {"c": f"<{EX}bigco>", "a": f"<{EX}sp>", "p": f'"{price}"^^<http://www.w3.org/2001/XMLSchema#integer>'}}
        for start, price in ((5, 100), (6, 45))
    ]  # fmt: skip
    assert jsonl(run(capsys, query, ratings, f"{EX}derived={trig}")) == expected
    args = ["run", str(query), "--stream", ratings, "--rule", str(RATINGS / "rules" / "rule4.rq")]
    assert main([*args, "--engine", "inprocess"]) == 0
    assert jsonl(capsys.readouterr().out) == expected
