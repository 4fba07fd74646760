"""The Spark stage under RDFS entailment: lookups travel in the broadcast background snapshot,
and the matches are those of the in-process replay (the fixtures' expected files)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rsep.endpoint.run_command import load_kb, read_streams
from rsep.plugin.compile.query_plan import compile_query
from rsep.plugin.numbering import number_events
from rsep.plugin.results import Projector, jsonl_line
from tests.entailment.support import case_query, expected, request

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("case", ["spaseq-subclass", "epsparql-seq"])
def test_spark_finds_the_entailed_matches(spark, case):
    from rsep.plugin.spark.stage import SparkReplay

    plan = compile_query(replace(case_query(case), entailment="rdfs"))
    req = request(case, "rdfs")
    events = number_events(read_streams(plan, req.streams))
    matches = SparkReplay(plan, load_kb(req.kb), spark, batch_size=2).run(events)
    solutions = Projector.for_plan(plan).solutions(matches, [n.event for n in events])
    assert "".join(jsonl_line(s) + "\n" for s in solutions) == expected(case, "rdfs")
