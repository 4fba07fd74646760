"""`rsep run` as a user runs it: the installed script in a subprocess, on the
Query 1 fixture (three streams and a background KB), and its failure modes:
exit 2, nothing on stdout, one line on stderr that says where."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pyoxigraph as ox
import pytest

from tests.support.cli import FIG1, FIG1_STREAM, RSEP, assert_failure

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "spaseq"
CASE = FIXTURES / "query1-smart-grid"


def manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text(encoding="utf-8"))


def stream_args(folder: Path, replace: dict[str, Path] | None = None, skip: str | None = None) -> list[str]:
    args = []
    for iri, file in manifest(folder)["streams"].items():
        if iri != skip:
            args += ["--stream", f"{iri}={(replace or {}).get(iri, folder / file)}"]
    for file in manifest(folder).get("kb", []):
        args += ["--kb", str(folder / file)]
    return args


def rsep(query: Path, args: list[str], cwd: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Runs in an unrelated working directory: every path is absolute."""
    command = [str(RSEP), "run", str(query), *args, "--engine", "inprocess", *extra]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=300, check=False)


def test_jsonl_output_is_exactly_the_expected_file(tmp_path):
    result = rsep(CASE / "query.rq", stream_args(CASE), tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (CASE / "expected.jsonl").read_text(encoding="utf-8")


def test_srj_output_is_sparql_results_json_of_the_projected_variables(tmp_path):
    result = rsep(CASE / "query.rq", stream_args(CASE), tmp_path, "--format", "srj")
    assert result.returncode == 0, result.stderr
    solutions = ox.parse_query_results(result.stdout.encode(), format=ox.QueryResultsFormat.JSON)
    assert isinstance(solutions, ox.QuerySolutions)
    names = [v.value for v in solutions.variables]
    assert names == ["house", "fr1", "fr2", "house2", "city", "oname"]
    rows = [{name: str(s[name]) for name in names if s[name] is not None} for s in solutions]
    expected = [json.loads(line)["bindings"] for line in (CASE / "expected.jsonl").read_text().splitlines()]
    assert rows == expected


def test_malformed_query_reports_file_line_and_column(tmp_path):
    query = tmp_path / "bad.rq"
    lines = (FIG1 / "query.rq").read_text(encoding="utf-8").splitlines()
    number = next(i for i, line in enumerate(lines) if "SEQ (A, B, C)" in line)
    lines[number] = lines[number].replace("SEQ (A, B, C)", "SEQ (A, B C)")  # a missing operator
    query.write_text("\n".join(lines) + "\n", encoding="utf-8")
    column = lines[number].index("B C") + 3
    result = rsep(query, stream_args(FIG1), tmp_path)
    assert_failure(result, rf"{re.escape(str(query))}:{number + 1}:{column}: .*'C'.*")


def test_malformed_trig_reports_file_line_and_column(tmp_path):
    events = tmp_path / "bad.trig"
    events.write_text(
        "@prefix : <http://example.org/fig1/> .\n"
        ":g1 { :a1 a :A . }\n"
        ":g2 { :b1 a . }\n",  # no object: the parser stops at the '.' of line 3, column 13
        encoding="utf-8",
    )
    result = rsep(FIG1 / "query.rq", stream_args(FIG1, {FIG1_STREAM: events}), tmp_path)
    assert_failure(result, rf"{re.escape(str(events))}:3:13: .*")


def test_event_graph_without_timestamp_reports_the_file_and_position(tmp_path):
    events = tmp_path / "untimed.trig"
    events.write_text(
        "@prefix : <http://example.org/fig1/> .\n"
        "@prefix prov: <http://www.w3.org/ns/prov#> .\n"
        ":g1 { :a1 a :A . }\n"
        ":g1 prov:generatedAtTime 1 .\n"
        ":g2 { :b1 a :B . }\n",
        encoding="utf-8",
    )
    result = rsep(FIG1 / "query.rq", stream_args(FIG1, {FIG1_STREAM: events}), tmp_path)
    assert_failure(result, rf"{re.escape(str(events))}:5:\d+: .*g2.*generatedAtTime.*")


def test_unknown_stream_is_named(tmp_path):
    extra = ["--stream", f"http://example.org/no-such-stream={FIG1 / 'stream.trig'}"]
    result = rsep(FIG1 / "query.rq", stream_args(FIG1) + extra, tmp_path)
    assert_failure(result, r".*unknown stream.*<http://example\.org/no-such-stream>.*")


@pytest.mark.parametrize("missing", list(manifest(CASE)["streams"]), ids=lambda iri: iri.rsplit("/", 1)[-1])
def test_missing_stream_of_the_query_is_named(tmp_path, missing):
    result = rsep(CASE / "query.rq", stream_args(CASE, skip=missing), tmp_path)
    assert_failure(result, rf".*{re.escape(missing)}.*")
