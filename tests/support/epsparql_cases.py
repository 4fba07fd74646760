"""The EP-SPARQL conformance fixtures (tests/fixtures/epsparql), read for tests/epsparql and for the
Spark run of tests/conformance: each folder holds `query.rq`, the event files, optional `rules/*.rq`
and knowledge base, `manifest.json` (streams, rules, kb, policy, description, and `xfail` with the
reason when rsep disagrees with the definitions) and `expected.jsonl`."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from rsep.endpoint.run_command import KbFile, RunRequest, StreamFile
from rsep.plugin.algebra.events import ConsumptionPolicy
from tests.support.paths import FIXTURES as ALL_FIXTURES

FIXTURES = ALL_FIXTURES / "epsparql"


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


def load(folder: Path) -> Case:
    return Case(folder, json.loads((folder / "manifest.json").read_text(encoding="utf-8")))
