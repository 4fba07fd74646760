"""The W3C manifests that describe HTTP exchanges (the SPARQL 1.1 Protocol and Graph Store
Protocol suites, in the shared data folder: ../shared/data/w3c-sparql11), read into tests and run
against a Flask test client; shared by test_w3c_protocol.py and test_graph_store_protocol.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pyoxigraph as ox
import pytest
from flask.testing import FlaskClient

from tests.support.shared_data import shared_params

MF = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
HT = "http://www.w3.org/2011/http#"
CNT = "http://www.w3.org/2011/content#"
HTS = "http://www.w3.org/2011/http-statusCodes#"
UT = "http://www.w3.org/2009/sparql/tests/test-update#"

STATUS_NAMES = {"OK": 200, "Created": 201, "NoContent": 204, "NotFound": 404}


@dataclass(frozen=True)
class Expected:
    """An ht:Response: allowed statuses (exact codes or classes like 2), and what else to check."""

    statuses: frozenset[int]
    classes: frozenset[int]
    boolean: bool | None = None
    format: str | None = None
    content_type: str | None = None
    body: str | None = None
    location: str | None = None

    def allows(self, status: int) -> bool:
        return status in self.statuses or status // 100 in self.classes


@dataclass(frozen=True)
class Exchange:
    """One ht:Request of a test and the response it expects."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes | None
    expected: Expected


@dataclass(frozen=True)
class ProtocolTest:
    """A manifest entry: its name, the graphs to load first (file, graph IRI), its exchanges."""

    name: str
    title: str
    exchanges: list[Exchange]
    graph_data: list[tuple[Path, str | None]] = field(default_factory=list)
    requires: frozenset[str] = frozenset()


class Manifest:
    """A Turtle manifest as a subject-predicate index (ht: descriptions are trees of blank nodes)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.index: dict[tuple[Any, str], list[Any]] = {}
        for quad in ox.parse(path=str(path), format=ox.RdfFormat.TURTLE, base_iri=path.as_uri()):
            self.index.setdefault((quad.subject, quad.predicate.value), []).append(quad.object)

    def values(self, subject: Any, predicate: str) -> list[Any]:
        return self.index.get((subject, predicate), [])

    def value(self, subject: Any, predicate: str) -> Any:
        found = self.values(subject, predicate)
        return found[0] if found else None

    def items(self, head: Any) -> list[Any]:
        out = []
        while head is not None and head.value != RDF + "nil":
            out.append(self.value(head, RDF + "first"))
            head = self.value(head, RDF + "rest")
        return out

    def subject(self) -> ox.NamedNode:
        """The manifest itself (`<>` in the file)."""
        return ox.NamedNode(self.path.as_uri())

    def entries(self) -> list[Any]:
        return self.items(self.value(self.subject(), MF + "entries"))

    def includes(self) -> list[Path]:
        return [
            Path(unquote(urlparse(item.value).path))
            for item in self.items(self.value(self.subject(), MF + "include"))
        ]

    def protocol_test(self, entry: Any) -> ProtocolTest:
        action = self.value(entry, MF + "action")
        exchanges = [self._exchange(request) for request in self.items(self.value(action, HT + "requests"))]
        graph_data = [
            (
                Path(unquote(urlparse(self.value(data, UT + "graph").value).path)),
                self.text(data, RDFS + "label"),
            )
            for data in self.values(entry, UT + "graphData")
        ]
        requires = frozenset(r.value.rsplit("#", 1)[-1] for r in self.values(entry, MF + "requires"))
        title = self.value(entry, MF + "name").value
        return ProtocolTest(entry.value.rsplit("#", 1)[-1], title, exchanges, graph_data, requires)

    def _exchange(self, request: Any) -> Exchange:
        headers = self._headers(request)
        body = self.value(request, HT + "body")
        data = None
        if body is not None:
            encoding = self.value(body, CNT + "characterEncoding")
            data = self.value(body, CNT + "chars").value.encode(encoding.value if encoding else "utf-8")
        return Exchange(
            self.value(request, HT + "methodName").value,
            self.value(request, HT + "absolutePath").value,
            headers,
            data,
            self._expected(self.value(request, HT + "resp")),
        )

    def _headers(self, message: Any) -> dict[str, str]:
        return {
            self.value(header, HT + "fieldName").value.lower(): self.value(header, HT + "fieldValue").value
            for header in self.items(self.value(message, HT + "headers"))
        }

    def _expected(self, response: Any) -> Expected:
        names = [s.value.removeprefix(HTS) for s in self.values(response, MF + "expectedStatus")]
        classes = frozenset(int(n[len("StatusCode")]) for n in names if n.startswith("StatusCode"))
        statuses = frozenset(STATUS_NAMES[n] for n in names if not n.startswith("StatusCode"))
        boolean = self.text(response, MF + "expectedBoolean")
        body = self.value(response, HT + "body")
        return Expected(
            statuses,
            classes,
            boolean=None if boolean is None else boolean == "true",
            format=self.text(response, MF + "expectedFormat"),
            content_type=self._headers(response).get("content-type"),
            body=None if body is None else self.text(body, CNT + "chars"),
            location=self.text(response, MF + "expectedLocation"),
        )

    def text(self, subject: Any, predicate: str) -> str | None:
        found = self.value(subject, predicate)
        return None if found is None else str(found.value)


def manifest_tests(*parts: str) -> list[Any]:
    """pytest parameters, one per entry of the manifest at `parts` of the shared data folder, in
    manifest order; without the folder, one that skips with the reason (tests/support/shared_data.py)."""

    def tests(path: Path) -> list[Any]:
        manifest = Manifest(path)
        return [pytest.param(test, id=test.name) for test in map(manifest.protocol_test, manifest.entries())]

    return shared_params(*parts, params=tests)


# --------------------------------------------------------------------------- running exchanges

RESULT_TYPES = {"application/sparql-results+json", "application/sparql-results+xml"}
TABULAR_TYPES = RESULT_TYPES | {"text/csv", "text/tab-separated-values"}


def run_exchanges(client: FlaskClient, test: ProtocolTest, *, prefix: tuple[str, str]) -> None:
    """Send a test's requests in order and check each response; `prefix` maps the manifest's
    path prefix to ours. A `mf:expectedLocation` names a variable that later requests use."""
    variables: dict[str, str] = {}
    for number, exchange in enumerate(test.exchanges, 1):
        path, body = exchange.path, exchange.body
        for name, value in variables.items():
            path = path.replace(name, value)
            body = None if body is None else body.replace(name.encode(), value.encode())
        path = prefix[1] + path.removeprefix(prefix[0])
        response = client.open(path, method=exchange.method, headers=exchange.headers, data=body)
        where = f"{test.name}, request {number}: {exchange.method} {path}"
        check_response(response, exchange.expected, where)
        if exchange.expected.location is not None:
            variables[exchange.expected.location] = response.headers["Location"]


def check_response(response: Any, expected: Expected, where: str) -> None:
    text = response.get_data(as_text=True)
    assert expected.allows(response.status_code), f"{where}: status {response.status_code}: {text}"
    media_type = response.mimetype
    if expected.format == "boolean":
        assert media_type in RESULT_TYPES, f"{where}: {media_type} is not a boolean results format"
    elif expected.format == "tabular":
        assert media_type in TABULAR_TYPES, f"{where}: {media_type} is not a tabular results format"
        ox.parse_query_results(response.data, ox.QueryResultsFormat.from_media_type(media_type))
    elif expected.format == "RDF":
        rdf_format = ox.RdfFormat.from_media_type(media_type)
        assert rdf_format is not None, f"{where}: {media_type} is not an RDF format"
        list(ox.parse(response.data, rdf_format))
    if expected.boolean is not None:
        results = ox.parse_query_results(response.data, ox.QueryResultsFormat.from_media_type(media_type))
        assert isinstance(results, ox.QueryBoolean), f"{where}: not a boolean result: {text}"
        assert bool(results) is expected.boolean, f"{where}: ASK gave {bool(results)}"
    if expected.content_type is not None:
        assert same_content_type(response.headers["Content-Type"], expected.content_type), where
    if expected.body is not None:
        got = canonical_graph(response.data, media_type)
        assert got == canonical_graph(expected.body.encode(), expected.content_type or media_type), where


def same_content_type(got: str, expected: str) -> bool:
    """Equal media types and parameters, ignoring case and spaces."""

    def parts(value: str) -> list[str]:
        return sorted(part.strip().lower().replace(" ", "") for part in value.split(";"))

    return parts(got) == parts(expected)


def canonical_graph(data: bytes, media_type: str) -> set[ox.Quad]:
    """A graph with canonical blank-node labels, so that isomorphic graphs compare equal."""
    rdf_format = ox.RdfFormat.from_media_type(media_type.split(";")[0])
    assert rdf_format is not None, media_type
    dataset = ox.Dataset(ox.parse(data, rdf_format))
    dataset.canonicalize(ox.CanonicalizationAlgorithm.UNSTABLE)
    return set(dataset)
