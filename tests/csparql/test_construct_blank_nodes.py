"""Blank nodes of C-SPARQL and CQELS CONSTRUCT results through `rsep run`: fresh per solution and
per evaluation (SPARQL 1.1 §16.2.1, each evaluation is an answer of its own), also when two
evaluation times reuse one evaluation's solutions because their windows hold the same content;
named deterministically, so one run gives the same output every time (docs/semantics.md, "Blank
nodes of window CONSTRUCT results")."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

from rsep.endpoint.cli import main
from rsep.plugin.windows.window_functions import TICKS_PER_SECOND

RSEP = Path(sys.executable).parent / "rsep"
EX = "http://ex.org/"
OUT = f"{EX}out"
INTEGER = "<http://www.w3.org/2001/XMLSchema#integer>"
EVENTS = f"""@prefix : <{EX}> .
@prefix prov: <http://www.w3.org/ns/prov#> .
:e0 {{ :m :mark 0 . }} :e0 prov:generatedAtTime -1 .
:e1 {{ :c1 :on :r1 . }} :e1 prov:generatedAtTime 1 .
:e2 {{ :c2 :on :r1 . }} :e2 prov:generatedAtTime 2 .
:e3 {{ :c3 :on :r2 . }} :e3 prov:generatedAtTime 10 .
"""
"""The mark at -1 is the run's t0 (issue 16: windows open at or after it), so the window (-1, 1]
is evaluated. Closes of [RANGE 2s STEP 1s] that hold a car: 1 (c1), 2 (c1, c2), 3 (c2), 10 (c3), 11 (c3):
the windows of 10 and 11 hold the same content, so the runtime reuses the solutions of 10 at 11."""
SAW = f"""PREFIX : <{EX}>
CONSTRUCT {{ [] :saw ?c }}
FROM STREAM <{EX}s> [RANGE 2s STEP 1s]
WHERE {{ ?c :on ?r }}"""
PRODUCER = f"REGISTER STREAM <{OUT}> AS\n{SAW}"
COUNTER = f"""PREFIX : <{EX}>
SELECT (COUNT(DISTINCT ?b) AS ?n) (COUNT(*) AS ?all)
FROM STREAM <{OUT}> [RANGE 20s STEP 20s]
WHERE {{ ?b :saw ?c }}"""
BLANK = re.compile(r"_:[A-Za-z0-9]+")


def write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def rsep(capsys, folder: Path, query: str, *args: str) -> list[dict]:
    events = write(folder, "s.trig", EVENTS)
    path = write(folder, "query.rq", query)
    assert main(["run", path, "--stream", f"{EX}s={events}", "--engine", "inprocess", *args]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def label(scope: str, seconds: int, solution: int, template_label: str = "b0") -> str:
    """The documented name of a template blank node: a hash of (scope, "construct", t' in ticks)."""
    key = json.dumps([scope, "construct", seconds * TICKS_PER_SECOND])
    return f"_:m{hashlib.sha256(key.encode()).hexdigest()[:16]}s{solution}t{template_label}"


def saw(node: str, car: str) -> str:
    return f"{node} <{EX}saw> <{EX}{car}> ."


def test_a_consumer_of_a_register_stream_counts_a_blank_node_per_solution_of_every_evaluation(
    tmp_path, capsys
):
    """The audit's case: 6 solutions over the 5 closes (c1, c1 c2, c2, c3, c3), 6 blank nodes."""
    rule = write(tmp_path, "producer.rq", PRODUCER)
    lines = rsep(capsys, tmp_path, COUNTER, "--rule", rule)
    six = f'"6"^^{INTEGER}'
    assert lines == [{"start": 0, "end": 20, "bindings": {"n": six, "all": six}}]


def test_two_closes_over_the_same_window_content_name_different_blank_nodes(tmp_path, capsys):
    lines = rsep(capsys, tmp_path, SAW)
    assert lines == [
        {"start": -1, "end": 1, "triples": [saw(label("", 1, 0), "c1")]},
        {"start": 0, "end": 2, "triples": [saw(label("", 2, 0), "c1"), saw(label("", 2, 1), "c2")]},
        {"start": 1, "end": 3, "triples": [saw(label("", 3, 0), "c2")]},
        {"start": 8, "end": 10, "triples": [saw(label("", 10, 0), "c3")]},
        {"start": 9, "end": 11, "triples": [saw(label("", 11, 0), "c3")]},
    ]
    assert label("", 10, 0) != label("", 11, 0)


def test_a_register_stream_names_its_blank_nodes_after_the_stream_it_produces(tmp_path, capsys):
    """Two rules producing two streams never share a blank node, even with one template."""
    lines = rsep(capsys, tmp_path, PRODUCER)
    assert lines[-1] == {"start": 9, "end": 11, "triples": [saw(label(OUT, 11, 0), "c3")]}


def test_every_solution_of_a_template_without_variables_constructs_its_own_blank_node(tmp_path, capsys):
    """Two solutions at close 2 with nothing bound in the template: two triples, not one."""
    query = SAW.replace("[] :saw ?c", "[] :saw :something")
    lines = rsep(capsys, tmp_path, query)
    assert lines[1] == {
        "start": 0,
        "end": 2,
        "triples": [saw(label("", 2, 0), "something"), saw(label("", 2, 1), "something")],
    }


def test_a_construct_grouped_by_a_variable_instantiates_the_grouping_variables_only(tmp_path, capsys):
    """After GROUP BY ?r only ?r is in scope (SPARQL 1.1 §18.2.4.1): one blank node per road, and
    the triple with ?c is left out; Oxigraph itself refuses a CONSTRUCT with GROUP BY."""
    query = SAW.replace("[] :saw ?c", "[] :road ?r ; :saw ?c") + " GROUP BY ?r"
    lines = rsep(capsys, tmp_path, query)
    road = f"<{EX}road>"
    assert [line["triples"] for line in lines] == [
        [f"{label('', t, 0)} {road} <{EX}{r}> ."]
        for t, r in [(1, "r1"), (2, "r1"), (3, "r1"), (10, "r2"), (11, "r2")]
    ]


def test_cqels_constructs_fresh_blank_nodes_per_evaluation(tmp_path, capsys):
    """Content-change reporting at 1, 2 and 10: c1 is in the window at 1 and at 2 (with c2)."""
    query = f"""PREFIX : <{EX}>
CONSTRUCT {{ [] :saw ?c }}
WHERE {{ STREAM <{EX}s> [RANGE 5s] {{ ?c :on ?r }} }}"""
    lines = rsep(capsys, tmp_path, query)
    assert [line["triples"] for line in lines] == [
        [saw(label("", 1, 0), "c1")],
        [saw(label("", 2, 0), "c1"), saw(label("", 2, 1), "c2")],
        [saw(label("", 10, 0), "c3")],
    ]


def test_the_same_run_twice_prints_the_same_blank_nodes(tmp_path):
    """Two processes (the installed script), jsonl and trig: byte for byte the same output."""
    events = write(tmp_path, "s.trig", EVENTS)
    producer = write(tmp_path, "producer.rq", PRODUCER)
    outputs = []
    for _ in range(2):
        for output_format in ("jsonl", "trig"):
            args = [str(RSEP), "run", producer, "--stream", f"{EX}s={events}", "--engine", "inprocess"]
            result = subprocess.run(
                [*args, "--format", output_format], capture_output=True, text=True, timeout=300, check=False
            )
            assert result.returncode == 0, result.stderr
            outputs.append(result.stdout)
    assert outputs[:2] == outputs[2:]
    assert len(set(BLANK.findall(outputs[0]))) == len(set(BLANK.findall(outputs[1]))) == 6
