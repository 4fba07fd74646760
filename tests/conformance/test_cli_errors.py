"""`rsep run`'s failures beyond the parser: queries the compiler rejects, unreadable query and KB
files, bad or mixed timestamps, and an engine that cannot start. Each one is exit 2, nothing on
stdout and one line on stderr saying where (`FILE:line:col: ...` where there is a position)."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from rsep.endpoint.cli import main
from tests.support.cli import FIG1, FIG1_STREAM, RSEP, Outcome, assert_failure, run_main

PREFIXES = "PREFIX : <http://example.org/fig1/>\n"
HEAD = PREFIXES + "SELECT *\nFROM STREAM S1 <http://example.org/fig1/stream>\n"
DEFINITIONS = "  DEFINE GPM A ON S1 { ?a a :A }\n  DEFINE GPM B ON S1 { ?b a :B }\n"


def write_query(folder: Path, where: str) -> Path:
    path = folder / "query.rq"
    path.write_text(HEAD + "WHERE {\n" + where + "}\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("sequence", "column", "message"),
    [
        ("SEQ (A!; B)", 8, "the sequence cannot start with 'A!'"),
        ("SEQ (A; B?)", 11, "the sequence cannot end with 'B\\?'"),
        ("SEQ (A, (A | B)!)", 11, "the sequence cannot end with '\\(A \\| B\\)!'"),
    ],
)
def test_a_sequence_the_compiler_rejects_points_at_the_element_by_its_gpm_names(
    tmp_path, capsys, sequence, column, message
):
    query = write_query(tmp_path, f"  {sequence}\n" + DEFINITIONS)
    result = run_main(capsys, query)
    assert_failure(result, rf"{re.escape(str(query))}:5:{column}: {message}: .*")


def test_graph_variable_inside_a_gpm_points_at_the_gpm_definition(tmp_path, capsys):
    where = "  SEQ (A; B)\n  DEFINE GPM A ON S1 { ?a a :A }\n  DEFINE GPM B ON S1 { GRAPH ?g { ?b a :B } }\n"
    query = write_query(tmp_path, where)
    result = run_main(capsys, query)
    assert_failure(result, rf"{re.escape(str(query))}:7:14: GPM B: GRAPH \?variable is not supported .*")


def test_service_inside_a_gpm_is_rejected_at_compile_time_with_its_position(tmp_path, capsys):
    """A SERVICE call per batch of events would make matches depend on the network (and an
    unreachable one failed with an OSError traceback): it is refused before any event is read."""
    where = (
        "  SEQ (A; B)\n  DEFINE GPM A ON S1 { ?a a :A }\n"
        "  DEFINE GPM B ON S1 { ?b a :B . SERVICE <http://127.0.0.1:9/sparql> { ?b :p ?o } }\n"
    )
    query = write_query(tmp_path, where)
    result = run_main(capsys, query)
    assert_failure(result, rf"{re.escape(str(query))}:7:14: GPM B: SERVICE is not supported inside a GPM: .*")


def test_a_partition_variable_not_every_gpm_binds_points_at_that_variable(tmp_path, capsys):
    query = tmp_path / "query.rq"
    query.write_text(
        HEAD.replace("SELECT *\n", "SELECT *\nPARTITION BY (?a ?b)\n")
        + "WHERE {\n  SEQ (A; B)\n"
        + DEFINITIONS
        + "}\n",
        encoding="utf-8",
    )
    result = run_main(capsys, query)
    assert_failure(result, rf"{re.escape(str(query))}:3:15: PARTITION BY \?a, \?b: a partition variable .*")


@pytest.mark.parametrize(
    ("trailer", "column", "message"),
    [
        ("VALUES ?a { :a1 }", 1, "a trailing VALUES clause does not apply to a SPAseq query"),
        ("GROUP BY ?a", 1, "GROUP BY does not apply to a SPAseq query: .*"),
        ("ORDER BY ?a", 1, "ORDER BY does not apply to a SPAseq query: .*"),
        ("  LIMIT 1", 3, "LIMIT or OFFSET does not apply to a SPAseq query: .*"),
        ("HAVING (?a != ?b)", 1, "HAVING does not apply to a SPAseq query: .*"),
    ],
)
def test_a_clause_after_the_where_that_spaseq_has_not_points_at_the_clause(
    tmp_path, capsys, trailer, column, message
):
    query = tmp_path / "query.rq"
    query.write_text(
        HEAD + "WHERE {\n  SEQ (A; B)\n" + DEFINITIONS + "}\n" + trailer + "\n", encoding="utf-8"
    )
    result = run_main(capsys, query)
    assert_failure(result, rf"{re.escape(str(query))}:9:{column}: {message}")


def test_a_query_without_from_stream_points_at_its_select(tmp_path, capsys):
    query = tmp_path / "query.rq"
    query.write_text(PREFIXES + "SELECT *\nWHERE {\n  SEQ (A; B)\n" + DEFINITIONS + "}\n", encoding="utf-8")
    result = run_main(capsys, query)
    assert_failure(result, rf"{re.escape(str(query))}:2:1: a SPAseq query reads at least one stream: .*")


@pytest.mark.parametrize("form", ["ASK", "CONSTRUCT { ?a a :A }", "DESCRIBE ?a"])
def test_a_query_form_other_than_select_is_named_as_not_spaseq(tmp_path, capsys, form):
    """SPAseq Def. 4 defines SELECT queries only."""
    query = tmp_path / "query.rq"
    query.write_text(
        HEAD.replace("SELECT *", form) + "WHERE {\n  SEQ (A; B)\n" + DEFINITIONS + "}\n", encoding="utf-8"
    )
    result = run_main(capsys, query)
    keyword = form.split()[0]
    assert_failure(
        result, rf"{re.escape(str(query))}:2:1: {keyword} is not a SPAseq query form: .*SPAseq Def\. 4.*"
    )


def test_a_query_file_that_is_not_utf8_names_the_file_and_the_byte(tmp_path, capsys):
    query = tmp_path / "latin1.rq"
    query.write_bytes((HEAD + "# caf\xe9\nWHERE { SEQ (A; B)\n" + DEFINITIONS + "}\n").encode("latin-1"))
    result = run_main(capsys, query)
    assert_failure(result, rf"{re.escape(str(query))}:4:6: the query is not UTF-8 text \(byte 0xe9\)")


def test_a_missing_kb_file_gives_the_reason(tmp_path, capsys):
    result = run_main(capsys, FIG1 / "query.rq", "--kb", str(tmp_path / "nothere.ttl"))
    assert_failure(
        result,
        rf"{re.escape(str(tmp_path / 'nothere.ttl'))}: cannot read the file: No such file or directory",
    )


def test_a_time_too_large_for_the_windows_is_refused_at_its_triple(tmp_path, capsys):
    """Windows count microseconds: 1e308 seconds overflowed them (an OverflowError traceback from
    a window query)."""
    events, query = tmp_path / "huge.trig", tmp_path / "count.rq"
    events.write_text(
        "@prefix : <http://example.org/fig1/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
        ":g1 { :a1 a :A . }\n:g1 prov:generatedAtTime 1 .\n"
        ":g2 { :b1 a :B . }\n:g2 prov:generatedAtTime 1e308 .\n",
        encoding="utf-8",
    )
    query.write_text(
        f"REGISTER QUERY c AS\nSELECT (COUNT(?x) AS ?n)\nFROM STREAM <{FIG1_STREAM}> [RANGE 10s STEP 5s]\n"
        "WHERE { ?x a ?type }\n",
        encoding="utf-8",
    )
    code = main(["run", str(query), "--stream", f"{FIG1_STREAM}={events}", "--engine", "inprocess"])
    captured = capsys.readouterr()
    too_large = "'1e308' is too large: rsep reads numbers up to 1e300 as times"
    expected = rf"{re.escape(str(events))}:6:1: bad timestamp .*g2.*{too_large}"
    assert_failure(Outcome(code, captured.out, captured.err), expected)


@pytest.mark.parametrize("make", [lambda path: None, lambda path: path.mkdir()], ids=["missing", "a folder"])
def test_an_event_file_that_cannot_be_read_gives_the_reason(tmp_path, capsys, make):
    """pyoxigraph's OSError has no strerror: the message said `cannot read the file: None`."""
    events = tmp_path / "events.trig"
    make(events)
    code = main(
        ["run", str(FIG1 / "query.rq"), "--stream", f"{FIG1_STREAM}={events}", "--engine", "inprocess"]
    )
    captured = capsys.readouterr()
    reason = "No such file or directory" if not events.exists() else "Is a directory"
    assert_failure(
        Outcome(code, captured.out, captured.err),
        rf"{re.escape(str(events))}: cannot read the file: {reason}",
    )


def test_a_bad_timestamp_points_at_its_triple_not_at_the_graph(tmp_path, capsys):
    events = tmp_path / "bad.trig"
    events.write_text(
        "@prefix : <http://example.org/fig1/> .\n"
        "@prefix prov: <http://www.w3.org/ns/prov#> .\n"
        ":g1 { :a1 a :A . }\n"
        ":g1 prov:generatedAtTime 1 .\n"
        ":g2 { :b1 a :B . }\n"
        '  :g2 prov:generatedAtTime "soon" .\n',
        encoding="utf-8",
    )
    code = main(
        ["run", str(FIG1 / "query.rq"), "--stream", f"{FIG1_STREAM}={events}", "--engine", "inprocess"]
    )
    captured = capsys.readouterr()
    assert_failure(
        Outcome(code, captured.out, captured.err), rf"{re.escape(str(events))}:6:3: bad timestamp .*g2.*"
    )


def test_datetime_and_number_timestamps_in_one_run_are_rejected_naming_both(tmp_path, capsys):
    numbers, dates = tmp_path / "numbers.trig", tmp_path / "dates.trig"
    numbers.write_text(
        "@prefix : <http://example.org/fig1/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
        ":g1 { :a1 a :A . }\n:g1 prov:generatedAtTime 1 .\n",
        encoding="utf-8",
    )
    dates.write_text(
        "@prefix : <http://example.org/fig1/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
        "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
        ':g2 { :b1 a :B . }\n:g2 prov:generatedAtTime "2024-01-01T00:00:00Z"^^xsd:dateTime .\n',
        encoding="utf-8",
    )
    streams = ["--stream", f"{FIG1_STREAM}={numbers}", "--stream", f"{FIG1_STREAM}={dates}"]
    code = main(["run", str(FIG1 / "query.rq"), *streams, "--engine", "inprocess"])
    captured = capsys.readouterr()
    expected = (
        rf"{re.escape(str(dates))}:5:1: timestamp 2024-01-01T00:00:00Z is an xsd:dateTime, "
        rf"but {re.escape(str(numbers))}:4:1 gives 1, a number: .*"
    )
    assert_failure(Outcome(code, captured.out, captured.err), expected)


def spark_run(
    tmp_path: Path, *extra: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    """`rsep run` with its default engine (Spark), as a user runs it."""
    command = [
        str(RSEP),
        "run",
        str(FIG1 / "query.rq"),
        "--stream",
        f"{FIG1_STREAM}={FIG1 / 'stream.trig'}",
        *extra,
    ]
    started = time.monotonic()
    result = subprocess.run(
        command, capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False, env=env
    )
    return result, time.monotonic() - started


def test_a_master_spark_does_not_accept_fails_fast_in_one_line(tmp_path):
    result, seconds = spark_run(tmp_path, "--master", "bogus://nowhere")
    assert_failure(result, r"rsep: Spark master 'bogus://nowhere' is not one Spark accepts .*")
    assert seconds < 30  # no JVM is started to find out


def test_a_local_master_spark_cannot_parse_fails_fast_in_one_line(tmp_path):
    result, seconds = spark_run(tmp_path, "--master", "local[x]")
    assert_failure(result, r"rsep: Spark master 'local\[x\]' is not one Spark accepts .*")
    assert seconds < 30


@pytest.mark.spark
def test_a_master_the_jvm_refuses_is_reported_in_the_jvms_words(tmp_path):
    """The context's own stack trace is muted while it starts; Java's message is the one line
    rsep writes. (The JVM itself warns on stderr that it uses an incubator module.)"""
    result, _ = spark_run(tmp_path, "--master", "local[0]")
    assert result.returncode == 2 and result.stdout == ""
    lines = [line for line in result.stderr.splitlines() if "incubator modules" not in line]
    assert lines == ["rsep: Spark failed on local[0]: Asked to run locally with 0 threads"]


def test_a_java_home_whose_java_fails_is_reported_in_one_line(tmp_path):
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text('#!/bin/sh\necho "java version 1.8" >&2\nexit 1\n', encoding="utf-8")
    java.chmod(0o755)
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "jdk")}
    result, _ = spark_run(tmp_path, env=env)
    assert_failure(
        result,
        rf"rsep: JAVA_HOME is {re.escape(str(tmp_path / 'jdk'))}, whose bin/java fails "
        r"\(exit 1: java version 1\.8\): Spark needs Java 17 or later",
    )


def test_a_java_home_without_java_fails_fast_in_one_line(tmp_path):
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "nonexistent")}
    result, _ = spark_run(tmp_path, env=env)
    assert_failure(
        result, rf"rsep: JAVA_HOME is {re.escape(str(tmp_path / 'nonexistent'))}, which has no bin/java: .*"
    )


def test_dialect_names_the_query_file_s_dialect_instead_of_detecting_it(capsys):
    detected = run_main(capsys, FIG1 / "query.rq")
    named = run_main(capsys, FIG1 / "query.rq", "--dialect", "spaseq")
    assert detected.returncode == named.returncode == 0 and named.stdout == detected.stdout != ""
    other = run_main(capsys, FIG1 / "query.rq", "--dialect", "ep-sparql")
    assert other.returncode == 2 and other.stdout == ""
    assert re.match(r".*query\.rq:\d+:\d+: ", other.stderr)  # EP-SPARQL's syntax error, located


def _fig1_out_of_order(tmp_path: Path) -> Path:
    """Fig. 1's stream with events 1 and 2, and 4 and 5, written the other way round."""
    kinds = {1: "a1 a :A", 2: "b1 a :B", 3: "c1 a :C", 4: "a2 a :A", 5: "a3 a :A", 6: "b2 a :B", 7: "c2 a :C"}
    lines = ["@prefix : <http://example.org/fig1/> .", "@prefix prov: <http://www.w3.org/ns/prov#> ."]
    lines += [f":g{t} {{ :{kinds[t]} . }} :g{t} prov:generatedAtTime {t} ." for t in (2, 1, 3, 5, 4, 6, 7)]
    path = tmp_path / "shuffled.trig"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_max_lateness_reads_a_file_out_of_order_within_it_and_refuses_what_is_later(tmp_path, capsys):
    stream = f"{FIG1_STREAM}={_fig1_out_of_order(tmp_path)}"
    query = str(FIG1 / "query.rq")
    for given in ("1", "PT1S"):
        assert main(["run", query, "--stream", stream, "--engine", "inprocess", "--max-lateness", given]) == 0
        assert capsys.readouterr().out == (FIG1 / "expected.jsonl").read_text()
    assert main(["run", query, "--stream", stream, "--engine", "inprocess", "--max-lateness", "0.5"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and re.search(r"shuffled\.trig:\d+:\d+: event .*g1> at 1 is late", captured.err)
