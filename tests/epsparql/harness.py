"""Running rsep in-process on queries and events built in memory (files in a
temporary folder, through the same `run(RunRequest(...))` the CLI uses)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

from rsep.endpoint.run_command import KbFile, RunRequest, StreamFile, run
from rsep.plugin.algebra.events import ConsumptionPolicy
from rsep.plugin.results import jsonl_line

STREAM = "http://example.org/stream"
PROV = "http://www.w3.org/ns/prov#generatedAtTime"
GRAPH = "<http://example.org/g"

Triple = tuple[str, str, str]
Event = tuple[float, Sequence[Triple]]
"""(timestamp in seconds, the triples of one named graph), terms in N-Triples."""


def trig(events: Sequence[Event]) -> str:
    lines = []
    for index, (time, triples) in enumerate(events):
        graph = f"<http://example.org/g{index}>"
        body = " ".join(f"{s} {p} {o} ." for s, p, o in triples)
        lines.append(f"{graph} {{ {body} }}")
        lines.append(f"{graph} <{PROV}> {_number(time)} .")
    return "\n".join(lines) + "\n"


def _number(time: float) -> str:
    return str(int(time)) if float(time).is_integer() else repr(float(time))


def run_rsep(
    query: str,
    events: Sequence[Event],
    *,
    rules: Sequence[str] = (),
    policy: str | None = None,
    kb: str | None = None,
) -> list[dict[str, object]]:
    """rsep's jsonl output, parsed, for `query` over one stream of `events`."""
    return [line for line, _ in run_rsep_with_inputs(query, events, rules=rules, policy=policy, kb=kb)]


def run_rsep_with_inputs(
    query: str,
    events: Sequence[Event],
    *,
    rules: Sequence[str] = (),
    policy: str | None = None,
    kb: str | None = None,
) -> list[tuple[dict[str, object], list[int]]]:
    """Each jsonl line with the positions in `events` of the events it used (derived events,
    which `rules` add, have none)."""
    with tempfile.TemporaryDirectory(prefix="rsep-epsparql-") as folder:
        root = Path(folder)
        (root / "query.rq").write_text(query, encoding="utf-8")
        (root / "events.trig").write_text(trig(events), encoding="utf-8")
        rule_files = []
        for index, rule in enumerate(rules):
            path = root / f"rule{index}.rq"
            path.write_text(rule, encoding="utf-8")
            rule_files.append(path)
        kb_files = []
        if kb is not None:
            (root / "kb.trig").write_text(kb, encoding="utf-8")
            kb_files.append(KbFile(root / "kb.trig"))
        request = RunRequest(
            root / "query.rq",
            [StreamFile(STREAM, root / "events.trig")],
            kb_files,
            policy=ConsumptionPolicy(policy) if policy else None,
            engine="inprocess",
            rules=rule_files,
        )
        result = run(request)
        lines = [json.loads(jsonl_line(solution)) for solution in result.solutions]  # type: ignore[union-attr]
        used = [
            [int(e.name[len(GRAPH) : -1]) for e in solution.events if e.name.startswith(GRAPH)]
            for solution in result.solutions  # type: ignore[union-attr]
        ]
    return list(zip(lines, used, strict=True))
