"""EP-SPARQL §6 Test 3's shape (tests/fixtures/entailment/routes): a delivery agent's route is
recomputed when its next connection is blocked, as a transitive closure (`m:link*`) over the
background road graph. The closure is a background part of the GPM: evaluated once per
knowledge-base version, not per event, and the answer follows the road graph current when the
traffic event is processed."""

from __future__ import annotations

import json
from dataclasses import replace

import pyoxigraph as ox

from rsep.endpoint.replay import load_kb, read_streams
from rsep.plugin.compile.plan import compile_query
from rsep.plugin.replay import Replay, number_events
from rsep.plugin.results import Projector, jsonl_line
from rsep.plugin.store.gpm import GpmEvaluator, KnowledgeBase
from tests.entailment.support import case_query, expected, request

M = "http://example.org/milan#"
ROADS = "http://example.org/milan/roads"


class CountingKb(KnowledgeBase):
    """Counts how often the road graph's closure is evaluated."""

    def __init__(self, kb: KnowledgeBase) -> None:
        super().__init__(kb.store)
        self.version = kb.version
        self.closures = 0

    def select(self, query: str) -> list[dict[str, str]]:
        self.closures += f"{M}link>*" in query
        return super().select(query)


def replay_one_by_one(kb: KnowledgeBase, before: str = "", update=None) -> list[dict[str, object]]:
    """Each event in its own batch (as the endpoint processes events as they arrive); `update`
    runs before the event named `before`."""
    plan = compile_query(replace(case_query("routes"), entailment="rdfs"))
    events = number_events(read_streams(plan, request("routes", "rdfs").streams))
    replay = Replay(plan, GpmEvaluator(plan.gpms, kb), batch_size=1)
    matches = []
    for numbered in events:
        if numbered.event.name == f"<{M}{before}>" and update is not None:
            update()
        matches.extend(replay.process_batch([numbered]))
    solutions = Projector.for_plan(plan).solutions(matches, [n.event for n in events])
    return [json.loads(jsonl_line(s)) for s in solutions]


def expected_lines() -> list[dict[str, object]]:
    return [json.loads(line) for line in expected("routes", "rdfs").splitlines()]


def test_the_closure_over_the_road_graph_is_evaluated_once_per_knowledge_base_version():
    kb = CountingKb(load_kb(request("routes", "rdfs").kb))
    assert replay_one_by_one(kb) == expected_lines()
    assert kb.closures == 1  # 7 events, 7 batches, one version


def test_a_road_closed_in_the_knowledge_base_changes_the_recomputed_route():
    kb = CountingKb(load_kb(request("routes", "rdfs").kb))

    def close_cairoli_cadorna() -> None:
        cairoli, link, cadorna = (ox.NamedNode(M + n) for n in ("Cairoli", "link", "Cadorna"))
        kb.store.remove(ox.Quad(cairoli, link, cadorna, ox.NamedNode(ROADS)))
        kb.touch()

    found = replay_one_by_one(kb, before="t4", update=close_cairoli_cadorna)
    # van3 (Duomo -> Missori blocked at 10:08, t4) had its only other route through Cairoli: none
    # after the update; van7's route was recomputed at 10:05, before it.
    assert found == [line for line in expected_lines() if "van3" not in json.dumps(line)]
    assert len(found) == 1
    assert kb.closures == 2
