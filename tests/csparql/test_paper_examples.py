"""C-SPARQL's worked examples (EDBT 2010: the cars turning from Palm Street into Oak Avenue with
timestamp(), the per-district aggregation), RSEP-QL's Fig. 1 read by C-SPARQL, a CONSTRUCT
stream over a tumbling window and a count window, as fixtures (tests/csparql/fixtures) run
through `rsep run`'s path and compared exactly, order included, to outputs derived by hand (each
manifest says how)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.run_cases import check_case, load_cases

CASES = load_cases(Path(__file__).resolve().parent / "fixtures")


def test_the_fixtures_are_there():
    assert {case.name for case in CASES} >= {
        "cars-turning",
        "aggregates-per-district",
        "rsepql-fig1-timestamp",
    }


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_fixture(case):
    check_case(case)
