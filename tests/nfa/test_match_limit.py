"""The match limit of the shared buffer as a user sets it: `compile_text(match_limit=)`,
`rsep run --match-limit`, and the warning when it cuts (the endpoint's `match-limit` parameter is
tested with /queries)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from rsep.compiler import compile_text
from rsep.plugin import CompileError, QueryPlan
from tests.support.cli import RSEP

STREAM = "http://example.org/s"
QUERY = """PREFIX : <http://example.org/>
SELECT ?a ?c
WITHIN 1 HOURS
FROM STREAM S1 <http://example.org/s>
WHERE {
  SEQ (A: B+: C)
  DEFINE GPM A ON S1 { ?ea :a ?a }
  DEFINE GPM B ON S1 { ?eb :b ?b }
  DEFINE GPM C ON S1 { ?ec :c ?c }
}
"""
WINDOW_QUERY = """PREFIX : <http://example.org/>
SELECT ?x FROM STREAM <http://example.org/s> [RANGE 10s STEP 10s] WHERE { ?x :a ?y }
"""


def _events(n: int) -> str:
    """An A, then n B's, then a C: n(n+1)/2 runs of B's (Kleene+ iterates strictly) to pick."""
    lines = [
        "@prefix : <http://example.org/> .",
        "@prefix prov: <http://www.w3.org/ns/prov#> .",
        "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .",
    ]
    kinds = ["a", *["b"] * n, "c"]
    for t, kind in enumerate(kinds):
        stamp = f'"2026-01-01T00:00:{t:02d}Z"^^xsd:dateTime'
        lines.append(f":g{t} {{ :e{t} :{kind} {t} }} :g{t} prov:generatedAtTime {stamp} .")
    return "\n".join(lines) + "\n"


def test_compile_text_sets_the_limit_on_event_patterns_only():
    found = compile_text(QUERY, match_limit=7)
    assert isinstance(found, QueryPlan) and found.automaton.match_limit == 7
    assert compile_text(QUERY).automaton.match_limit is None  # type: ignore[union-attr]
    with pytest.raises(CompileError, match="positive"):
        compile_text(QUERY, match_limit=0)
    with pytest.raises(CompileError, match="not to window queries"):
        compile_text(WINDOW_QUERY, match_limit=7)


def _run(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    query, events = tmp_path / "q.rq", tmp_path / "e.trig"
    query.write_text(QUERY)
    events.write_text(_events(6))
    command = [
        str(RSEP),
        "run",
        str(query),
        "--stream",
        f"{STREAM}={events}",
        "--engine",
        "inprocess",
        *extra,
    ]
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)


def test_rsep_run_reports_at_most_the_limit_and_warns_when_it_cuts(tmp_path):
    everything = _run(tmp_path)
    assert everything.returncode == 0, everything.stderr
    assert len(everything.stdout.splitlines()) == 6 * 7 // 2 and "not reported" not in everything.stderr
    cut = _run(tmp_path, "--match-limit", "5")
    assert cut.returncode == 0, cut.stderr
    lines = cut.stdout.splitlines()
    assert len(lines) == 5 and all(line in everything.stdout.splitlines() for line in lines)
    assert all(json.loads(line)["bindings"] for line in lines)
    assert "5 matches reported, the limit per timestamp" in cut.stderr
    refused = _run(tmp_path, "--match-limit", "0")
    assert refused.returncode == 2 and "positive" in refused.stderr
