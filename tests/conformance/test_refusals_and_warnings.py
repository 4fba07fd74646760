"""What `rsep run` refuses or warns about so that a user is told why an answer differs from what
a paper or another engine gives (issue 16): SPAseq's WITHIN 0, a negated GPM correlated only with
the element after it, an EP-SPARQL run without events, a C-SPARQL window stepping past its range.
The refusals come before any engine starts, so both engines give them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rsep.endpoint.cli import main
from tests.support.cli import FIG1, FIG1_STREAM, Outcome, assert_failure

PREFIXES = "PREFIX : <http://example.org/fig1/>\n"
DEFINITIONS = (
    "  DEFINE GPM A ON S1 { ?a a :A }\n  DEFINE GPM B ON S1 { ?b a :B }\n  DEFINE GPM C ON S1 { ?c a :C }\n"
)
ENGINES = ["inprocess", "spark"]


def run(capsys: pytest.CaptureFixture[str], query: Path, engine: str, *streams: str) -> Outcome:
    args = ["run", str(query), "--engine", engine, "--master", "local[1]"]
    for stream in streams:
        args += ["--stream", stream]
    code = main(args)
    captured = capsys.readouterr()
    return Outcome(code, captured.out, captured.err)


def spaseq(folder: Path, head: str, where: str) -> Path:
    path = folder / "query.rq"
    text = f"{PREFIXES}SELECT *{head}\nFROM STREAM S1 <{FIG1_STREAM}>\nWHERE {{\n  {where}\n{DEFINITIONS}}}\n"
    path.write_text(text, encoding="utf-8")
    return path


FIG1_EVENTS = f"{FIG1_STREAM}={FIG1 / 'stream.trig'}"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("amount", ["0", "0.0"])
def test_spaseq_within_0_is_refused_at_the_duration(tmp_path, capsys, engine, amount):
    query = spaseq(tmp_path, f" WITHIN {amount} SECONDS", "SEQ (A; B)")
    result = run(capsys, query, engine, FIG1_EVENTS)
    assert_failure(
        result, rf"{re.escape(str(query))}:2:17: WITHIN {amount} SECONDS: the window must be longer than 0 .*"
    )


def test_spaseq_within_a_positive_duration_still_runs(tmp_path, capsys):
    query = spaseq(tmp_path, " WITHIN 0.5 SECONDS", "SEQ (A; B)")
    assert run(capsys, query, "inprocess", FIG1_EVENTS).returncode == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_a_negation_sharing_a_variable_only_with_the_next_element_is_refused(tmp_path, capsys, engine):
    """SPAseq App. B / Algorithm 9 check B! with what A bound: ?c, bound only by C, would be free."""
    query = spaseq(tmp_path, "", "SEQ (A; B!; C)")
    query.write_text(query.read_text().replace("{ ?b a :B }", "{ ?c :sees ?b }"), encoding="utf-8")
    result = run(capsys, query, engine, FIG1_EVENTS)
    assert_failure(
        result, rf"{re.escape(str(query))}:5:11: 'B!' shares \?c only with elements after it: .* App\. B.*"
    )


def test_a_negation_sharing_a_variable_with_an_earlier_element_runs(tmp_path, capsys):
    query = spaseq(tmp_path, "", "SEQ (A; B!; C)")
    query.write_text(query.read_text().replace("{ ?b a :B }", "{ ?a :sees ?b }"), encoding="utf-8")
    assert run(capsys, query, "inprocess", FIG1_EVENTS).returncode == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_an_epsparql_run_without_streams_is_refused(tmp_path, capsys, engine):
    query = tmp_path / "query.rq"
    query.write_text(PREFIXES + "SELECT * WHERE { ?s :p ?o }\n", encoding="utf-8")
    result = run(capsys, query, engine)
    assert_failure(result, r"no events given: the query names no stream .* add --stream IRI=FILE")


def test_a_csparql_step_longer_than_the_range_warns(tmp_path, capsys):
    query = tmp_path / "query.rq"
    query.write_text(
        "REGISTER QUERY q AS PREFIX : <http://example.org/fig1/>\n"
        f"SELECT ?s FROM STREAM <{FIG1_STREAM}> [RANGE 2s STEP 5s] WHERE {{ ?s a :A }}\n",
        encoding="utf-8",
    )
    result = run(capsys, query, "inprocess", FIG1_EVENTS)
    assert result.returncode == 0
    assert result.stderr == (
        f"rsep: warning: {query}: the window on <{FIG1_STREAM}> steps 5 s but is 2 s wide: "
        "an item arriving in the 3 s between two windows is never seen\n"
    )
    query.write_text(query.read_text().replace("STEP 5s", "STEP 2s"), encoding="utf-8")
    assert run(capsys, query, "inprocess", FIG1_EVENTS).stderr == ""
