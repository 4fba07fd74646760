"""A continuous window CONSTRUCT names its blank nodes after the query id and the evaluation time:
stepped in random batches and restored from random checkpoints (an evaluation made after the
checkpoint comes out again), the runner emits exactly the replay's graphs, blank nodes included."""

from __future__ import annotations

import random

from rsep.plugin.graph_events import GraphEvent
from rsep.plugin.store.kb import KnowledgeBase
from rsep.plugin.store.windows import OxigraphWindows
from rsep.plugin.windows.window_functions import to_ticks
from rsep.plugin.windows.window_replay import WindowReplay
from tests.service.window_runs import QUERY_ID, S1, graph_of, plan_of, random_log, run_in_batches

CONSTRUCT = f"CONSTRUCT {{ [] <urn:saw> ?s }} FROM STREAM <{S1}> [RANGE 3s STEP 1s] WHERE {{ ?s ?p ?o }}"


def test_batches_and_restores_give_the_replays_blank_nodes():
    plan = plan_of(CONSTRUCT, "c-sparql")
    rng = random.Random(11)
    kb = KnowledgeBase()
    checked = 0
    for _ in range(8):
        records = random_log(rng, plan.streams)
        found, runner = run_in_batches(plan, lambda: OxigraphWindows(plan, kb), records, rng)
        streams: dict[str, list[GraphEvent]] = {}
        for record in records:
            streams.setdefault(record.event.stream, []).append(record.event)
        done = runner.state.done
        t0 = min((record.event.time.seconds for record in records), default=None)  # of any stream
        start = None if t0 is None else to_ticks(t0)
        replayed = WindowReplay(plan, OxigraphWindows(plan, kb), QUERY_ID).run(streams, t0=start)
        assert list(found.values()) == [
            graph_of(plan, e) for e in replayed if done is not None and e.time <= done
        ]
        nodes = [t.split(" ", 1)[0] for g in found.values() for t in g.triples]
        assert all(node.startswith("_:m") for node in nodes)
        assert len(nodes) == len(set(nodes))  # one per solution of every evaluation
        checked += len(nodes)
    assert checked > 20
