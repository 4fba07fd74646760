"""The W3C SPARQL 1.1 syntax suites, one test per manifest entry, and the round trip of every
positive query: parse -> to_sparql -> our parser gives an equal tree, and Oxigraph accepts the text.

The suites live in the shared data folder, ../shared/data/w3c-sparql11: without it these tests skip,
saying why (tests/support/shared_data.py).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pyoxigraph
import pytest

from rsep.grammar.parser import SparqlSyntaxError, parse_query, parse_update
from rsep.plugin.algebra.serialize import to_sparql
from rsep.plugin.algebra.sparql import IRI, BNode, ServicePattern
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


def run_syntax_test(entry: Entry) -> None:
    assert entry.kind in SYNTAX_KINDS, f"{entry.name}: unexpected test type {entry.kind}"
    parse = parse_update if "Update" in entry.kind else parse_query
    arguments = {"source": entry.action.name, "base_iri": entry.action.as_uri()}
    if entry.kind.startswith("Positive"):
        parse(entry.text(), **arguments)
    else:
        with pytest.raises(SparqlSyntaxError):
            parse(entry.text(), **arguments)


@pytest.mark.parametrize("entry", entry_params("syntax-query"))
def test_syntax_query(entry: Entry) -> None:
    run_syntax_test(entry)


@pytest.mark.parametrize("entry", entry_params("syntax-update-1"))
def test_syntax_update_1(entry: Entry) -> None:
    run_syntax_test(entry)


@pytest.mark.parametrize("entry", entry_params("syntax-update-2"))
def test_syntax_update_2(entry: Entry) -> None:
    run_syntax_test(entry)


@pytest.mark.parametrize("entry", entry_params("syntax-fed"))
def test_syntax_fed(entry: Entry) -> None:
    run_syntax_test(entry)


# --------------------------------------------------------------------------- round trip


def normalise(value: Any, labels: dict[str, str] | None = None) -> Any:
    """The tree with blank-node labels renamed in order of first appearance (generated labels are
    not part of a query's meaning)."""
    labels = {} if labels is None else labels
    if isinstance(value, BNode):
        return BNode(labels.setdefault(value.label, f"n{len(labels)}"))
    if isinstance(value, tuple):
        return tuple(normalise(item, labels) for item in value)
    if is_dataclass(value) and not isinstance(value, type):
        return replace(value, **{f.name: normalise(getattr(value, f.name), labels) for f in fields(value)})
    return value


def service_names(value: Any) -> list[Any]:
    """The names of the SERVICE calls in a tree."""
    found = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, ServicePattern):
            found.append(item.name)
        if isinstance(item, tuple):
            stack.extend(item)
        elif is_dataclass(item) and not isinstance(item, type):
            stack.extend(getattr(item, f.name) for f in fields(item))
    return found


def check_round_trip(entry: Entry) -> None:
    query = parse_query(entry.text(), source=entry.action.name, base_iri=entry.action.as_uri())
    printed = to_sparql(query)
    assert normalise(parse_query(printed, source=f"printed {entry.action.name}")) == normalise(query), printed
    remote = [
        n for n in service_names(query) if isinstance(n, IRI) and n.value.startswith(("http:", "https:"))
    ]
    assert not remote, (
        f"{entry.name} would call {remote} when Oxigraph evaluates it; check it by parsing only"
    )
    try:
        pyoxigraph.Store().query(printed)  # results are not read: SERVICE (file: IRIs here) is never called
    except SyntaxError as error:
        pytest.fail(f"Oxigraph rejects the printed query: {error}\n{printed}")
    except (RuntimeError, OSError):
        pass  # evaluation errors (e.g. an unknown extension function) are not syntax errors


POSITIVE_QUERY = {"PositiveSyntaxTest11"}


@pytest.mark.parametrize("entry", entry_params("syntax-query", POSITIVE_QUERY))
def test_round_trip_syntax_query(entry: Entry) -> None:
    check_round_trip(entry)


@pytest.mark.parametrize("entry", entry_params("syntax-fed", POSITIVE_QUERY))
def test_round_trip_syntax_fed(entry: Entry) -> None:
    check_round_trip(entry)
