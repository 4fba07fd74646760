"""Blank nodes of EP-SPARQL CONSTRUCT rules: fresh per match and per rule. Two rules matching the
same events with the same mapping are two answers (SPARQL 1.1 §16.2.1), so their derived events
are two events with blank nodes of their own, not one event the Q-closure merges; a match that
the closure recomputes names its blank nodes as before (docs/semantics.md)."""

from __future__ import annotations

import json
from pathlib import Path

from rsep.endpoint.cli import main

EX = "http://ex.org/"
EVENTS = f"""@prefix : <{EX}> .
@prefix prov: <http://www.w3.org/ns/prov#> .
:e1 {{ :c1 :on :r1 . }} :e1 prov:generatedAtTime 1 .
:e2 {{ :c2 :on :r1 . }} :e2 prov:generatedAtTime 2 .
"""
RULE = f"PREFIX : <{EX}> CONSTRUCT {{ [] :alarm ?c }} WHERE {{ ?c :on ?r }}"
ALARMS = f"PREFIX : <{EX}> SELECT ?b ?c WHERE {{ ?b :alarm ?c }}"


def write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def alarms(capsys, folder: Path, rules: int) -> list[tuple[float, str, str]]:
    events = write(folder, "s.trig", EVENTS)
    query = write(folder, "q.rq", ALARMS)
    args = ["run", query, "--stream", f"{EX}s={events}", "--engine", "inprocess"]
    for index in range(rules):
        args += ["--rule", write(folder, f"rule{index}.rq", RULE)]
    assert main(args) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return sorted((line["end"], line["bindings"]["c"], line["bindings"]["b"]) for line in lines)


def test_two_rules_with_one_template_derive_two_blank_nodes_per_match(tmp_path, capsys):
    found = alarms(capsys, tmp_path, rules=2)
    assert [(end, car) for end, car, _ in found] == [
        (1, f"<{EX}c1>"),
        (1, f"<{EX}c1>"),
        (2, f"<{EX}c2>"),
        (2, f"<{EX}c2>"),
    ]
    assert len({node for *_, node in found}) == 4
    assert all(node.startswith("_:m") for *_, node in found)
