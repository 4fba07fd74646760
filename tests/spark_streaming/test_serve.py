"""`rsep serve --engine spark` stopped in the middle of a stream, by SIGKILL
(the JVM goes with it) or by SIGTERM (a clean stop): after the restart on the
same data folder every match is in the store once and pushed once."""

from __future__ import annotations

import time

import pytest

from tests.support.events import QUERIES, synthetic_events
from tests.support.servers import Listener, detection_times, expected, post_events
from tests.support.spark_server import SparkServer, wait_caught_up

pytestmark = [pytest.mark.spark, pytest.mark.e2e]


def received(listener: Listener) -> list[str]:
    out = []
    while not listener.records.empty():
        out.append(listener.records.get_nowait()["graph"])
    return out


def stop(server: SparkServer, how: str) -> None:
    if how == "sigkill":
        server.kill()
    else:
        assert server.terminate() == 0  # the queries catch up with the log, then stop


@pytest.mark.parametrize("how", ["sigkill", "sigterm"])
def test_a_spark_server_stopped_mid_stream_resumes_exactly_once(tmp_path, how):
    data, log = tmp_path / "data", tmp_path / "server.log"
    events = synthetic_events(40)
    server = SparkServer(data, log)
    try:
        status, query = server.request(
            "POST", "/queries", QUERIES["any"].encode(), "application/sparql-query"
        )
        assert status == 201
        first_listener = Listener(server, query["id"])
        post_events(server, events[:20])
        first = expected(query["id"], events[:20])
        pushed = {r["graph"] for r in first_listener.take(len(first), timeout=90)}
        assert pushed == first
        assert server.spark_batches(query["id"]) > 0  # Spark ran it, not the in-process fallback
        post_events(server, events[20:26])  # acknowledged: each must yield its matches
        time.sleep(0.4)  # likely in the middle of a micro-batch
    finally:
        stop(server, how)
    time.sleep(0.5)  # the listener's thread reads what came before the stream ended
    pushed_first = [*pushed, *received(first_listener)]
    assert len(pushed_first) == len(set(pushed_first))
    if how == "sigterm":  # a clean stop catches up with the log first
        assert set(pushed_first) == expected(query["id"], events[:26])

    server = SparkServer(data, log)
    try:
        assert [q["id"] for q in server.get("/queries")["queries"]] == [query["id"]]
        listener = Listener(server, query["id"])
        post_events(server, events[26:])
        everything = expected(query["id"], events)
        read = wait_caught_up(server, query["id"])
        assert detection_times(server, query["iri"]) == dict.fromkeys(everything, 1)  # each written once
        assert read["matches"] == len(everything)
        only_after = everything - expected(query["id"], events[:26])  # need an event posted after the restart
        time.sleep(1.0)  # a push not yet read would show now
        later = received(listener)
        assert len(later) == len(set(later)) and not set(later) & set(pushed_first)  # nothing pushed twice
        assert only_after <= set(later) <= everything
        assert set(pushed_first) | set(later) <= everything
    finally:
        assert server.terminate() == 0  # SIGTERM: shutdown hooks stop the engine and the event streams
