"""The tests' own layout (CONTRIBUTING.md, "Checks"): helpers that more than one test package uses
live in `tests/support/`, fixtures they share in `tests/conftest.py`, and a package's own helpers
in its own modules (`support.py`, `patterns.py`, ...). So a module of the tests imports, from
`tests`, only `tests.support` and modules of its own package; never a `conftest.py` (pytest loads
those itself) and never a test module (`test_*.py`). The shared data folder (../shared/data) is
looked up in one place, tests/support/shared_data.py. Each rule is checked over the tree and over
a known violation, as tests/test_layering.py does.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from tests.support.paths import REPO

TESTS = REPO / "tests"


def imported(source: str, filename: str = "<source>") -> set[str]:
    """Every module or name a source imports, anywhere in it, as a dotted name (`from a import b`
    gives `a.b`: b may be a module); a relative import keeps its leading dots; the strings of a
    `pytest_plugins` assignment count as imports."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            names.update(f"{module}.{alias.name}" if module else alias.name for alias in node.names)
        elif isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "pytest_plugins" for target in node.targets
        ):
            names.update(
                item.value
                for item in ast.walk(node.value)
                if isinstance(item, ast.Constant) and isinstance(item.value, str)
            )
    return names


def strings(source: str, filename: str = "<source>") -> set[str]:
    """The string constants of a source (docstrings included)."""
    return {
        node.value
        for node in ast.walk(ast.parse(source, filename))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


def sources() -> dict[str, str]:
    """Path (relative to the repository, posix) -> source of every module of tests/."""
    return {path.relative_to(REPO).as_posix(): path.read_text() for path in sorted(TESTS.rglob("*.py"))}


def package_of(path: str) -> str | None:
    """`tests/<package>/...` -> <package>; None for the modules directly in tests/."""
    parts = path.split("/")
    return parts[1] if len(parts) > 2 else None


@dataclass(frozen=True)
class Rule:
    name: str
    broken_by: Callable[[str, str], set[str]]
    """(module path, source) -> what in it breaks the rule."""
    violation: tuple[str, str]
    """A module path and a source this rule must refuse."""


def _up_to(name: str, offending: Callable[[str], bool]) -> str | None:
    """`name` up to its first offending part (`tests.spark.conftest.knowledge_base` ->
    `tests.spark.conftest`), or None."""
    parts = name.split(".")
    for index, part in enumerate(parts):
        if offending(part):
            return ".".join(parts[: index + 1])
    return None


def _found(path: str, source: str, offending: Callable[[str], bool], root: str = "tests") -> set[str]:
    names = (_up_to(name, offending) for name in imported(source, path) if name.split(".")[0] == root)
    return {name for name in names if name is not None}


def _conftest_imports(path: str, source: str) -> set[str]:
    return _found(path, source, lambda part: part == "conftest")


def _test_module_imports(path: str, source: str) -> set[str]:
    return _found(path, source, lambda part: part.startswith("test_"))


def _other_package_imports(path: str, source: str) -> set[str]:
    allowed = {"support", package_of(path)}
    found = set()
    for name in imported(source, path):
        parts = name.split(".")
        if parts[0] == "tests" and (len(parts) == 1 or parts[1] not in allowed):
            found.add(".".join(parts[:2]))
    return found


def _relative_imports(path: str, source: str) -> set[str]:
    return {name for name in imported(source, path) if name.startswith(".")}


SHARED_DATA_LOOKUPS = {
    "tests/support/shared_data.py",
    "tests/test_shared_data.py",
    "tests/test_test_layout.py",
}
"""The helper, its test, and this module (which names what it looks for)."""


def _finds_the_shared_data(text: str) -> bool:
    """A string that names the folder or its override, as a lookup writes it (not a docstring that
    mentions ../shared/data)."""
    return text in ("shared", "RSEP_SHARED_DATA") or re.fullmatch(r"(.*/)?shared/data/?", text) is not None


def _own_shared_data_lookups(path: str, source: str) -> set[str]:
    if path in SHARED_DATA_LOOKUPS:
        return set()
    return {text for text in strings(source, path) if _finds_the_shared_data(text)}


RULES = [
    Rule("no module imports a conftest.py", _conftest_imports,
         ("tests/spark_streaming/test_x.py", "from tests.spark.conftest import knowledge_base\n")),
    Rule("no module imports a test module", _test_module_imports,
         ("tests/cqels/test_x.py", "def f():\n    from tests.cqels.test_cep import lines\n")),
    Rule("a package imports tests.support and its own modules only", _other_package_imports,
         ("tests/spark_streaming/test_x.py", "from tests.service.support import QUERIES\n")),
    Rule("no relative imports", _relative_imports, ("tests/nfa/test_x.py", "from .patterns import run\n")),
    Rule("only tests/support/shared_data.py finds the shared data folder", _own_shared_data_lookups,
         ("tests/csparql/x.py", 'DATA = REPO.parent / "shared" / "data"\n')),
]  # fmt: skip


def violations(rule: Rule, modules: dict[str, str]) -> list[str]:
    return [
        f"{path}: {found}"
        for path, source in modules.items()
        for found in sorted(rule.broken_by(path, source))
    ]


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.name)
def test_the_tests_keep_the_rule(rule: Rule) -> None:
    assert violations(rule, sources()) == []


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.name)
def test_the_rule_catches_its_violation(rule: Rule) -> None:
    path, source = rule.violation
    assert len(violations(rule, {path: source})) == 1


@pytest.mark.parametrize(
    ("source", "names"),
    [
        ("from tests.support import events\n", {"tests.support.events"}),
        ("import tests.cqels.support as s\n", {"tests.cqels.support"}),
        ('pytest_plugins = ["tests.endpoint_streaming.conftest"]\n', {"tests.endpoint_streaming.conftest"}),
    ],
    ids=["from-import", "import-as", "pytest-plugins"],
)
def test_every_way_of_importing_is_seen(source: str, names: set[str]) -> None:
    assert imported(source) == names


@pytest.mark.parametrize(
    "source",
    ['ROOT = Path(os.environ["RSEP_SHARED_DATA"])\n', 'ROOT = REPO.parent / "shared/data"\n'],
    ids=["environment", "path"],
)
def test_other_ways_of_finding_the_shared_data_are_seen(source: str) -> None:
    assert _own_shared_data_lookups("tests/x.py", source) != set()
    assert _own_shared_data_lookups("tests/x.py", '"""Reads ../shared/data/spaseq."""\n') == set()


def test_a_package_may_import_its_own_helpers_and_the_support_package() -> None:
    source = "from tests.nfa.patterns import run\nfrom tests.support.events import event\n"
    assert _other_package_imports("tests/nfa/test_x.py", source) == set()
    assert _other_package_imports("tests/support/x.py", source) == {"tests.nfa"}
    assert _other_package_imports("tests/test_x.py", "from tests import paths\n") == {"tests.paths"}
