"""The shared data folder: public data of other projects that the tests read unchanged, kept
beside the repository as ../shared/data (its README.md says what each folder holds and under which
licence) and never copied into it; RSEP_SHARED_DATA names another copy.

It is looked up at test time, never at import or collection time: without the folder the tests
that read it skip, saying why, and every other test runs. A folder that is there but lacks a file
a test needs fails that test instead (a broken copy is not a missing one).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import REPO

OVERRIDE = "RSEP_SHARED_DATA"
MISSING_ID = "shared-data-missing"
"""The id of the one parameter `shared_params` gives without the folder."""
WHAT_IT_HOLDS = (
    "it holds public data of other projects that the tests read unchanged: CityBench's Aarhus streams "
    "(citybench/), the SPAseq reference engine's test inputs (spaseq/) and the W3C SPARQL 1.1 test "
    "suites (w3c-sparql11/); it is the `data` folder of the `shared` folder that sits next to the "
    f"repository (see its README.md): put the repository beside it, or set {OVERRIDE} to a copy"
)


def root() -> Path:
    override = os.environ.get(OVERRIDE)
    return Path(override) if override else REPO.parent / "shared" / "data"


def missing() -> str | None:
    """Why the shared data folder cannot be read, or None when it is there."""
    folder = root()
    if folder.is_dir():
        return None
    where = f"{folder} ({OVERRIDE})" if os.environ.get(OVERRIDE) else f"../shared/data ({folder})"
    return f"the shared data folder {where} is not there: {WHAT_IT_HOLDS}"


def shared_data(*parts: str) -> Path:
    """The path `parts` of the shared data folder. Call it in a test or fixture: without the folder
    it skips the test with the reason; a path missing from the folder fails the test."""
    reason = missing()
    if reason is not None:
        pytest.skip(reason)
    path = root().joinpath(*parts)
    if not path.exists():
        pytest.fail(
            f"{path} is not in the shared data folder {root()}: is that copy complete?", pytrace=False
        )
    return path


def shared_params(*parts: str, params: Callable[[Path], Iterable[Any]]) -> list[Any]:
    """pytest parameters made by `params` from the path `parts` of the shared data folder, for
    `pytest.mark.parametrize` at collection time. Without that path: one parameter with the id
    `shared-data-missing`, marked `shared_data(*parts)`, which tests/conftest.py turns into
    `shared_data(*parts)` when the test sets up (a skip with the reason, or a failure)."""
    if missing() is None and root().joinpath(*parts).exists():
        return list(params(root().joinpath(*parts)))
    return [pytest.param(None, id=MISSING_ID, marks=pytest.mark.shared_data(*parts))]
