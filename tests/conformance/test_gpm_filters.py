"""FILTERs inside a GPM through `rsep run`: where they run (the GPM's own SPARQL query, or the NFA
for variables of other GPMs), what each place can evaluate, and what is refused or warned about
before any event is read (docs/semantics.md, Inside a GPM)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rsep.endpoint.cli import main
from tests.support.cli import Outcome, assert_failure

STREAM = "http://example.org/s1"
EVENTS = """@prefix : <http://example.org/> .
@prefix prov: <http://www.w3.org/ns/prov#> .
:e1 { :x1 :p 1 . }
:e2 { :y1 :q 2 ; :zzz :w1 . }
:e3 { :y2 :q 3 ; :k :k1 . }
:e1 prov:generatedAtTime 1 .
:e2 prov:generatedAtTime 2 .
:e3 prov:generatedAtTime 3 .
"""
KB = """@prefix : <http://example.org/> .
:kb { :y1 :cat :k1 . :y2 :cat :k1 . }
"""
INT = "^^<http://www.w3.org/2001/XMLSchema#integer>"
A_MATCH = {"a": f'"1"{INT}', "x": "<http://example.org/x1>"}
Y1 = {"b": f'"2"{INT}', "y": "<http://example.org/y1>"}
Y2 = {"b": f'"3"{INT}', "y": "<http://example.org/y2>"}


def write_query(folder: Path, gpm_a: str, gpm_b: str) -> Path:
    """GPM B is defined on line 7, its name at column 14."""
    path = folder / "query.rq"
    path.write_text(
        "PREFIX : <http://example.org/>\nSELECT *\nFROM STREAM S1 <http://example.org/s1>\nWHERE {\n"
        f"  SEQ (A : B)\n  DEFINE GPM A ON S1 {{ {gpm_a} }}\n  DEFINE GPM B ON S1 {{ {gpm_b} }}\n}}\n",
        encoding="utf-8",
    )
    return path


def run_query(
    folder: Path, capsys: pytest.CaptureFixture[str], gpm_b: str, gpm_a: str = "?x :p ?a"
) -> Outcome:
    events, kb = folder / "events.trig", folder / "kb.trig"
    events.write_text(EVENTS, encoding="utf-8")
    kb.write_text(KB, encoding="utf-8")
    query = write_query(folder, gpm_a, gpm_b)
    args = ["run", str(query), "--stream", f"{STREAM}={events}", "--kb", str(kb), "--engine", "inprocess"]
    code = main(args)
    captured = capsys.readouterr()
    return Outcome(code, captured.out, captured.err)


def matches(result: Outcome) -> list[tuple[object, object, dict[str, str]]]:
    assert result.returncode == 0, result.stderr
    return [(m["start"], m["end"], m["bindings"]) for m in map(json.loads, result.stdout.splitlines())]


def test_not_exists_with_a_variable_of_its_own_runs_in_the_gpm_query(tmp_path, capsys):
    """?w is the NOT EXISTS pattern's own variable (no GPM binds it): the filter reads only ?y."""
    result = run_query(tmp_path, capsys, "?y :q ?b FILTER NOT EXISTS { ?y :zzz ?w }")
    assert matches(result) == [(1, 3, {**A_MATCH, **Y2})]


def test_exists_with_a_variable_of_its_own_runs_in_the_gpm_query(tmp_path, capsys):
    result = run_query(tmp_path, capsys, "?y :q ?b FILTER EXISTS { ?y :zzz ?w }")
    assert matches(result) == [(1, 2, {**A_MATCH, **Y1})]


def test_not_exists_over_event_and_knowledge_base_variables_is_matched_in_the_event_graph(tmp_path, capsys):
    """?c comes from the knowledge base, ?y from the event: the GPM runs as one query, and the
    NOT EXISTS pattern is matched in the event graph (e3 holds `:y2 :k :k1`; the KB does not)."""
    gpm = "?y :q ?b GRAPH <http://example.org/kb> { ?y :cat ?c } FILTER NOT EXISTS { ?y :k ?c }"
    result = run_query(tmp_path, capsys, gpm)
    assert matches(result) == [(1, 2, {**A_MATCH, **Y1, "c": "<http://example.org/k1>"})]


@pytest.mark.parametrize(
    ("gpm_b", "message"),
    [
        (
            "?y :q ?b FILTER EXISTS { ?y :k ?a }",
            r"GPM B: a FILTER with EXISTS or NOT EXISTS reads \?a, which this GPM's own .*",
        ),
        (
            "?y :q ?b FILTER NOT EXISTS { ?y :zzz ?x }",
            r"GPM B: a FILTER with EXISTS or NOT EXISTS reads \?x, which this GPM's own .*",
        ),
        # Oxigraph prepares a query only when it runs it: rsep has it prepared at compile time.
        (
            "?y :q ?b FILTER(:foo(?b))",
            r"GPM B: the custom function <http://example.org/foo> is not supported",
        ),
        (
            "?y :q ?b FILTER(:foo(?b, ?a))",
            r"GPM B: unsupported extension function <http://example.org/foo>, in a FILTER that reads "
            r"variables of other GPMs .*",
        ),
    ],
)
def test_a_gpm_filter_that_cannot_run_is_refused_at_the_gpm_before_any_event(
    tmp_path, capsys, gpm_b, message
):
    """An EXISTS over an earlier GPM's variable, an unknown function in the GPM's query or in a
    filter the NFA evaluates: each a compile error at the GPM's name (line 7, column 14)."""
    result = run_query(tmp_path, capsys, gpm_b)
    assert_failure(result, rf"{re.escape(str(tmp_path / 'query.rq'))}:7:14: {message}")


def test_a_filter_reading_a_later_gpms_variable_is_warned_about_on_stderr(tmp_path, capsys):
    result = run_query(tmp_path, capsys, "?y :q ?b", gpm_a="?x :p ?a FILTER(?a < ?b)")
    assert matches(result) == []
    assert (
        f"rsep: warning: {tmp_path / 'query.rq'}: GPM A: FILTER reads ?b, which only a later GPM binds (B): "
        "the variable is unbound when the filter is evaluated" in result.stderr
    )


def test_a_filter_reading_a_variable_no_gpm_binds_is_warned_about_without_claiming_it_fails(tmp_path, capsys):
    """COALESCE falls back on ?a when ?zz is unbound: the filter holds, the warning says why
    it might not."""
    result = run_query(tmp_path, capsys, "?y :q ?b FILTER(COALESCE(?zz, ?a) < ?b)")
    assert matches(result) == [(1, 2, {**A_MATCH, **Y1}), (1, 3, {**A_MATCH, **Y2})]
    assert (
        "GPM B: FILTER reads ?zz, which no GPM binds: the variable is unbound when the filter is evaluated\n"
        in result.stderr
    )
