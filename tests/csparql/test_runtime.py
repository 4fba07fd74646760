"""The window runtime: evaluations at the report policy's times, one store evaluation per distinct
window content, and `rsep run`'s handling of window queries (output formats, errors)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsep.endpoint.cli import main
from rsep.endpoint.run_command import RunRequest, StreamFile
from rsep.grammar import parse_event_query
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.windows import plan_windows
from rsep.plugin.windows.window_functions import to_ticks
from rsep.plugin.windows.window_replay import Answer, WindowReplay
from tests.csparql.support import STREAM, refused
from tests.support.run_cases import output

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CARS = FIXTURES / "cars-turning"


def event(t: float, *objects: str) -> GraphEvent:
    triples = "".join(
        f"<http://example.org/s> <http://example.org/p> <http://example.org/{o}> .\n" for o in objects
    )
    return GraphEvent(STREAM, f"_:e{t}", Timestamp(float(t), str(t), True), triples)


class Counting:
    """A stand-in store: answers one row with the number of window triples, even for empty
    windows (as COUNT(*) without GROUP BY does), and records what it was asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, ...]] = []

    def evaluate(self, contents):
        self.calls.append(tuple(len(items) for items in contents))
        return Answer(rows=({"n": str(sum(len(items) for items in contents))},))


def csparql_plan(window: str):
    text = f"SELECT * FROM STREAM <{STREAM}> {window} WHERE {{ ?s ?p ?o }}"
    return plan_windows(parse_event_query(text, dialect="c-sparql"))


def test_every_close_is_reported_but_each_content_is_evaluated_once():
    store = Counting()
    evaluations = WindowReplay(csparql_plan("[RANGE 3s STEP 1s]"), store).run(
        {STREAM: [event(10, "a"), event(20, "b")]}, t0=to_ticks(7)
    )
    # registered at 7: closes 10 ... 22 (10 - 3 >= 7, 22 - 3 < 20): 13 of them, answering even
    # over the empty windows 13-19
    assert [e.time for e in evaluations] == [to_ticks(t) for t in range(10, 23)]
    assert [e.answer.rows[0]["n"] for e in evaluations] == ["1"] * 3 + ["0"] * 7 + ["1"] * 3
    assert store.calls == [(1,), (0,), (1,)]


def test_empty_answers_are_skipped_without_visiting_every_close():
    class Quiet(Counting):
        def evaluate(self, contents):
            super().evaluate(contents)
            return Answer() if not any(contents) else Answer(rows=({},))

    store = Quiet()
    events = [event(0, "a"), event(86_400, "b")]  # a day apart, 1 s closes
    evaluations = WindowReplay(csparql_plan("[RANGE 2s STEP 1s]"), store).run(
        {STREAM: events}, t0=to_ticks(-2)
    )
    assert [e.time for e in evaluations] == [to_ticks(t) for t in (0, 1, 86_400, 86_401)]
    assert len(store.calls) == 3


def test_bounds_are_those_of_the_windows():
    replay = WindowReplay(csparql_plan("[RANGE 10s STEP 5s]"), Counting())
    evaluations = replay.run({STREAM: [event(7, "a")]}, t0=0)  # registered at 0
    assert [(e.start, e.end) for e in evaluations] == [(to_ticks(s), to_ticks(s + 10)) for s in (0, 5)]
    # registered at its event, 7: the first window opening at or after t0, (10, 20], closes after
    # the last close whose window holds the event (15): nothing is evaluated
    evaluations = replay.run({STREAM: [event(7, "a")]})
    assert [(e.start, e.end) for e in evaluations] == []


def test_no_events_no_output():
    assert WindowReplay(csparql_plan("[RANGE 3s STEP 1s]"), Counting()).run({STREAM: []}) == []


# --------------------------------------------------------------------------- rsep run


CARS_T0 = json.loads((CARS / "manifest.json").read_text(encoding="utf-8"))["t0"]
"""When the paper's query was registered: its windows from the first close on open after it."""


def cars_args(*extra: str) -> list[str]:
    return [
        "run",
        str(CARS / "query.rq"),
        "--stream",
        f"http://streams.org/citycameras.trdf={CARS / 'cameras.trig'}",
        "--kb",
        f"http://example.org/citymap={CARS / 'citymap.ttl'}",
        f"--t0={CARS_T0}",
        *extra,
    ]


def test_rsep_run_prints_jsonl_and_says_spark_is_not_used(capsys):
    assert main(cars_args()) == 0
    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines == [json.loads(line) for line in (CARS / "expected.jsonl").read_text().splitlines()]
    assert "run in-process" in err


def test_rsep_run_srj(capsys):
    assert main([*cars_args("--engine", "inprocess"), "--format", "srj"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["head"] == {"vars": ["car1"]}
    values = [b["car1"]["value"] for b in document["results"]["bindings"]]
    assert values == ["http://example.org/car1"] * 5 + ["http://example.org/car3"] * 3


def test_construct_has_no_srj(capsys):
    folder = FIXTURES / "construct-tumbling"
    args = ["run", str(folder / "query.rq"), "--stream", f"http://example.org/cars={folder / 'cars.trig'}"]
    assert main([*args, "--engine", "inprocess", "--format", "srj"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "graph events" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--stream", "http://example.org/other=x.trig"], "unknown stream <http://example.org/other>"),
        (["--policy", "chronological"], "--policy applies to event patterns"),
    ],
)
def test_rsep_run_errors(capsys, extra, message):
    assert main([*cars_args("--engine", "inprocess"), *extra]) == 2
    out, err = capsys.readouterr()
    assert out == "" and message in err


def test_a_missing_stream_is_an_error(capsys):
    args = ["run", str(CARS / "query.rq"), "--engine", "inprocess"]
    assert main(args) == 2
    assert "no events given for stream <http://streams.org/citycameras.trdf>" in capsys.readouterr().err


def test_rsep_run_locates_a_trailing_values_at_its_keyword(capsys, tmp_path):
    query, err = refused(
        capsys,
        tmp_path,
        f"SELECT ?s FROM STREAM <{STREAM}> [RANGE 1s STEP 1s]\nWHERE {{ ?s ?p ?o }}\n"
        "# the VALUES below does not apply\n  VALUES ?s { <http://example.org/a> }\n",
    )
    assert err == f"{query}:4:3: a trailing VALUES clause does not apply to a C-SPARQL query\n"


def test_rsep_run_refuses_a_query_oxigraph_cannot_run_before_reading_events(capsys, tmp_path):
    query, err = refused(
        capsys,
        tmp_path,
        f"REGISTER QUERY q AS\nSELECT ?s FROM STREAM <{STREAM}> [RANGE 1s STEP 1s]\n"
        "WHERE { ?s ?p ?o FILTER(<http://example.org/unknownFunction>(?o) && timestamp(?s) > 0) }\n",
    )
    assert err == (
        f"{query}:2:1: the window query: the custom function <http://example.org/unknownFunction> "
        "is not supported\n"
    )


def test_ask_reports_one_empty_solution_when_true(tmp_path):
    query = tmp_path / "ask.rq"
    query.write_text(
        f"ASK FROM STREAM <{STREAM}> [RANGE 2s TUMBLING] WHERE {{ ?s ?p <http://example.org/b> }}"
    )
    events = tmp_path / "s.trig"
    events.write_text(
        "@prefix : <http://example.org/> . @prefix prov: <http://www.w3.org/ns/prov#> .\n"
        ":e1 { :s :p :a } :e1 prov:generatedAtTime 1 .\n:e3 { :s :p :b } :e3 prov:generatedAtTime 3 .\n"
    )
    rows = output(RunRequest(query, [StreamFile(STREAM, events)], engine="inprocess"))
    assert rows == [{"start": 2, "end": 4, "bindings": {}}]
