"""The Q-closure's guard against divergence (EP-SPARQL §4.2, issue 16): a rule that feeds its
own output back with a FILTER that stops it has a finite closure, however deep, and rsep derives
all of it; what stops a run is a limit on rounds and on derived events per input event
(`--closure-rounds`, `--closure-events`, 10,000 each by default), in an error naming the rule.

The closure runs in-process whatever `--engine` says (a warning): both engines give the same
answer, which the first test holds."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from rsep.endpoint.cli import main
from rsep.endpoint.run_command import RunRequest, RunResult, StreamFile, run
from rsep.plugin import closure as closure_module
from rsep.plugin.closure import ClosureError, ClosureLimits

PREFIX = "PREFIX : <http://example.org/>\n"
EVENTS = """@prefix : <http://example.org/> .
@prefix prov: <http://www.w3.org/ns/prov#> .
:g1 { :c :price 1 . :c :name "c" }   :g1 prov:generatedAtTime 1 .
:g2 { :d :price 5 . :d :name "d" }   :g2 prov:generatedAtTime 2 .
"""
COUNTER = "CONSTRUCT { ?c :price ?q } WHERE { ?c :price ?p BIND(?p + 1 AS ?q) FILTER(?q < LIMIT) }"
JOINED = (
    "CONSTRUCT { ?c :price ?q } WHERE { ?c :name ?n . ?c :price ?p BIND(?p + 1 AS ?q) FILTER(?q < LIMIT) }"
)
SELECT = "SELECT ?c ?p WHERE { ?c :price ?p }"


def files(tmp_path: Path, rule: str, limit: int) -> tuple[Path, Path, Path]:
    (tmp_path / "events.trig").write_text(EVENTS, encoding="utf-8")
    (tmp_path / "rule.rq").write_text(PREFIX + rule.replace("LIMIT", str(limit)), encoding="utf-8")
    (tmp_path / "query.rq").write_text(PREFIX + SELECT, encoding="utf-8")
    return tmp_path / "query.rq", tmp_path / "rule.rq", tmp_path / "events.trig"


def request(tmp_path: Path, rule: str, limit: int, engine: str = "inprocess", **kw: object) -> RunRequest:
    query, rule_file, events = files(tmp_path, rule, limit)
    stream = StreamFile("http://example.org/s", events)
    return RunRequest(query, [stream], engine=engine, rules=[rule_file], **kw)  # type: ignore[arg-type]


def prices(result: object) -> dict[str, list[int]]:
    assert isinstance(result, RunResult)
    found: dict[str, list[int]] = {}
    for solution in result.solutions:
        found.setdefault(solution.bindings["c"], []).append(int(solution.bindings["p"].split('"')[1]))
    return {c: sorted(ps) for c, ps in found.items()}


@pytest.mark.parametrize("engine", ["inprocess", "spark"])
def test_a_terminating_rule_derives_thousands_of_rounds_in_seconds(tmp_path: Path, engine: str):
    began = time.monotonic()
    found = prices(run(request(tmp_path, COUNTER, 4000, engine)))
    assert found == {
        "<http://example.org/c>": list(range(1, 4000)),
        "<http://example.org/d>": list(range(5, 4000)),
    }
    assert time.monotonic() - began < 60  # a guard against quadratic rounds, not a benchmark


def test_a_rule_that_joins_is_replayed_past_the_old_32_rounds(tmp_path: Path):
    found = prices(run(request(tmp_path, JOINED, 300)))
    assert found["<http://example.org/c>"] == list(range(1, 300))


def test_new_events_alone_give_what_replaying_the_timestamp_gives(tmp_path: Path, monkeypatch):
    """The row-local shortcut is the replay's answer (forced off here)."""
    fast = prices(run(request(tmp_path, COUNTER, 200)))
    monkeypatch.setattr(closure_module, "_row_local", lambda automaton: False)
    assert prices(run(request(tmp_path, COUNTER, 200))) == fast


def test_the_rounds_limit_names_the_rule(tmp_path: Path):
    limited = request(tmp_path, JOINED, 300, closure=ClosureLimits(rounds=50))
    with pytest.raises(ClosureError, match=r"rule\.rq: .* at time 1 after 50 rounds \(--closure-rounds\)"):
        run(limited)


def test_the_events_limit_counts_per_input_event(tmp_path: Path):
    limited = request(tmp_path, COUNTER, 300, closure=ClosureLimits(events_per_input=100))
    with pytest.raises(ClosureError, match=r"rule\.rq: .* at time 1 past 100 derived events per input event"):
        run(limited)
    # the same depth fits when the limit allows it
    assert len(prices(run(request(tmp_path, COUNTER, 300, closure=ClosureLimits(events_per_input=300))))) == 2


def test_the_command_line_sets_the_limits(tmp_path: Path, capsys):
    query, rule, events = files(tmp_path, COUNTER, 300)
    argv = ["run", str(query), "--engine", "inprocess", "--stream", f"http://example.org/s={events}"]
    assert main([*argv, "--rule", str(rule), "--closure-rounds", "20"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{rule}: the CONSTRUCT rules" in err and "after 20 rounds" in err
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--rule", str(rule), "--closure-events", "0"])
    assert exited.value.code == 2
    assert "--closure-events: expected a positive integer" in capsys.readouterr().err
