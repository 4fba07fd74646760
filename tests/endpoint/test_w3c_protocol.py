"""The W3C SPARQL 1.1 Protocol tests (w3c-sparql11/protocol/manifest.ttl) against /sparql.

Each manifest entry describes HTTP exchanges (ht:Request with method, path, headers and body, and
the ht:Response expected: status class, result format, ASK value); each runs as it is written
against the Flask test client on a fresh store, with the manifest's `/sparql/` path as ours. The
graphs of `ut:graphData` are loaded first into the named graphs their labels give: Oxigraph reads
a default-graph-uri or named-graph-uri as a graph of the local store, never by dereferencing the
IRI, so that is where a test's remote documents have to be. All 34 entries apply to a query and
update service; none is skipped.
"""

from __future__ import annotations

import pyoxigraph as ox
import pytest
from flask import Flask
from flask.testing import FlaskClient

from rsep.endpoint.resources import resources
from tests.endpoint.w3c_manifests import ProtocolTest, manifest_tests, run_exchanges

MANIFEST = ("w3c-sparql11", "protocol", "manifest.ttl")
SKIPS: dict[str, str] = {}
"""Entries that cannot run here, with the reason (none today)."""


def load_graph_data(app: Flask, test: ProtocolTest) -> None:
    with app.app_context():
        store = resources().kb.store
        for path, graph in test.graph_data:
            assert graph is not None, f"{test.name}: ut:graphData without a label (graph IRI)"
            store.load(path=str(path), format=ox.RdfFormat.N_TRIPLES, to_graph=ox.NamedNode(graph))


@pytest.mark.parametrize("test", manifest_tests(*MANIFEST))
def test_w3c_protocol(app: Flask, client: FlaskClient, test: ProtocolTest) -> None:
    if test.name in SKIPS:
        pytest.skip(SKIPS[test.name])
    load_graph_data(app, test)
    run_exchanges(client, test, prefix=("/sparql/", "/sparql/"))


@pytest.mark.shared_data(*MANIFEST)
def test_manifest_is_read_whole() -> None:
    """A reader bug must not shrink the suite: the manifest lists 34 tests, each with requests."""
    tests = [param.values[0] for param in manifest_tests(*MANIFEST)]
    assert len(tests) == 34
    assert all(test is not None and test.exchanges for test in tests)
