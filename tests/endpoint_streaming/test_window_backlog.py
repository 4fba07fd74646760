"""A long gap between events makes every window close in it final at once: the real `rsep serve`
evaluates them a bounded number per step, in the background, so the other queries go on (one step
made all of them, and no other query moved until it was done: 200,000 closes took 5 GB and over
a minute), and a query's `lag` reaches 0 only once all of them are written."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.support.events import QUERIES, S1, event
from tests.support.servers import Server, http_exchange, post_events, until

GAP_STREAM = "urn:t:gap"
COUNT = f"""REGISTER QUERY gap AS SELECT (COUNT(?s) AS ?n)
FROM STREAM <{GAP_STREAM}> [RANGE 2s STEP 1s] WHERE {{ ?s ?p ?o }}"""
GAP = 20_000
"""Seconds between the two events of the window query's stream: as many closes."""


def _register(server: Server, text: str) -> str:
    status, body = http_exchange(server, "POST", "/queries", text.encode(), "application/sparql-query")
    assert status == 201, body
    return str(json.loads(body)["id"])


def test_a_long_gap_is_evaluated_in_the_background_while_other_queries_go_on(tmp_path: Path) -> None:
    server = Server(tmp_path / "data", tmp_path / "server.log")
    try:
        window, pattern = _register(server, COUNT), _register(server, QUERIES["any"])
        post_events(server, [event(1, "g1", GAP_STREAM), event(1 + GAP, "g2", GAP_STREAM)])
        post_events(server, [event(2 + GAP, "a1", S1, val=1), event(3 + GAP, "c1", S1, kind="c", val=2)])

        def progress(query_id: str) -> dict:
            return dict(server.get(f"/queries/{query_id}"))

        assert until(lambda: progress(pattern)["matches"] == 1, 120)
        behind = progress(window)
        assert behind["lag"] >= 1 and behind["matches"] < GAP // 2, behind  # far from done
        assert until(lambda: progress(window)["lag"] == 0, 600)
        done = progress(window)["matches"]
        assert done >= GAP
        time.sleep(1)
        assert progress(window)["matches"] == done  # lag 0: every final close was written
    finally:
        server.terminate()
