"""The entailment fixtures, each with exact expected matches under RDFS and without entailment:
subclass, subproperty, domain and range inference in SPAseq, EP-SPARQL and C-SPARQL queries (the
EP-SPARQL paper's Test 3 shape, whose knowledge base changes between events: test_routes.py)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from rsep.endpoint.run_command import run
from rsep.plugin.compile.entailment import Mechanism
from tests.entailment.support import (
    CASES,
    NFA_CASES,
    compiled,
    expected,
    manifest,
    request,
    run_case,
    run_plan,
)


@pytest.mark.parametrize("case", CASES)
def test_matches_under_rdfs_are_exactly_the_expected_ones(case):
    assert run_case(case, "rdfs") == expected(case, "rdfs"), manifest(case)["description"]


@pytest.mark.parametrize("case", CASES)
def test_without_entailment_the_graphs_are_matched_as_stored(case):
    assert run_case(case, None) == expected(case, None)


@pytest.mark.parametrize("case", NFA_CASES)
def test_per_batch_property_paths_give_the_same_matches_as_lookups(case):
    lookup = run_plan(case, compiled(case, Mechanism.LOOKUP))
    assert lookup == expected(case, "rdfs")
    assert run_plan(case, compiled(case, Mechanism.PATHS)) == lookup


def test_cqels_window_blocks_are_entailed_too(tmp_path):
    query = tmp_path / "query.rq"
    query.write_text(
        "PREFIX : <http://example.org/org#>\n"
        "SELECT ?x WHERE { STREAM <http://example.org/org/people> [RANGE 10s] { ?x a :Person } }\n",
        encoding="utf-8",
    )
    req = replace(request("spaseq-subclass", "rdfs"), query_file=query)
    records = [json.loads(line) for line in run(req).jsonl().splitlines()]
    last = max(r["end"] for r in records)
    assert sorted(r["bindings"]["x"] for r in records if r["end"] == last) == [
        f"<http://example.org/org#{name}>" for name in ("ann", "cat", "dan", "eve", "gus", "hal")
    ]
