"""`rsep run` refuses a CQELS query Oxigraph cannot run before reading any event: an event
clause's element pattern at the element (`{` of a SEQ element, or its WINDOW block), the query
over the windows at its query form; a trailing VALUES at its keyword. Exit 2, nothing on stdout,
one line `FILE:line:col: message` on stderr."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsep.endpoint.cli import main

S = "http://example.org/s"
HEAD = f"""PREFIX : <http://example.org/>
SELECT ?x ?y FROM NAMED WINDOW :w ON <{S}> [RANGE 10s]
FROM NAMED WINDOW :v ON <{S}> [RANGE 5s]
WHERE {{
"""
UNKNOWN = "the custom function <http://example.org/unknownFunction> is not supported"
REFUSED = "FILTER(:unknownFunction(?y))"


def refusal(tmp_path: Path, capsys: pytest.CaptureFixture[str], query: str) -> tuple[Path, str]:
    """Run `query` over a stream file that does not exist: a refusal must come before it is read."""
    path = tmp_path / "query.rq"
    path.write_text(query, encoding="utf-8")
    assert main(["run", str(path), "--stream", f"{S}={tmp_path / 'missing.trig'}"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    return path, err


@pytest.mark.parametrize(
    ("where", "position", "gpm"),
    [
        (f"  WINDOW :w {{ SEQ({{?x :a ?y}}, {{?x :b ?y {REFUSED}}}) }}\n", "5:31", "P2"),
        (f"  WINDOW :w {{ SEQ({{?x :a ?y}}, !{{?x :n ?y {REFUSED}}}, {{?x :b ?y}}) }}\n", "5:31", "P2"),
        (
            f"  SEQ(:w, !:v)\n  WINDOW :w {{ ?x :a ?y }}\n    WINDOW :v {{ ?x :b ?y {REFUSED} }}\n",
            "7:5",
            "P2",
        ),
        (
            f"  WINDOW :w {{ SEQ({{?x :a ?y}}, {{?x :b ?y}}) }}\n  WINDOW :v {{ ?x :c ?y {REFUSED} }}\n",
            "6:3",
            "P3",
        ),
    ],
    ids=["seq-element", "negated-element", "window-in-seq-over-windows", "window-block-clause"],
)
def test_an_event_clause_element_oxigraph_refuses_is_located_at_the_element(
    tmp_path, capsys, where, position, gpm
):
    path, err = refusal(tmp_path, capsys, HEAD + where + "}\n")
    assert err == f"{path}:{position}: GPM {gpm}: {UNKNOWN}\n"


def test_a_filter_of_p_oxigraph_refuses_is_located_at_the_query_form(tmp_path, capsys):
    """P is evaluated by Oxigraph with the clauses' solutions as VALUES: checked with one row."""
    where = f"  WINDOW :w {{ SEQ({{?x :a ?y}}, {{?x :b ?y}}) }}\n  {REFUSED}\n"
    path, err = refusal(tmp_path, capsys, HEAD + where + "}\n")
    assert err == f"{path}:2:1: the window query: {UNKNOWN}\n"


def test_a_cqels_ql_query_oxigraph_refuses_is_located_at_the_query_form(tmp_path, capsys):
    query = (
        "PREFIX : <http://example.org/>\n\n  CONSTRUCT { ?x :p ?y }\n"
        f"WHERE {{ STREAM <{S}> [RANGE 1s] {{ ?x :a ?y }} {REFUSED} }}\n"
    )
    path, err = refusal(tmp_path, capsys, query)
    assert err == f"{path}:3:3: the window query: {UNKNOWN}\n"


def test_a_nested_path_in_a_seq_element_is_located_at_the_element(tmp_path, capsys):
    path, err = refusal(tmp_path, capsys, HEAD + "  WINDOW :w { SEQ({?x :a ?y}, {?x :a/[:b] ?y}) }\n}\n")
    assert err.startswith(f"{path}:5:31: nested paths [...] are matched against the static data")


def test_a_trailing_values_is_located_at_its_keyword(tmp_path, capsys):
    query = HEAD + "  WINDOW :w { ?x :a ?y }\n}\n  VALUES ?x { :k }\n"
    path, err = refusal(tmp_path, capsys, query)
    assert err == f"{path}:7:3: a trailing VALUES clause does not apply to a CQELS query\n"


@pytest.mark.parametrize(
    ("window", "column", "message"),
    [
        ("[RANGE 0.0004ms]", 46, "RANGE 0.0004ms"),
        ("[RANGE 10s SLIDE 0.0001ms]", 56, "SLIDE 0.0001ms"),
    ],
)
def test_a_window_duration_that_rounds_to_no_microsecond_is_located_at_the_duration(
    tmp_path, capsys, window, column, message
):
    """Windows count whole microseconds: a shorter width or slide would divide by zero or hold nothing."""
    query = f"PREFIX : <http://example.org/>\nSELECT ?x\nWHERE {{ STREAM <{S}> {window} {{ ?x :a ?y }} }}\n"
    path, err = refusal(tmp_path, capsys, query)
    assert err == (
        f"{path}:3:{column}: {message}: a duration here must be at least 1µs (windows count time in whole "
        "microseconds, and this rounds to 0)\n"
    )
