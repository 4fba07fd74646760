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

import json
import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from rsep.endpoint.cli import main
from rsep.endpoint.run_command import KbFile, RunRequest, StreamFile, run
from rsep.plugin.algebra.events import ConsumptionPolicy

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "epsparql"


@dataclass(frozen=True)
class Case:
    folder: Path
    manifest: dict[str, object]

    @property
    def name(self) -> str:
        return self.folder.name

    @property
    def streams(self) -> dict[str, str]:
        return dict(self.manifest["streams"])  # type: ignore[call-overload]

    @property
    def rules(self) -> list[Path]:
        return [self.folder / rule for rule in self.manifest.get("rules", [])]  # type: ignore[attr-defined]

    @property
    def kb(self) -> list[KbFile]:
        files = []
        for item in self.manifest.get("kb", []):  # type: ignore[attr-defined]
            if isinstance(item, str):
                files.append(KbFile(self.folder / item))
            else:
                files.append(KbFile(self.folder / item["file"], item["graph"]))
        return files

    @property
    def error(self) -> str | None:
        """A regular expression for the one-line error `rsep run` must stop with."""
        return self.manifest.get("error")  # type: ignore[return-value]

    @property
    def policy(self) -> str | None:
        return self.manifest.get("policy")  # type: ignore[return-value]

    def request(self) -> RunRequest:
        return RunRequest(
            self.folder / "query.rq",
            [StreamFile(iri, self.folder / file) for iri, file in self.streams.items()],
            self.kb,
            policy=ConsumptionPolicy(self.policy) if self.policy else None,
            engine="inprocess",
            rules=self.rules,
        )

    def argv(self) -> list[str]:
        args = ["run", str(self.folder / "query.rq"), "--engine", "inprocess"]
        for iri, file in self.streams.items():
            args += ["--stream", f"{iri}={self.folder / file}"]
        for kb in self.kb:
            args += ["--kb", f"{kb.graph}={kb.path}" if kb.graph else str(kb.path)]
        for rule in self.rules:
            args += ["--rule", str(rule)]
        if self.policy:
            args += ["--policy", self.policy]
        return args

    def expected(self) -> list[dict[str, object]]:
        return parse_jsonl((self.folder / "expected.jsonl").read_text(encoding="utf-8"))


def parse_jsonl(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def multiset(lines: list[dict[str, object]]) -> Counter[str]:
    return Counter(json.dumps(line, sort_keys=True) for line in lines)


def seconds(value: object) -> float:
    if isinstance(value, int | float):
        return float(value)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def load(folder: Path) -> Case:
    return Case(folder, json.loads((folder / "manifest.json").read_text(encoding="utf-8")))


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
