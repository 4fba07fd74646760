"""CQELS-CEP's Example 4 (subway delays in the last 10 minutes, a named window over a stream and
a static FROM graph), its running example end to end (Examples 1-9: SEQ with a negated last
element over the window, a nested path over the subway map; and the same query over a longer
stream) and CQELS-QL's window kinds ([RANGE d SLIDE d], [NOW], [ALL]) as fixtures
(tests/cqels/fixtures) run through `rsep run`'s path, compared exactly to hand-derived output."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.run_cases import check_case, load_cases

CASES = load_cases(Path(__file__).resolve().parent / "fixtures")


def test_the_fixtures_are_there():
    assert {case.name for case in CASES} >= {
        "cep-example4-delays",
        "cep-example9-subway",
        "cep-example9-arrival",
        "range-slide",
        "now-and-all",
    }


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_fixture(case):
    check_case(case)
