"""`rsep run`'s inputs as a user writes them: stream IRIs that contain `=` on the command line,
number timestamps echoed exactly as the event file writes them, the order of simultaneous events
of several streams, and blank-node names that do not change between runs."""

from __future__ import annotations

import json
from pathlib import Path

from rsep.endpoint.cli import main
from rsep.endpoint.run_command import StreamFile
from tests.support.cli import FIG1

EVENTS = """@prefix : <http://example.org/fig1/> .
@prefix prov: <http://www.w3.org/ns/prov#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
:g1 { :a1 a :A . }
:g2 { :b1 a :B . }
:g3 { :c1 a :C . }
:g4 { :a2 a :A . }
:g5 { :b2 a :B . }
:g6 { :c2 a :C . }
:g1 prov:generatedAtTime "1.50"^^xsd:decimal .
:g2 prov:generatedAtTime "2.0"^^xsd:decimal .
:g3 prov:generatedAtTime "+3"^^xsd:integer .
:g4 prov:generatedAtTime "1e1"^^xsd:double .
:g5 prov:generatedAtTime "0011.000"^^xsd:decimal .
:g6 prov:generatedAtTime "12"^^xsd:integer .
"""


def run_lines(capsys, query: Path, *streams: str) -> list[str]:
    args = [arg for stream in streams for arg in ("--stream", stream)]
    assert main(["run", str(query), *args, "--engine", "inprocess"]) == 0, capsys.readouterr().err
    return capsys.readouterr().out.splitlines()


def test_a_stream_iri_containing_equals_signs_is_split_at_the_iri_the_query_declares(tmp_path, capsys):
    iri = "http://example.org/s?id=1"
    query = tmp_path / "query.rq"
    text = (FIG1 / "query.rq").read_text(encoding="utf-8")
    query.write_text(text.replace("<http://example.org/fig1/stream>", f"<{iri}>"), encoding="utf-8")
    lines = run_lines(capsys, query, f"{iri}={FIG1 / 'stream.trig'}")
    assert lines == (FIG1 / "expected.jsonl").read_text(encoding="utf-8").splitlines()


def test_the_longest_declared_iri_wins_and_an_undeclared_one_splits_at_the_first_equals():
    written = StreamFile("http://ex.org/s?id", Path("1=e1.trig"), "http://ex.org/s?id=1=e1.trig")
    declared = ["http://ex.org/s?id", "http://ex.org/s?id=1", "http://ex.org/t"]
    assert written.for_query(declared) == StreamFile("http://ex.org/s?id=1", Path("e1.trig"), written.written)
    assert written.for_query(["http://ex.org/t"]) is written
    bracketed = StreamFile("<http://ex.org/s?id", Path("1>=e.trig"), "<http://ex.org/s?id=1>=e.trig")
    assert bracketed.for_query(declared).path == Path("e.trig")


def test_number_timestamps_are_written_as_the_input_wrote_them(tmp_path, capsys):
    """JSON number syntax verbatim (`1.50`, `2.0`, `1e1`, `12`); other xsd lexical forms as
    the number they denote (`+3` as 3, `0011.000` as 11.0) (docs/semantics.md, Events and time)."""
    events = tmp_path / "numbers.trig"
    events.write_text(EVENTS, encoding="utf-8")
    lines = run_lines(capsys, FIG1 / "query.rq", f"http://example.org/fig1/stream={events}")
    assert [line.split(', "bindings"')[0] for line in lines] == [
        '{"start": 1.50, "end": 3',
        '{"start": 1e1, "end": 12',
    ]
    assert [(json.loads(line)["start"], json.loads(line)["end"]) for line in lines] == [(1.5, 3), (10.0, 12)]


TWO_STREAMS = """PREFIX : <http://example.org/>
SELECT ?b
FROM STREAM FIRST <http://example.org/FIRST>
FROM STREAM SECOND <http://example.org/SECOND>
WHERE {
  SEQ (A; B)
  DEFINE GPM A ON s1 { ?a a :A }
  DEFINE GPM B ON s1, s2 { ?b a :B }
}
"""


def test_events_of_one_timestamp_are_ordered_by_the_from_stream_clauses(tmp_path, capsys):
    """Ties in the merged streamset follow the query's FROM STREAM order, not the order of the
    --stream arguments (docs/semantics.md, Events and time): here the matches ending at the
    same timestamp come out in the order of their B event."""
    s1, s2 = tmp_path / "s1.trig", tmp_path / "s2.trig"
    head = "@prefix : <http://example.org/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
    s1.write_text(
        head
        + ":e1 { :a1 a :A }\n:e2 { :b1 a :B }\n:e1 prov:generatedAtTime 1 .\n:e2 prov:generatedAtTime 2 .\n",
        encoding="utf-8",
    )
    s2.write_text(head + ":f2 { :b2 a :B }\n:f2 prov:generatedAtTime 2 .\n", encoding="utf-8")
    streams = (f"http://example.org/s1={s1}", f"http://example.org/s2={s2}")
    for first, second, expected in [("s1", "s2", ["b1", "b2"]), ("s2", "s1", ["b2", "b1"])]:
        query = tmp_path / "query.rq"
        text = TWO_STREAMS.replace("FIRST", first).replace("SECOND", second)
        query.write_text(text, encoding="utf-8")
        lines = run_lines(capsys, query, *streams)
        assert [json.loads(line)["bindings"]["b"] for line in lines] == [
            f"<http://example.org/{name}>" for name in expected
        ]


def test_blank_nodes_get_the_same_names_on_every_run(tmp_path, capsys):
    """Unlabelled blank nodes (`[ ... ]`), which the parser names at random, are numbered in
    the order the document writes them; labelled ones keep their label behind the prefix."""
    events = tmp_path / "events.trig"
    events.write_text(
        "@prefix : <http://example.org/fig1/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
        ":g1 { [ a :A ] . _:x a :A . }\n:g2 { [ a :B ] . }\n:g3 { [ a :C ] . }\n"
        ":g1 prov:generatedAtTime 1 .\n:g2 prov:generatedAtTime 2 .\n:g3 prov:generatedAtTime 3 .\n",
        encoding="utf-8",
    )
    stream = f"http://example.org/fig1/stream={events}"
    runs = [run_lines(capsys, FIG1 / "query.rq", stream) for _ in range(2)]
    assert runs[0] == runs[1]
    assert sorted(json.loads(line)["bindings"]["a"] for line in runs[0]) == ["_:s0a0", "_:s0xx"]
