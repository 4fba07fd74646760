"""What orders events that share a timestamp (docs/semantics.md, "Events and time"): under a
consuming policy it decides which of them a match uses. Events are ordered by their place in
the merged input (the `--stream` files' order for EP-SPARQL, then their position in the file),
and the inputs of one event by their bindings; both engines follow it."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsep.endpoint.run_command import RunRequest, StreamFile, run
from rsep.plugin import ConsumptionPolicy

PREFIX = "@prefix : <http://example.org/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
QUERY = "PREFIX : <http://example.org/>\nSELECT ?a WHERE { { ?a :p ?x } SEQ { ?b :q ?y } }\n"
A1 = ":g1 { :a1 :p 1 } :g1 prov:generatedAtTime 1 .\n"
A2 = ":g2 { :a2 :p 1 } :g2 prov:generatedAtTime 1 .\n"
B = ":g3 { :b :q 1 } :g3 prov:generatedAtTime 2 .\n"
ENGINES = ["inprocess", pytest.param("spark", marks=pytest.mark.spark)]


def first_a(folder: Path, engine: str, *files: str) -> list[str]:
    """?a of the chronological policy's matches over the files (one --stream each, in order)."""
    (folder / "q.rq").write_text(QUERY, encoding="utf-8")
    streams = []
    for index, text in enumerate(files):
        path = folder / f"e{index}.trig"
        path.write_text(PREFIX + text, encoding="utf-8")
        streams.append(StreamFile(f"http://example.org/s{index}", path))
    request = RunRequest(
        folder / "q.rq", streams, engine=engine, master="local[2]", policy=ConsumptionPolicy.CHRONOLOGICAL
    )
    result = run(request)
    return [s.bindings["a"].removeprefix("<http://example.org/").rstrip(">") for s in result.solutions]  # type: ignore[union-attr]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_earlier_event_in_the_file_is_the_older_one(tmp_path, engine, request):
    if engine == "spark":
        request.getfixturevalue("spark")
    assert first_a(tmp_path, engine, A1 + A2 + B) == ["a1"]
    assert first_a(tmp_path, engine, A2 + A1 + B) == ["a2"]


@pytest.mark.parametrize("engine", ENGINES)
def test_files_tie_in_the_order_they_are_given(tmp_path, engine, request):
    if engine == "spark":
        request.getfixturevalue("spark")
    assert first_a(tmp_path, engine, A1, A2 + B) == ["a1"]
    assert first_a(tmp_path, engine, A2, A1 + B) == ["a2"]


@pytest.mark.parametrize("engine", ENGINES)
def test_inputs_of_one_event_are_ordered_by_their_bindings(tmp_path, engine, request):
    if engine == "spark":
        request.getfixturevalue("spark")
    one = ":g1 { :a2 :p 1 . :a1 :p 1 } :g1 prov:generatedAtTime 1 .\n"
    other = ":g1 { :a1 :p 1 . :a2 :p 1 } :g1 prov:generatedAtTime 1 .\n"
    assert first_a(tmp_path, engine, one + B) == first_a(tmp_path, engine, other + B) == ["a1"]
