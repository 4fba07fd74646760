"""A real `rsep serve` (waitress, in-process engine): Server-Sent Events
through waitress, and a SIGKILL or a SIGTERM in the middle of a stream: after
the restart every match is in the store once and pushed once."""

from __future__ import annotations

import random
import threading
import time

import pytest

from rsep.plugin.log import EventLog, LogRecord
from rsep.plugin.service.checkpoints import CheckpointStore
from rsep.plugin.service.runner import load_state
from rsep.plugin.vocabulary import WATERMARK_STREAM
from tests.support.events import OTHER, QUERIES, S1, S2, event, plan_of, reference, synthetic_events
from tests.support.servers import Listener, Server, detection_times, expected, post_events, rsep_command
from tests.support.smart_grid import SMART_GRID, SMART_GRID_STREAMS

pytestmark = pytest.mark.e2e


def test_sse_through_waitress_and_a_sigkill_in_the_middle(tmp_path):
    data, log = tmp_path / "data", tmp_path / "server.log"
    events = synthetic_events(40)
    server = Server(data, log)
    try:
        status, query = server.request(
            "POST", "/queries", QUERIES["any"].encode(), "application/sparql-query"
        )
        assert status == 201
        listener = Listener(server, query["id"])
        assert listener.response.status == 200
        assert listener.headers["Content-Type"] == "text/event-stream"
        assert (
            listener.headers["Cache-Control"] == "no-cache" and listener.headers["X-Accel-Buffering"] == "no"
        )
        post_events(server, events[:25])
        first = expected(query["id"], events[:25])
        pushed = {r["graph"] for r in listener.take(len(first))}
        assert pushed == first
    finally:
        server.kill()  # no shutdown hook, checkpoints possibly behind

    server = Server(data, log)
    try:
        assert [q["id"] for q in server.get("/queries")["queries"]] == [query["id"]]
        listener = Listener(server, query["id"])
        post_events(server, events[25:])
        everything = expected(query["id"], events)
        rest = {r["graph"] for r in listener.take(len(everything - first))}
        assert rest == everything - first
        time.sleep(1.5)  # a checkpoint interval: anything pushed twice would show now
        assert listener.records.empty()
        read = server.get(f"/queries/{query['id']}")
        assert (read["matches"], read["lag"], read["status"]) == (len(everything), 0, "running")
        assert detection_times(server, query["iri"]) == dict.fromkeys(everything, 1)  # each written once
    finally:
        assert server.terminate() == 0  # SIGTERM: the shutdown hook ends the open event stream


class Poster:
    """Posts events one request at a time on a thread until one fails (the server stopped)."""

    def __init__(self, server: Server, events) -> None:
        self.server, self.events, self.acknowledged = server, events, 0
        self.thread = threading.Thread(target=self._post, daemon=True)
        self.thread.start()

    def _post(self) -> None:
        for e in self.events:
            try:
                post_events(self.server, [e])
            except OSError:  # refused, reset or an HTTP error while the server stops
                return
            self.acknowledged += 1
            time.sleep(0.02)


def wait_caught_up(server: Server, query_id: str, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    while (read := server.get(f"/queries/{query_id}"))["lag"] > 0:
        assert time.monotonic() < deadline, read
        time.sleep(0.1)
    return read


def test_a_sigterm_in_the_middle_of_a_stream_checkpoints_and_the_restart_writes_each_match_once(tmp_path):
    """SIGTERM while events arrive: `rsep serve` exits 0 after its shutdown hook, which ends the
    open event stream and writes the final checkpoint (with --checkpoint-interval 3600 no other
    is written), at or past the position the query had reached. The restart resumes there, reads
    the rest of the log, and every match of the log's events and of the ones posted after is in
    the store with one detection time and is pushed at most once (a listener gets what is created
    while it is connected)."""
    data, log = tmp_path / "data", tmp_path / "server.log"
    events = synthetic_events(60)
    options = ("--engine", "inprocess", "--checkpoint-interval", "3600")
    server = Server(data, log, options=options)
    status, query = server.request("POST", "/queries", QUERIES["any"].encode(), "application/sparql-query")
    assert status == 201
    listener = Listener(server, query["id"])
    poster = Poster(server, events)
    deadline = time.monotonic() + 60
    while poster.acknowledged < 20:
        assert time.monotonic() < deadline and poster.thread.is_alive(), log.read_text()
        time.sleep(0.01)
    reached = server.get(f"/queries/{query['id']}")["position"]
    assert server.terminate() == 0
    poster.thread.join(timeout=60)
    assert 20 <= poster.acknowledged < len(events)  # stopped mid-stream
    listener.thread.join(timeout=30)
    assert not listener.thread.is_alive()  # the shutdown hook ended the event stream
    pushed_before = [r["graph"] for r in list(listener.records.queue)]
    snapshot = CheckpointStore(data / "checkpoints").load(query["id"])
    assert snapshot is not None and load_state(snapshot).position >= reached

    server = Server(data, log, options=options)
    try:
        listener = Listener(server, query["id"])
        logged = wait_caught_up(server, query["id"])["position"]  # the events the log kept
        assert poster.acknowledged <= logged <= poster.acknowledged + 1  # + one in flight at the stop
        post_events(server, events[logged:])
        read = wait_caught_up(server, query["id"])
        everything = expected(query["id"], events)
        assert read["matches"] == len(everything) and read["status"] == "running"
        assert detection_times(server, query["iri"]) == dict.fromkeys(everything, 1)
        time.sleep(1.0)  # let any second push arrive
        pushed_after = [r["graph"] for r in list(listener.records.queue)]
        pushed = pushed_before + pushed_after
        assert len(pushed) == len(set(pushed)) and set(pushed) <= everything
        # the listener was connected before these events came: their matches are all pushed
        assert set(pushed_after) >= everything - expected(query["id"], events[:logged])
    finally:
        assert server.terminate() == 0


def test_rsep_post_replays_files_into_a_running_endpoint_in_time_order(tmp_path):
    """The smart-grid files, posted as three streams by `rsep post` (merged by time, in
    requests of at most 2 events), give the match `rsep run` finds; posting them again is
    refused whole (older than what was accepted), and a broken file is refused before any
    request, with its position."""
    data, log = tmp_path / "data", tmp_path / "server.log"
    streams = [f"--stream={iri}={path}" for iri, path in SMART_GRID_STREAMS.items()]
    server = Server(data, log)
    try:
        query = (SMART_GRID / "query.rq").read_bytes()
        status, registered = server.request("POST", "/queries", query, "application/sparql-query")
        assert status == 201
        kb = (SMART_GRID / "kb.trig").read_bytes()
        assert server.request("POST", "/store", kb, "application/trig")[0] in (200, 201, 204)
        posted = rsep_command("post", server.base, *streams, "--batch", "2")
        assert posted.returncode == 0, posted.stderr
        assert posted.stderr.strip() == f"rsep: 8 events accepted by {server.base}"
        deadline = time.monotonic() + 30
        while server.get(f"/queries/{registered['id']}")["matches"] < 1:
            assert time.monotonic() < deadline, "no match"
            time.sleep(0.1)
        replayed = rsep_command("run", str(SMART_GRID / "query.rq"), "--engine", "inprocess",
                         *streams, "--kb", str(SMART_GRID / "kb.trig"))  # fmt: skip
        assert server.get(f"/queries/{registered['id']}")["matches"] == len(replayed.stdout.splitlines()) == 1

        again = rsep_command("post", server.base, *streams)
        assert again.returncode == 2 and again.stdout == ""
        assert "is older than the newest accepted event" in again.stderr
        assert "(0 events accepted before this request)" in again.stderr

        broken = tmp_path / "broken.trig"
        broken.write_text("<urn:g> { <urn:s> <urn:p> }\n")
        bad = rsep_command("post", server.base, f"--stream=urn:s={broken}")
        assert bad.returncode == 2 and bad.stderr.startswith(f"{broken}:1:")
        read = server.get(f"/queries/{registered['id']}")
        assert (read["position"], read["events"], read["matches"]) == (8, 8, 1)  # nothing more came in
    finally:
        assert server.terminate() == 0


def test_a_sigkill_while_events_are_held_for_reordering_loses_and_duplicates_nothing(tmp_path):
    """`--max-lateness 3`: events posted out of time order (each at most 3 after its time) by a
    client that a SIGKILL interrupts. What the killed server acknowledged is durable: the log's
    events and the journal's held ones are the acknowledged arrivals (and perhaps the one in
    flight), each once. After the restart the rest is posted; every event reaches the log exactly
    once, in time order (ties in arrival order), and the query finds the matches of that sorted
    stream, each written once."""
    data, log = tmp_path / "data", tmp_path / "server.log"
    events = synthetic_events(60)
    rng = random.Random(3)
    delayed = sorted((e.time.seconds + rng.uniform(0, 3), i) for i, e in enumerate(events))
    arrival = [events[i] for _, i in delayed]
    assert arrival != events
    options = ("--engine", "inprocess", "--max-lateness", "3")
    server = Server(data, log, options=options)
    status, query = server.request("POST", "/queries", QUERIES["any"].encode(), "application/sparql-query")
    assert status == 201
    poster = Poster(server, arrival)
    deadline = time.monotonic() + 60
    while poster.acknowledged < 25:
        assert time.monotonic() < deadline and poster.thread.is_alive(), log.read_text()
        time.sleep(0.01)
    server.kill()
    poster.thread.join(timeout=60)
    acknowledged = poster.acknowledged

    durable = _durable(data)
    assert len(durable) == len(set(durable))
    assert [e.name for e in arrival[:acknowledged]] == durable[:acknowledged]
    assert len(durable) <= acknowledged + 1  # + the one in flight at the kill
    assert any(e.stream != WATERMARK_STREAM for e in _held(data))  # the kill hit held events

    server = Server(data, log, options=options)
    try:
        post_events(server, arrival[len(durable) :])
        far = events[-1].time.seconds + 100
        post_events(
            server, [event(far, f"end{i}", stream, "k9", "x") for i, stream in enumerate((S1, S2, OTHER))]
        )
        read = wait_caught_up(server, query["id"])
        assert server.get("/queries")["ingest"]["held"] == 3  # only the final marks' events
    finally:
        assert server.terminate() == 0
    logged = [r.event for r in EventLog(data / "log").read() if r.event.stream != WATERMARK_STREAM]
    in_order = sorted(arrival, key=lambda e: e.time.seconds)  # stable: ties in arrival order
    assert [e.name for e in logged] == [e.name for e in in_order]
    matches = reference(plan_of("any"), [LogRecord(i, e) for i, e in enumerate(in_order)])
    assert read["matches"] == len(matches) > 0


def _held(data) -> list:
    log = EventLog(data / "log")
    journal = EventLog(data / "reorder", ordered=False)
    newest = log.newest.seconds if log.newest is not None else float("-inf")
    return [r.event for r in journal.read() if r.event.time.seconds >= newest]


def _durable(data) -> list[str]:
    """The names of the events a killed server kept, in arrival order: the log's (released, in
    time order) and then the held ones (in arrival order) can be interleaved in arrival, so they
    are put back in the arrival order of the journal, which has them all."""
    journal = [r.event.name for r in EventLog(data / "reorder", ordered=False).read()]
    released = {r.event.name for r in EventLog(data / "log").read() if r.event.stream != WATERMARK_STREAM}
    held = {e.name for e in _held(data)}
    kept = [name for name in journal if name in released or name in held]
    assert released | held == set(kept)  # the journal saw every event (segments of released ones may go)
    return kept
