"""End to end on the default engine: a real `rsep serve` (no `--engine`: Spark, on
`local[2]`), the smart-grid query registered, its knowledge base loaded through the Graph
Store Protocol, its event files posted by `rsep post`, and the match read back by SPARQLWrapper
(the README's snippet, taken from README.md: one row per match), by GET /queries/{id}/results
and, as a named graph, by rdflib's SPARQLStore: the bindings `rsep run` prints for the same
files, and the match's metadata."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import rdflib
from rdflib.plugins.stores.sparqlstore import SPARQLStore
from SPARQLWrapper import JSON, SPARQLWrapper

from tests.support.paths import REPO
from tests.support.servers import rsep_command
from tests.support.smart_grid import SMART_GRID, SMART_GRID_STREAMS
from tests.support.spark_server import SparkServer, wait_caught_up

pytestmark = [pytest.mark.spark, pytest.mark.e2e]

SG = "http://smartgrid.org/"
XSD_DATETIME = "http://www.w3.org/2001/XMLSchema#dateTime"
SOLUTION = """
PREFIX rs: <http://www.w3.org/2001/sw/DataAccess/tests/result-set#>
SELECT ?var ?value WHERE {
  GRAPH <%s> { [] rs:solution/rs:binding [ rs:variable ?var ; rs:value ?value ] }
}"""
METADATA = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX rsep: <https://w3id.org/rsep#>
SELECT ?match ?start ?end ?event WHERE {
  GRAPH <urn:rsep:matches> {
    ?match a rsep:Match ; prov:wasGeneratedBy <%s> ; rsep:start ?start ; rsep:end ?end ;
           prov:wasDerivedFrom ?event
  }
}"""


def readme_query(query_iri: str) -> str:
    """The query of the README's SPARQLWrapper snippet (an f-string of the query's IRI), as the
    snippet builds it for `query_iri`."""
    found = re.search(r'sparql\.setQuery\(f"""(.*?)"""\)', (REPO / "README.md").read_text(), re.DOTALL)
    assert found, "README.md has no SPARQLWrapper snippet"
    text = found.group(1).replace('{query["iri"]}', query_iri)
    return text.replace("{{", "{").replace("}}", "}")


def n_triples(binding: dict[str, Any]) -> str:
    """A SPARQL JSON results term as `rsep run` prints terms (N-Triples)."""
    if binding["type"] == "uri":
        return f"<{binding['value']}>"
    literal = rdflib.Literal(binding["value"], lang=binding.get("xml:lang"), datatype=binding.get("datatype"))
    return literal.n3()


def replayed_matches() -> list[dict[str, Any]]:
    """What `rsep run` finds in the example's files (the in-process runtime: the same runtime
    without a second Spark start)."""
    streams = [f"--stream={iri}={path}" for iri, path in SMART_GRID_STREAMS.items()]
    replayed = rsep_command("run", str(SMART_GRID / "query.rq"), "--engine", "inprocess", *streams,
                            "--kb", str(SMART_GRID / "kb.trig"))  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    return [json.loads(line) for line in replayed.stdout.splitlines()]


def test_sparqlwrapper_and_sparqlstore_read_a_spaseq_match_as_a_named_graph(tmp_path):
    expected = replayed_matches()
    assert len(expected) == 1  # the example's one match
    bindings, start, end = expected[0]["bindings"], expected[0]["start"], expected[0]["end"]
    server = SparkServer(tmp_path / "data", tmp_path / "server.log", engine=None)
    try:
        query_text = (SMART_GRID / "query.rq").read_bytes()
        status, query = server.request("POST", "/queries", query_text, "application/sparql-query")
        assert status == 201 and query["dialect"] == "spaseq"
        kb = (SMART_GRID / "kb.trig").read_bytes()
        assert server.request("POST", "/store", kb, "application/trig")[0] == 204
        streams = [f"--stream={iri}={path}" for iri, path in SMART_GRID_STREAMS.items()]
        posted = rsep_command("post", server.base, *streams)
        assert posted.returncode == 0 and posted.stderr.strip() == f"rsep: 8 events accepted by {server.base}"
        read = wait_caught_up(server, query["id"], timeout=120)
        assert (read["events"], read["matches"]) == (8, 1)
        assert server.spark_batches(query["id"]) > 0  # the default engine is Spark, and it ran

        client = SPARQLWrapper(server.base + "/sparql")
        client.setQuery(readme_query(query["iri"]))
        client.setReturnFormat(JSON)
        (row,) = client.query().convert()["results"]["bindings"]  # one row per match
        assert (row["start"]["value"], row["end"]["value"]) == (start, end)
        assert {name: n_triples(row[name]) for name in ("house", "city", "fr1", "fr2")} == {
            name: bindings[name] for name in ("house", "city", "fr1", "fr2")
        }
        (flat,) = server.get(f"/queries/{query['id']}/results")["results"]["bindings"]
        graph = flat["match"]["value"]
        assert re.fullmatch(rf"urn:rsep:match:{query['id']}:[0-9a-f]{{32}}", graph)
        assert {name: n_triples(flat[name]) for name in bindings} == bindings

        store = SPARQLStore(server.base + "/sparql", returnFormat="json")
        assert {str(var): value.n3() for var, value in store.query(SOLUTION % graph)} == bindings
        metadata = list(store.query(METADATA % query["iri"]))
        times = (rdflib.Literal(start, datatype=XSD_DATETIME), rdflib.Literal(end, datatype=XSD_DATETIME))
        assert {(str(row[0]), row[1], row[2]) for row in metadata} == {(graph, *times)}
        assert {str(row[3]) for row in metadata} == {SG + name for name in ("p1", "w1", "w2", "s1")}
    finally:
        assert server.terminate() == 0
