"""The W3C SPARQL 1.1 syntax suites, one test per manifest entry, and the round trip of every
positive query: parse -> to_sparql -> our parser gives an equal tree, and Oxigraph accepts the text.

The suites live in the repository's sibling folder `shared/data/w3c-sparql11` (RSEP_SHARED_DATA
points at another `data` folder). Missing data fails the tests rather than skipping them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, is_dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pyoxigraph
import pytest

from rsep.grammar.parser import SparqlSyntaxError, parse_query, parse_update
from rsep.plugin.algebra.serialize import to_sparql
from rsep.plugin.algebra.sparql import IRI, BNode, ServicePattern

MF = "http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
SYNTAX_KINDS = {
    "PositiveSyntaxTest11",
    "NegativeSyntaxTest11",
    "PositiveUpdateSyntaxTest11",
    "NegativeUpdateSyntaxTest11",
}


def w3c_data_dir() -> Path:
    override = os.environ.get("RSEP_SHARED_DATA")
    data = Path(override) if override else Path(__file__).resolve().parents[2].parent / "shared" / "data"
    return data / "w3c-sparql11"


@dataclass(frozen=True)
class Entry:
    """One mf:entries item of a manifest: its local name, test type and action file."""

    name: str
    kind: str
    action: Path

    def text(self) -> str:
        return self.action.read_text(encoding="utf-8")


def manifest_entries(suite: str) -> list[Entry]:
    """The entries of `<suite>/manifest.ttl` in manifest order (the rdf:List of mf:entries)."""
    manifest = w3c_data_dir() / suite / "manifest.ttl"
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
    """pytest parameters for a suite, id = the entry's local name; one failing parameter if the
    data is missing, so that a misplaced checkout cannot pass by collecting nothing."""
    if not (w3c_data_dir() / suite / "manifest.ttl").is_file():
        return [pytest.param(None, id=f"{suite}-data-missing")]
    return [pytest.param(e, id=e.name) for e in manifest_entries(suite) if kinds is None or e.kind in kinds]


def require(entry: Entry | None) -> Entry:
    if entry is None:
        pytest.fail(
            f"W3C SPARQL 1.1 test suites not found under {w3c_data_dir()}: clone the repository next to "
            "the `shared` folder or set RSEP_SHARED_DATA to the shared `data` directory"
        )
    return entry


def run_syntax_test(entry: Entry | None) -> None:
    entry = require(entry)
    assert entry.kind in SYNTAX_KINDS, f"{entry.name}: unexpected test type {entry.kind}"
    parse = parse_update if "Update" in entry.kind else parse_query
    arguments = {"source": entry.action.name, "base_iri": entry.action.as_uri()}
    if entry.kind.startswith("Positive"):
        parse(entry.text(), **arguments)
    else:
        with pytest.raises(SparqlSyntaxError):
            parse(entry.text(), **arguments)


@pytest.mark.parametrize("entry", entry_params("syntax-query"))
def test_syntax_query(entry: Entry | None) -> None:
    run_syntax_test(entry)


@pytest.mark.parametrize("entry", entry_params("syntax-update-1"))
def test_syntax_update_1(entry: Entry | None) -> None:
    run_syntax_test(entry)


@pytest.mark.parametrize("entry", entry_params("syntax-update-2"))
def test_syntax_update_2(entry: Entry | None) -> None:
    run_syntax_test(entry)


@pytest.mark.parametrize("entry", entry_params("syntax-fed"))
def test_syntax_fed(entry: Entry | None) -> None:
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


def check_round_trip(entry: Entry | None) -> None:
    entry = require(entry)
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
def test_round_trip_syntax_query(entry: Entry | None) -> None:
    check_round_trip(entry)


@pytest.mark.parametrize("entry", entry_params("syntax-fed", POSITIVE_QUERY))
def test_round_trip_syntax_fed(entry: Entry | None) -> None:
    check_round_trip(entry)
