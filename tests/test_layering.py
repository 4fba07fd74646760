"""Imports point one way (../shared/STYLE.md): endpoint/ may import grammar/ and
plugin/; grammar/ imports only plugin.algebra; plugin/ never imports lark,
Flask or grammar; only plugin/spark imports pyspark and only plugin/store
imports pyoxigraph."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def sources(folder: str) -> list[Path]:
    return sorted((REPO / folder).rglob("*.py"))


def violations(folder: str, allowed: callable) -> list[str]:
    return [
        f"{path.relative_to(REPO)} imports {name}"
        for path in sources(folder)
        for name in sorted(imports(path))
        if not allowed(path.relative_to(REPO).as_posix(), name)
    ]


def _root(name: str) -> str:
    return name.split(".")[0]


def test_plugin_never_imports_the_edges():
    def allowed(path: str, name: str) -> bool:
        if name.startswith(("rsep.grammar", "rsep.endpoint")) or _root(name) in ("lark", "flask"):
            return False
        if _root(name) == "pyspark":
            return path.startswith("plugin/spark/")
        if _root(name) == "pyoxigraph":
            return path.startswith("plugin/store/")
        return True

    assert violations("plugin", allowed) == []


def test_grammar_imports_only_the_algebra_of_the_core():
    def allowed(path: str, name: str) -> bool:
        if name.startswith("rsep.plugin"):
            return name.startswith(("rsep.plugin.algebra", "rsep.plugin.errors"))
        return _root(name) not in ("pyspark", "pyoxigraph", "flask") and not name.startswith("rsep.endpoint")

    assert violations("grammar", allowed) == []


@pytest.mark.parametrize("folder", ["plugin", "grammar", "endpoint"])
def test_folders_are_importable_under_the_rsep_namespace(folder):
    assert (REPO / "rsep" / folder).resolve() == (REPO / folder).resolve()
