"""A continuous query's IRIs are absolute once BASE and the given base resolve them (issue 15,
item 8): a relative `FROM STREAM` IRI names a stream no client can post to (`?stream=` takes
absolute IRIs only), and a relative IRI in a pattern reached Oxigraph as generated SPARQL it
refused. Every dialect refuses it at the IRI (400 on POST /queries, the compiler's error that
`rsep run` prints); a BASE in the text or `?base=` makes it absolute, and `rsep run` resolves
against the query file's address."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rsep import compiler
from rsep.plugin.errors import InvalidInput
from tests.support.streaming_endpoint import register, service

RSEP = Path(sys.executable).parent / "rsep"
SPASEQ = """PREFIX b: <http://example.org/b#>
SELECT ?k
WITHIN 10 SECONDS
FROM STREAM S1 <stream>
WHERE {
  SEQ (A; B)
  DEFINE GPM A ON S1 { ?a b:opens ?k . }
  DEFINE GPM B ON S1 { ?b b:closes ?k . }
}
"""
PATTERN = SPASEQ.replace("<stream>", "<http://ex.org/s>").replace("b:closes", "<closes>")
CSPARQL = "REGISTER QUERY q AS SELECT ?s\nFROM STREAM <s> [RANGE 10s STEP 5s] WHERE { ?s ?p ?o }"
RELATIVE = {  # dialect: (query, line and column of its relative IRI)
    "spaseq": (SPASEQ, (4, 16)),
    "spaseq-pattern": (PATTERN, (8, 27)),
    "ep-sparql": ("PREFIX : <http://ex.org/>\nSELECT ?c WHERE\n{ ?c :p ?x }\nSEQ { ?c <rel> ?y }\n", (4, 10)),
    "c-sparql": (CSPARQL, (2, 13)),
    "cqels": ("SELECT ?s WHERE { STREAM <s> [RANGE 3s] { ?s ?p ?o } }", (1, 26)),
}


@pytest.mark.parametrize("name", RELATIVE)
def test_a_relative_iri_is_a_400_at_the_iri_and_registers_nothing(app, name):
    text, (line, column) = RELATIVE[name]
    response = app.test_client().post(
        "/queries", data=text, content_type="application/sparql-query", headers={"Accept": "application/json"}
    )
    assert response.status_code == 400, response.get_data(as_text=True)
    found = response.json
    assert (found["parameter"], found["line"], found["column"]) == ("query", line, column)
    assert "is a relative IRI and the query has no base" in found["message"]
    assert service(app).registry.all() == []


@pytest.mark.parametrize("name", RELATIVE)
def test_the_compiler_refuses_it_with_its_position(name):
    text, (line, column) = RELATIVE[name]
    with pytest.raises(InvalidInput) as refused:
        compiler.parse(text, base=None)
    assert (refused.value.line, refused.value.column) == (line, column)


def test_a_base_makes_the_stream_iri_absolute(app):
    client = app.test_client()
    given = register(client, SPASEQ, base="http://example.org/streams/")
    assert given.status_code == 201, given.get_data(as_text=True)
    assert given.json["streams"] == ["http://example.org/streams/stream"]
    written = register(client, "BASE <http://example.org/other/>\n" + SPASEQ)
    assert written.status_code == 201, written.get_data(as_text=True)
    assert written.json["streams"] == ["http://example.org/other/stream"]


@pytest.mark.parametrize("name", ["spaseq", "c-sparql"])
def test_rsep_run_resolves_it_against_the_query_file(tmp_path, name):
    query = tmp_path / "query.rq"
    query.write_text(RELATIVE[name][0], encoding="utf-8")
    events = tmp_path / "events.trig"
    events.write_text(
        '<urn:e1> { <urn:x> <http://example.org/b#opens> "k" }\n'
        '<urn:e1> <http://www.w3.org/ns/prov#generatedAtTime> "2020-01-01T00:00:00Z"'
        "^^<http://www.w3.org/2001/XMLSchema#dateTime> .\n",
        encoding="utf-8",
    )

    def run(stream: str) -> subprocess.CompletedProcess[str]:
        args = [str(RSEP), "run", str(query), "--engine", "inprocess", "--stream", f"{stream}={events}"]
        return subprocess.run(args, capture_output=True, text=True, timeout=300, check=False)

    resolved = (tmp_path / "s" if name == "c-sparql" else tmp_path / "stream").as_uri()
    named = run("s" if name == "c-sparql" else "stream")
    assert named.returncode == 2
    assert named.stderr.strip().endswith(f"the query reads <{resolved}>")
    assert run(resolved).returncode == 0
