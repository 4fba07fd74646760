"""The parsers' speed-ups change no tree and no position.

`rsep.grammar.parser.build_parser` lets a `?rule` reduced from one child return that child without
lark's ExpandSingleChild and PropagatePositions wrappers. Every tree, token and position (the
`meta` that error messages and the algebra's source positions are read from, containers included)
must equal what lark's own parser builds: over the W3C syntax suites' positive queries and updates
and every dialect's example queries.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lark import Lark, Token, Tree

from rsep.grammar.dialect_spec import QUERY_START
from rsep.grammar.dialects import DIALECTS
from rsep.grammar.parser import _LOADER, SPARQL_GRAMMAR, build_parser, get_parser
from tests.support.query_corpora import Entry, entry_params, examples

META = (
    "empty",
    "line",
    "column",
    "start_pos",
    "end_line",
    "end_column",
    "end_pos",
    "container_line",
    "container_column",
    "container_start_pos",
    "container_end_line",
    "container_end_column",
    "container_end_pos",
)
TOKEN = ("type", "line", "column", "start_pos", "end_line", "end_column", "end_pos")
_reference: dict[tuple[str, str], Lark] = {}


def reference(grammar: str, start: str) -> Lark:
    """lark's parser of the grammar, reductions as lark makes them."""
    if (grammar, start) not in _reference:
        path, text = _LOADER(None, f"{grammar}.lark")
        _reference[grammar, start] = build_parser(text, start, name=path.path, pass_units=False)
    return _reference[grammar, start]


def differences(ours: Any, theirs: Any, where: str = "") -> list[str]:
    """Where two parse trees differ: shape, token text and kind, or any position."""
    if isinstance(theirs, Token):
        if not isinstance(ours, Token) or str(ours) != str(theirs):
            return [f"{where}: {ours!r} != {theirs!r}"]
        return [f"{where} {a}" for a in TOKEN if getattr(ours, a) != getattr(theirs, a)]
    if not isinstance(ours, Tree) or ours.data != theirs.data or len(ours.children) != len(theirs.children):
        return [f"{where}: {getattr(ours, 'data', ours)!r} != {theirs.data!r}"]
    found = [
        f"{where}/{theirs.data} meta.{a}"
        for a in META
        if getattr(ours.meta, a, None) != getattr(theirs.meta, a, None)
    ]
    for index, (mine, other) in enumerate(zip(ours.children, theirs.children, strict=True)):
        found += differences(mine, other, f"{where}/{theirs.data}[{index}]")
    return found


def assert_same_trees(grammar: str, start: str, text: str) -> None:
    ours = get_parser(grammar, start if grammar != SPARQL_GRAMMAR else (QUERY_START, "update_unit"))
    theirs = reference(grammar, start if grammar != SPARQL_GRAMMAR else (QUERY_START, "update_unit"))
    found = differences(ours.parse(text, start=start), theirs.parse(text, start=start))
    assert not found, found[:10]


def positive(suite: str) -> list[Any]:
    return [
        p
        for p in entry_params(suite)
        if not isinstance(p.values[0], Entry) or p.values[0].kind.startswith("Positive")
    ]


@pytest.mark.parametrize("entry", positive("syntax-query") + positive("syntax-update-1"))
def test_w3c_trees_and_positions_are_lark_s(entry: Entry) -> None:
    start = "update_unit" if "Update" in entry.kind else QUERY_START
    assert_same_trees(SPARQL_GRAMMAR, start, entry.text())


@pytest.mark.parametrize(("name", "path"), examples(), ids=lambda x: x.name if isinstance(x, Path) else x)
def test_dialect_trees_and_positions_are_lark_s(name: str, path: Path) -> None:
    assert_same_trees(DIALECTS[name].grammar, QUERY_START, path.read_text(encoding="utf-8"))


def test_the_comparison_sees_a_position_move() -> None:
    """The checks above compare something: the production parser takes the short path for most
    rules, and a container position moved deep in the tree is a difference."""
    starts = (QUERY_START, "update_unit")
    passing = [
        f
        for f in get_parser(SPARQL_GRAMMAR, starts)._callbacks.values()
        if getattr(f, "__name__", "") == "passing"
    ]
    assert len(passing) > 50
    text = "SELECT * WHERE { ?s ?p ?o FILTER (((?o > 1))) }"
    ours, theirs = (
        p.parse(text, start=QUERY_START)
        for p in (get_parser(SPARQL_GRAMMAR, starts), reference(SPARQL_GRAMMAR, starts))
    )
    assert not differences(ours, theirs)
    moved = next(t for t in ours.iter_subtrees() if t.data == "relational_expression")
    moved.meta.container_column += 1
    assert (
        differences(ours, theirs) == [next(d for d in differences(ours, theirs))]
        and "container_column" in differences(ours, theirs)[0]
    )
