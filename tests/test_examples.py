"""The examples/ folders, one per dialect at least: each folder's query is in the dialect its
manifest names, and `rsep run` over its files prints exactly its expected.jsonl; examples/README.md
shows the command this test runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsep.endpoint.cli import main
from rsep.grammar import DIALECTS, parse_event_query
from tests.support.paths import REPO

EXAMPLES = REPO / "examples"
FOLDERS = sorted(path for path in EXAMPLES.iterdir() if path.is_dir())


def manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text(encoding="utf-8"))


def argv(folder: Path) -> list[str]:
    """`rsep run`'s arguments for an example, relative to the repository."""
    found = manifest(folder)
    where = folder.relative_to(REPO).as_posix()
    args = ["run", f"{where}/query.rq"]
    args += [f"--stream {iri}={where}/{file}" for iri, file in found["streams"].items()]
    args += [
        f"--kb {f'{graph}=' if graph else ''}{where}/{file}" for graph, file in found.get("kb", {}).items()
    ]
    return args


def test_every_dialect_has_an_example() -> None:
    assert {manifest(folder)["dialect"] for folder in FOLDERS} == set(DIALECTS)


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda folder: folder.name)
def test_the_example_prints_its_expected_output(folder: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    found = manifest(folder)
    assert found["description"].strip() and found["title"].strip()
    text = (folder / "query.rq").read_text(encoding="utf-8")
    assert parse_event_query(text).dialect.name == found["dialect"]
    monkeypatch.chdir(REPO)
    command = " ".join(argv(folder))
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8").replace(" \\\n    ", " ")
    assert f".venv/bin/rsep {command}\n" in readme
    assert main([*command.split(), "--engine", "inprocess"]) == 0
    out = capsys.readouterr().out
    expected = (folder / "expected.jsonl").read_text(encoding="utf-8")
    assert [json.loads(line) for line in out.splitlines()] == [
        json.loads(line) for line in expected.splitlines()
    ]
