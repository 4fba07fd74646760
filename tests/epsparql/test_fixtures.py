"""EP-SPARQL conformance fixtures: the paper's queries (1)-(6) and rule (4),
RSEP-QL's Fig. 1 under the three policies, the temporal operators, the time
functions, background knowledge and the Q-closure, each run through the real
pipeline and compared with an expected output derived by hand from the
definitions (each manifest says how).

Each folder of tests/fixtures/epsparql holds `query.rq`, the event files,
optional `rules/*.rq` and knowledge base, `manifest.json` (streams, rules, kb,
policy, description, and `xfail` with the reason when rsep disagrees with the
definitions) and `expected.jsonl`. Solutions are compared as multisets (the
semantics has no order among solutions); the order rsep prints them in is
checked separately (detection order: non-decreasing end).
"""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from rsep.endpoint.cli import main
from rsep.endpoint.run_command import run
from tests.support.epsparql_cases import FIXTURES, Case, load, multiset, parse_jsonl


def seconds(value: object) -> float:
    if isinstance(value, int | float):
        return float(value)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


CASES = [load(folder) for folder in sorted(FIXTURES.iterdir()) if (folder / "manifest.json").is_file()]


def params() -> list[object]:
    out = []
    for case in CASES:
        xfail = case.manifest.get("xfail")
        marks = [pytest.mark.xfail(strict=True, reason=str(xfail))] if xfail else []
        out.append(pytest.param(case, id=case.name, marks=marks))
    return out


def test_every_fixture_folder_is_complete():
    folders = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
    assert folders == [case.name for case in CASES]
    assert len(CASES) >= 20
    for case in CASES:
        assert (case.folder / "query.rq").is_file(), case.name
        assert (case.folder / "expected.jsonl").is_file(), case.name
        assert str(case.manifest["description"]).strip(), case.name
        for file in [*case.streams.values()]:
            assert (case.folder / file).is_file(), f"{case.name}: {file}"
        for path in [*case.rules, *(kb.path for kb in case.kb)]:
            assert path.is_file(), f"{case.name}: {path}"
        if case.error is None:
            assert case.expected(), f"{case.name}: a fixture should expect at least one solution"
        else:
            assert not case.expected(), f"{case.name}: a failing run prints nothing"


@pytest.mark.parametrize("case", params())
def test_fixture(case: Case):
    if case.error is not None:
        with pytest.raises(ValueError, match=case.error):
            run(case.request())
        return
    lines = parse_jsonl(run(case.request()).jsonl())  # type: ignore[union-attr]
    assert multiset(lines) == multiset(case.expected())
    ends = [seconds(line["end"]) for line in lines]
    assert ends == sorted(ends), "solutions are reported in detection order"


@pytest.mark.parametrize("case", params())
def test_fixture_through_the_cli(case: Case, capsys: pytest.CaptureFixture[str]):
    """The same through `rsep run` (argument parsing of --rule, --kb GRAPH=FILE, --policy)."""
    code = main(case.argv())
    out, err = capsys.readouterr()
    if case.error is not None:
        assert (code, out) == (2, "")
        assert err.count("\n") == 1 and re.fullmatch(case.error, err.rstrip("\n")), err
        return
    assert code == 0, err
    assert multiset(parse_jsonl(out)) == multiset(case.expected())
