"""Cases run through `rsep run`'s code path (endpoint.replay.run, in-process) and compared exactly
to hand-derived output: the fixture folders of tests/csparql and tests/cqels, and queries written
inline by a test (`run_inline`).

A fixture folder holds `query.rq`, one TriG file per stream, optional static data, a
`manifest.json` (`description` of how the expected output was derived, `streams`: stream IRI ->
file, `kb`: graph IRI -> file, the empty string for the default graph, optional `t0`: when a
window query was registered, as `rsep run --t0`) and `expected.jsonl`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from rsep.endpoint.run_command import KbFile, RunRequest, StreamFile, run
from rsep.plugin.graph_events import Timestamp


@dataclass(frozen=True)
class Case:
    folder: Path
    description: str
    streams: dict[str, str]
    kb: dict[str, str]
    t0: str | None = None

    @property
    def name(self) -> str:
        return self.folder.name

    def request(self) -> RunRequest:
        return RunRequest(
            self.folder / "query.rq",
            [StreamFile(iri, self.folder / file) for iri, file in self.streams.items()],
            [KbFile(self.folder / file, graph or None) for graph, file in self.kb.items()],
            engine="inprocess",
            t0=None if self.t0 is None else Timestamp.parse(self.t0),
        )

    def expected(self) -> list[dict[str, object]]:
        return parse_jsonl((self.folder / "expected.jsonl").read_text(encoding="utf-8"))


def load_cases(root: Path) -> list[Case]:
    cases = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        streams, kb, t0 = manifest["streams"], manifest.get("kb", {}), manifest.get("t0")
        cases.append(Case(folder, manifest["description"], streams, kb, t0))
    return cases


def parse_jsonl(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def output(request: RunRequest) -> list[dict[str, object]]:
    return parse_jsonl(run(request).jsonl())


def check_case(case: Case) -> None:
    assert case.description.strip()
    assert output(case.request()) == case.expected(), case.description


PREAMBLE = "@prefix : <http://example.org/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"


def run_inline(
    folder: Path,
    query: str,
    streams: dict[str, str],
    kb: dict[str, str] | None = None,
    entailment: str | None = None,
    t0: str | None = None,
) -> list[dict[str, object]]:
    """Write a query, TriG streams (the prefixes `:` = http://example.org/ and `prov:` are declared)
    and Turtle KB graphs into `folder`, run them like `rsep run --engine inprocess [--entailment
    ...] [--t0 ...]`, return the lines."""
    (folder / "query.rq").write_text(query, encoding="utf-8")
    files = []
    for index, (iri, text) in enumerate(streams.items()):
        path = folder / f"stream{index}.trig"
        path.write_text(PREAMBLE + text, encoding="utf-8")
        files.append(StreamFile(iri, path))
    kb_files = []
    for index, (graph, text) in enumerate((kb or {}).items()):
        path = folder / f"kb{index}.ttl"
        path.write_text(PREAMBLE + text, encoding="utf-8")
        kb_files.append(KbFile(path, graph or None))
    registered = None if t0 is None else Timestamp.parse(t0)
    return output(
        RunRequest(
            folder / "query.rq", files, kb_files, engine="inprocess", entailment=entailment, t0=registered
        )
    )
