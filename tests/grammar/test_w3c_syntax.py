"""The W3C SPARQL 1.1 syntax suites, one test per manifest entry, and the round trip of every
positive query: parse -> to_sparql -> our parser gives an equal tree, and Oxigraph accepts the text.

The suites live in the shared data folder, ../shared/data/w3c-sparql11: without it these tests skip,
saying why (tests/support/shared_data.py).
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace
from typing import Any

import pyoxigraph
import pytest

from rsep.grammar.parser import SparqlSyntaxError, parse_query, parse_update
from rsep.plugin.algebra.serialize import to_sparql
from rsep.plugin.algebra.sparql import IRI, BNode, ServicePattern
from tests.support.query_corpora import SYNTAX_KINDS, Entry, entry_params


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
