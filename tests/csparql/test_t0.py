"""Issue 16, item 4: `rsep run` evaluates only the windows that open at or after the query's t0
(t' - α >= t0): the run's first event, or `--t0 TIME` when the query was registered earlier
(docs/semantics.md, "Evaluation times")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsep.endpoint.cli import main

EX = "http://example.org/"
STREAM = f"{EX}s"
COUNT = f"""REGISTER QUERY q AS PREFIX : <{EX}>
SELECT (COUNT(*) AS ?n) FROM STREAM <{STREAM}> [RANGE 4s STEP 4s] WHERE {{ ?x :p ?y }}"""
SLIDING = COUNT.replace("[RANGE 4s STEP 4s]", "[RANGE 10s STEP 3s]")
SEQUENCE = f"PREFIX : <{EX}> SELECT ?x WHERE {{ ?x :p ?y }} SEQ {{ ?x :q ?y }}"
XSD = "http://www.w3.org/2001/XMLSchema#"


def events_file(folder: Path, times: list[str]) -> Path:
    """One event per time, `:xK :p K` in it (K its index)."""
    lines = [f"@prefix : <{EX}> . @prefix prov: <http://www.w3.org/ns/prov#> ."]
    for index, time in enumerate(times):
        lines.append(f":e{index} {{ :x{index} :p {index} . }} :e{index} prov:generatedAtTime {time} .")
    path = folder / "events.trig"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run(capsys, folder: Path, text: str, events: Path, *extra: str) -> list[tuple[object, object, int]]:
    """`rsep run`'s (start, end, ?n) per evaluation."""
    query = folder / "query.rq"
    query.write_text(text, encoding="utf-8")
    code = main(
        ["run", str(query), "--stream", f"{STREAM}={events}", "--engine", "inprocess", "--quiet", *extra]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    return [(line["start"], line["end"], int(line["bindings"]["n"].split('"')[1])) for line in lines]


def refusal(capsys, folder: Path, text: str, events: Path, *extra: str) -> str:
    query = folder / "query.rq"
    query.write_text(text, encoding="utf-8")
    assert main(["run", str(query), "--stream", f"{STREAM}={events}", "--engine", "inprocess", *extra]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    return err


def brute_force(times: list[int], width: int, step: int, t0: int) -> list[tuple[int, int, int]]:
    """RSEP-QL Def. 3 and window close: every close k·β whose window (k·β - α, k·β] opens at or
    after t0, from the first event to the last close whose window holds one, with its count."""
    closes = [c for c in range(-1000, 1000) if c % step == 0 and c - width >= t0 and c >= min(times)]
    last = max(c for c in closes if any(c - width < t <= c for t in times))
    return [(c - width, c, sum(c - width < t <= c for t in times)) for c in closes if c <= last]


def test_a_tumbling_window_over_events_at_0_to_33_evaluates_9_windows(tmp_path, capsys):
    """The issue's case: [RANGE 4s STEP 4s], events at 0 .. 33 s: 9 evaluations, (0, 4] to (32, 36],
    as the C-SPARQL engine and CSRBench's oracle report; not 10 with (-4, 0] first. The event at
    0, t0 itself, is in none of them (Def. 3's exclusive lower bound)."""
    events = events_file(tmp_path, [str(t) for t in range(34)])
    found = run(capsys, tmp_path, COUNT, events)
    assert found == [(c - 4, c, 4) for c in range(4, 33, 4)] + [(32, 36, 1)]
    assert found == brute_force(list(range(34)), 4, 4, 0)


def test_t0_given_earlier_evaluates_the_windows_opening_from_then_on(tmp_path, capsys):
    """`--t0 -4`: a query registered at -4 evaluates (-4, 0] too, which holds the event at 0."""
    events = events_file(tmp_path, [str(t) for t in range(34)])
    found = run(capsys, tmp_path, COUNT, events, "--t0", "-4")
    assert found == [(-4, 0, 1), *brute_force(list(range(34)), 4, 4, 0)]
    # a t0 long before the events changes nothing more: no window closes before the first event
    assert run(capsys, tmp_path, COUNT, events, "--t0=-100") == run(
        capsys, tmp_path, COUNT, events, "--t0=-4"
    )


@pytest.mark.parametrize("t0", [None, 1, 2, 5, -3])
def test_a_sliding_window_starts_at_t0_as_def_3_says(tmp_path, capsys, t0):
    times = [5, 6, 9, 14, 20, 21, 33]
    events = events_file(tmp_path, [str(t) for t in times])
    if t0 is not None and t0 > times[0]:
        err = refusal(capsys, tmp_path, SLIDING, events, f"--t0={t0}")
        assert f"--t0 {t0} is after the run's first event (<{EX}e0> at 5)" in err
        return
    extra = () if t0 is None else (f"--t0={t0}",)
    found = run(capsys, tmp_path, SLIDING, events, *extra)
    assert found == brute_force(times, 10, 3, times[0] if t0 is None else t0)


def test_date_time_events_take_a_date_time_t0(tmp_path, capsys):
    stamps = [f'"2014-08-01T08:00:{s:02d}Z"^^<{XSD}dateTime>' for s in (0, 1, 5)]
    events = events_file(tmp_path, stamps)
    default = run(capsys, tmp_path, COUNT, events)
    assert [(start, end, n) for start, end, n in default] == [
        ("2014-08-01T08:00:00Z", "2014-08-01T08:00:04Z", 1),
        ("2014-08-01T08:00:04Z", "2014-08-01T08:00:08Z", 1),
    ]
    earlier = run(capsys, tmp_path, COUNT, events, "--t0", "2014-08-01T07:59:56Z")
    assert earlier[0] == ("2014-08-01T07:59:56Z", "2014-08-01T08:00:00Z", 1)
    assert earlier[1:] == default
    err = refusal(capsys, tmp_path, COUNT, events, "--t0", "0")
    assert "--t0 0 is a number, but the events' timestamps are xsd:dateTimes" in err


def test_t0_is_refused_where_it_means_nothing(tmp_path, capsys):
    events = events_file(tmp_path, ["0", "1"])
    err = refusal(capsys, tmp_path, COUNT, events, "--t0", "2014-08-01T07:59:56Z")
    assert "--t0 2014-08-01T07:59:56Z is an xsd:dateTime, but the events' timestamps are numbers" in err
    with pytest.raises(SystemExit) as exit_:  # argparse's usage error
        refusal(capsys, tmp_path, COUNT, events, "--t0", "soon")
    assert exit_.value.code == 2
    assert "argument --t0: 'soon' is not a valid xsd:dateTime" in capsys.readouterr().err
    err = refusal(capsys, tmp_path, SEQUENCE, events, "--t0", "0")
    assert "--t0 is when window queries (C-SPARQL, CQELS) and REGISTER STREAM rules start" in err
