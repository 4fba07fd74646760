"""Corpora of queries the grammar tests read: the W3C SPARQL 1.1 syntax suites' manifest entries
(in the shared data folder) and each dialect's example queries in the repository."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pyoxigraph
import pytest

from tests.support.paths import REPO
from tests.support.shared_data import shared_params

MF = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
SYNTAX_KINDS = {
    "PositiveSyntaxTest11",
    "NegativeSyntaxTest11",
    "PositiveUpdateSyntaxTest11",
    "NegativeUpdateSyntaxTest11",
}


@dataclass(frozen=True)
class Entry:
    """One mf:entries item of a manifest: its local name, test type and action file."""

    name: str
    kind: str
    action: Path

    def text(self) -> str:
        return self.action.read_text(encoding="utf-8")


def manifest_entries(manifest: Path) -> list[Entry]:
    """The entries of a suite's `manifest.ttl` in manifest order (the rdf:List of mf:entries)."""
    quads = pyoxigraph.parse(
        path=str(manifest), format=pyoxigraph.RdfFormat.TURTLE, base_iri=manifest.as_uri()
    )
    graph: dict[tuple[Any, str], Any] = {(q.subject, q.predicate.value): q.object for q in quads}
    head = next(obj for (_, predicate), obj in graph.items() if predicate == MF + "entries")
    entries = []
    while head.value != RDF + "nil":
        entry = graph[(head, RDF + "first")]
        action = Path(unquote(urlparse(graph[(entry, MF + "action")].value).path))
        kind = graph[(entry, RDF + "type")].value.rsplit("#", 1)[-1]
        entries.append(Entry(entry.value.rsplit("#", 1)[-1], kind, action))
        head = graph[(head, RDF + "rest")]
    return entries


def entry_params(suite: str, kinds: set[str] | None = None) -> list[Any]:
    """pytest parameters for a suite, id = the entry's local name; without the shared data folder,
    one parameter that skips, saying why."""
    return shared_params(
        "w3c-sparql11",
        suite,
        "manifest.ttl",
        params=lambda manifest: [
            pytest.param(e, id=e.name) for e in manifest_entries(manifest) if kinds is None or e.kind in kinds
        ],
    )


EXAMPLES = {
    "spaseq": [
        "tests/fixtures/spaseq/*/query.rq",
        "tests/fixtures/entailment/spaseq-*/query.rq",
        "tests/fixtures/entailment/routes/query.rq",
        "tests/fixtures/entailment/update/query.rq",
        "examples/smart-grid/query.rq",
    ],
    "ep-sparql": [
        "tests/fixtures/epsparql/*/query.rq",
        "tests/fixtures/epsparql/*/rules/*.rq",
        "tests/fixtures/entailment/epsparql-*/query.rq",
        "tests/fixtures/entailment/epsparql-*/rules/*.rq",
        "examples/ep-sparql-*/query.rq",
    ],
    "c-sparql": [
        "tests/csparql/fixtures/*/query.rq",
        "tests/fixtures/entailment/csparql-*/query.rq",
        "examples/c-sparql-*/query.rq",
    ],
    "cqels": [
        "tests/cqels/fixtures/*/query.rq",
        "tests/fixtures/entailment/cqels-*/query.rq",
        "examples/cqels-*/query.rq",
    ],
}
"""Where each dialect's example queries are, in the repository."""


def examples() -> list[tuple[str, Path]]:
    return [
        (name, path) for name, globs in EXAMPLES.items() for pattern in globs for path in REPO.glob(pattern)
    ]
