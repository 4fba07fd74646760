"""Imports point one way (../shared/STYLE.md, CONTRIBUTING.md):

    rsep.endpoint  ->  rsep.compiler  ->  rsep.grammar  ->  rsep.plugin.algebra, rsep.plugin.errors
         |                  |
         +------------------+-->  rsep.plugin (the facade)  ->  the core's modules

Only `plugin/spark` imports pyspark (and py4j), only `plugin/store` imports pyoxigraph, only the
grammar imports lark, and the edges (`endpoint/`, `rsep/compiler.py`) reach the core through the
facade `rsep.plugin`, never its modules. Each rule below is checked over the whole tree, and over
a known violation, so that a rule that no longer catches anything fails too.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

import rsep.plugin as facade

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("plugin", "grammar", "endpoint", "rsep")


def imports(source: str, filename: str = "<source>") -> set[str]:
    """Every module a source imports, anywhere in it (functions included); a relative import is
    kept as written, with its leading dots."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
    return names


def sources() -> dict[str, str]:
    """Path (relative, posix) -> source of every module of rsep (rsep/ holds links to the three
    folders, so only its own files count there)."""
    found = {}
    for folder in FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            if folder == "rsep" and path.resolve().parent != (REPO / "rsep").resolve():
                continue
            found[path.relative_to(REPO).as_posix()] = path.read_text()
    return found


def _root(name: str) -> str:
    return name.split(".")[0]


@dataclass(frozen=True)
class Rule:
    name: str
    allowed: Callable[[str, str], bool]
    """(module path, imported name) -> is the import allowed?"""
    violation: tuple[str, str]
    """A module path and an import this rule must refuse."""


def _core_stays_inside(path: str, name: str) -> bool:
    if not path.startswith("plugin/"):
        return True
    return not (
        name.startswith(("rsep.grammar", "rsep.endpoint", "rsep.compiler"))
        or _root(name) in ("lark", "flask", "werkzeug")
    )


def _grammar_reads_only_the_algebra(path: str, name: str) -> bool:
    if not path.startswith("grammar/"):
        return True
    if name.startswith("rsep."):
        return name.startswith(("rsep.grammar", "rsep.plugin.algebra", "rsep.plugin.errors"))
    return _root(name) not in ("flask", "werkzeug")


def _only_spark_imports_pyspark(path: str, name: str) -> bool:
    return _root(name) not in ("pyspark", "py4j") or path.startswith("plugin/spark/")


def _only_the_store_imports_oxigraph(path: str, name: str) -> bool:
    return _root(name) != "pyoxigraph" or path.startswith("plugin/store/")


def _only_the_grammar_imports_lark(path: str, name: str) -> bool:
    return _root(name) != "lark" or path.startswith("grammar/")


def _edges_use_the_facade(path: str, name: str) -> bool:
    if not (path.startswith("endpoint/") or path == "rsep/compiler.py"):
        return True
    return not name.startswith("rsep.plugin.")


def _no_relative_imports(path: str, name: str) -> bool:
    return not name.startswith(".")


def _compiler_sits_above_grammar_and_core(path: str, name: str) -> bool:
    if path.startswith(("plugin/", "grammar/")):
        return not name.startswith("rsep.compiler")
    return True


RULES = [
    Rule("the core never imports the edges, lark or Flask", _core_stays_inside,
         ("plugin/nfa/x.py", "rsep.grammar")),
    Rule("the grammar reads only the algebra of the core", _grammar_reads_only_the_algebra,
         ("grammar/x.py", "rsep.plugin.store.kb")),
    Rule("only plugin/spark imports pyspark", _only_spark_imports_pyspark,
         ("endpoint/x.py", "pyspark.sql")),
    Rule("only plugin/store imports pyoxigraph", _only_the_store_imports_oxigraph,
         ("endpoint/streams.py", "pyoxigraph")),
    Rule("only the grammar imports lark", _only_the_grammar_imports_lark,
         ("endpoint/sparql_protocol.py", "lark")),
    Rule("the edges import the facade, not the core's modules", _edges_use_the_facade,
         ("endpoint/x.py", "rsep.plugin.store.kb")),
    Rule("no relative imports", _no_relative_imports, ("plugin/expr/x.py", ".values")),
    Rule("the compiler sits above the grammar and the core", _compiler_sits_above_grammar_and_core,
         ("plugin/x.py", "rsep.compiler")),
]  # fmt: skip


def violations(rule: Rule, modules: dict[str, str]) -> list[str]:
    return [
        f"{path} imports {name}"
        for path, source in modules.items()
        for name in sorted(imports(source, path))
        if not rule.allowed(path, name)
    ]


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.name)
def test_the_tree_keeps_the_rule(rule: Rule) -> None:
    assert violations(rule, sources()) == []


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.name)
def test_the_rule_catches_its_violation(rule: Rule) -> None:
    path, name = rule.violation
    statement = f"import {name}" if not name.startswith(".") else f"from {name} import x"
    assert violations(rule, {path: f"def f():\n    {statement}\n"}) == [f"{path} imports {name}"]


def test_the_facade_names_what_it_loads() -> None:
    """The facade's lazy table and the imports type checkers read agree, and every name loads."""
    tree = ast.parse((REPO / "plugin" / "__init__.py").read_text())
    checked = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.If)
        for statement in node.body
        if isinstance(statement, ast.ImportFrom)
        for alias in statement.names
    }
    assert checked == set(facade.__all__)
    for name in facade.__all__:
        assert getattr(facade, name) is not None


@pytest.mark.parametrize("folder", ["plugin", "grammar", "endpoint"])
def test_folders_are_importable_under_the_rsep_namespace(folder: str) -> None:
    assert (REPO / "rsep" / folder).resolve() == (REPO / folder).resolve()
