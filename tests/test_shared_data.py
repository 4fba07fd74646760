"""Without the shared data folder (../shared/data) the suite still collects, the tests that read the
folder skip saying why, and the others run (tests/support/shared_data.py); a copy that lacks a
file fails the test that needs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import shared_data as lookup
from tests.support.paths import REPO
from tests.support.shared_data import MISSING_ID, OVERRIDE, shared_data, shared_params

REASON = "is not there: it holds public data of other projects"


def pytest_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest in a subprocess, with RSEP_SHARED_DATA set to `folder`."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    environment = {**os.environ, OVERRIDE: str(folder)}
    return subprocess.run(command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=600)


def test_a_missing_folder_skips_with_what_it_holds_and_where_it_comes_from(monkeypatch, tmp_path):
    monkeypatch.setenv(OVERRIDE, str(tmp_path / "nowhere"))
    with pytest.raises(pytest.skip.Exception) as skipped:
        shared_data("citybench")
    reason = str(skipped.value)
    assert reason.startswith(f"the shared data folder {tmp_path / 'nowhere'} ({OVERRIDE}) {REASON}")
    assert all(folder in reason for folder in ("citybench/", "spaseq/", "w3c-sparql11/", "README.md"))


def test_the_default_place_is_the_repositorys_sibling_shared_data(monkeypatch, tmp_path):
    monkeypatch.delenv(OVERRIDE, raising=False)
    monkeypatch.setattr(lookup, "REPO", tmp_path / "rsep")
    assert lookup.root() == tmp_path / "shared" / "data"
    with pytest.raises(pytest.skip.Exception, match=r"^the shared data folder \.\./shared/data "):
        shared_data()


def test_a_present_folder_gives_the_path_and_fails_on_a_missing_file(monkeypatch, tmp_path):
    (tmp_path / "spaseq").mkdir()
    monkeypatch.setenv(OVERRIDE, str(tmp_path))
    assert shared_data("spaseq") == tmp_path / "spaseq"
    with pytest.raises(pytest.fail.Exception, match="is not in the shared data folder"):
        shared_data("spaseq", "kleeneplus")


def test_parameters_are_made_from_the_folder_or_stand_in_for_it(monkeypatch, tmp_path):
    (tmp_path / "suite").mkdir()
    monkeypatch.setenv(OVERRIDE, str(tmp_path))
    assert shared_params("suite", params=lambda path: [path.name]) == ["suite"]
    (missing,) = shared_params("other", params=lambda path: pytest.fail("not called without the path"))
    assert missing.id == MISSING_ID and missing.values == (None,)
    assert [(mark.name, mark.args) for mark in missing.marks] == [("shared_data", ("other",))]


def test_the_suite_collects_without_the_folder(tmp_path):
    done = pytest_in(tmp_path / "nowhere", "--collect-only", "-q")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"tests/csparql/test_citybench.py::test_every_citybench_query_parses_and_plans[{MISSING_ID}]" in (
        done.stdout
    )
    assert "error" not in done.stdout.splitlines()[-1]


def test_without_the_folder_its_readers_skip_saying_why_and_the_others_run(tmp_path):
    done = pytest_in(
        tmp_path / "nowhere", "-q", "-rs",
        "tests/csparql/test_citybench.py::test_all_nineteen_files_are_there",
        "tests/csparql/test_citybench.py::test_every_citybench_query_parses_and_plans",
        "tests/conformance/test_spaseq_reference.py::test_strict_contiguity",
        "tests/grammar/test_w3c_syntax.py::test_syntax_fed",
        "tests/test_layering.py::test_the_facade_names_what_it_loads",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.splitlines()[-1].startswith("1 passed, 4 skipped")
    assert f"({OVERRIDE}) {REASON}" in done.stdout
