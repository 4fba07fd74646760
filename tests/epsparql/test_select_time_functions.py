"""getDURATION(), getSTARTTIME() and getENDTIME() in SELECT expressions (EP-SPARQL §4.1; issue 16):
the match's interval is defined when the match is projected, so `(getDURATION() AS ?d)` binds
what `BIND(getDURATION() AS ?d)` at the end of the WHERE group binds, on both engines. A function
rsep cannot evaluate there is refused at compile time, at the call."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsep.endpoint.cli import main
from rsep.endpoint.run_command import RunRequest, StreamFile, run

PREFIX = "PREFIX : <http://example.org/>\n"
PATTERN = "{ ?x :p ?y } SEQ { ?x :q ?z }"
IN_SELECT = (
    f"SELECT ?x (getDURATION() AS ?d) (getSTARTTIME() AS ?s) (getENDTIME() AS ?e) WHERE {{ {PATTERN} }}"
)
IN_BIND = (
    f"SELECT ?x ?d ?s ?e WHERE {{ {PATTERN} "
    "BIND(getDURATION() AS ?d) BIND(getSTARTTIME() AS ?s) BIND(getENDTIME() AS ?e) }"
)
NUMBERS = """@prefix : <http://example.org/> .
@prefix prov: <http://www.w3.org/ns/prov#> .
:g1 { :a :p 1 }   :g1 prov:generatedAtTime 1 .
:g2 { :b :p 1 }   :g2 prov:generatedAtTime 2 ; prov:startedAtTime 0.5 .
:g3 { :a :q 2 . :b :q 3 }   :g3 prov:generatedAtTime 4.25 .
"""
DATES = """@prefix : <http://example.org/> .
@prefix prov: <http://www.w3.org/ns/prov#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
:g1 { :a :p 1 }   :g1 prov:generatedAtTime "2024-01-01T10:00:00Z"^^xsd:dateTime .
:g2 { :a :q 2 }   :g2 prov:generatedAtTime "2024-01-01T10:01:30Z"^^xsd:dateTime .
"""
D = "<http://www.w3.org/2001/XMLSchema#dayTimeDuration>"
T = "<http://www.w3.org/2001/XMLSchema#dateTime>"


def rows(tmp_path: Path, query: str, events: str, engine: str) -> list[dict[str, str]]:
    (tmp_path / "q.rq").write_text(PREFIX + query, encoding="utf-8")
    (tmp_path / "e.trig").write_text(events, encoding="utf-8")
    stream = StreamFile("http://example.org/s", tmp_path / "e.trig")
    result = run(RunRequest(tmp_path / "q.rq", [stream], engine=engine, master="local[2]"))
    return sorted((s.bindings for s in result.solutions), key=lambda b: b["x"])  # type: ignore[union-attr]


def check(tmp_path: Path, engine: str) -> None:
    found = rows(tmp_path, IN_SELECT, NUMBERS, engine)
    assert found == [
        {"x": "<http://example.org/a>", "d": f'"PT3.25S"^^{D}', "s": f'"1970-01-01T00:00:01Z"^^{T}',
         "e": f'"1970-01-01T00:00:04.25Z"^^{T}'},
        {"x": "<http://example.org/b>", "d": f'"PT3.75S"^^{D}', "s": f'"1970-01-01T00:00:00.5Z"^^{T}',
         "e": f'"1970-01-01T00:00:04.25Z"^^{T}'},
    ]  # fmt: skip
    assert found == rows(tmp_path, IN_BIND, NUMBERS, engine)
    dated = rows(tmp_path, IN_SELECT, DATES, engine)
    assert dated == [
        {"x": "<http://example.org/a>", "d": f'"PT1M30S"^^{D}', "s": f'"2024-01-01T10:00:00Z"^^{T}',
         "e": f'"2024-01-01T10:01:30Z"^^{T}'}
    ]  # fmt: skip
    assert dated == rows(tmp_path, IN_BIND, DATES, engine)


def test_time_functions_in_select_read_the_match_interval(tmp_path: Path):
    check(tmp_path, "inprocess")


@pytest.mark.spark
def test_time_functions_in_select_on_spark(tmp_path: Path, spark):
    check(tmp_path, "spark")


def test_an_unknown_function_in_select_is_refused_at_the_call(tmp_path: Path, capsys):
    query = tmp_path / "q.rq"
    query.write_text(
        PREFIX + f"PREFIX ex: <http://example.org/fn#>\nSELECT ?x (ex:foo(?y) AS ?d) WHERE {{ {PATTERN} }}\n",
        encoding="utf-8",
    )
    (tmp_path / "e.trig").write_text(NUMBERS, encoding="utf-8")
    argv = [
        "run",
        str(query),
        "--engine",
        "inprocess",
        "--stream",
        f"http://example.org/s={tmp_path / 'e.trig'}",
    ]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"{query}:3:12: unsupported extension function <http://example.org/fn#foo>, "
        "in the SELECT expression bound to ?d\n"
    )
