"""The reorder buffer (rsep.plugin.service.reorder): events out of time order within the lateness
reach the log as the sorted stream (ties in arrival order), late ones are found, the watermark
follows the streams (and processing time when all are silent), and a crash at any moment loses
or duplicates nothing."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.log import EventLog, MixedTimeError
from rsep.plugin.service.reorder import EventTimePolicy, ReorderBuffer
from rsep.plugin.vocabulary import WATERMARK_STREAM


class Clock:
    """Processing time the test moves."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def event(stream: str, t: float, name: str) -> GraphEvent:
    return GraphEvent(stream, f"<http://example.org/{name}>", Timestamp(t, repr(t), True), "")


def buffer(
    tmp: Path, lateness: float, idle: float | None = None, clock: Clock | None = None
) -> ReorderBuffer:
    log = EventLog(tmp / "log")
    return ReorderBuffer(tmp / "reorder", log.newest, EventTimePolicy(lateness, idle), clock=clock or Clock())


def release_into(log: EventLog, held: ReorderBuffer, *, everything: bool = False) -> None:
    held.release(log.append, everything=everything)


def clients(log: EventLog) -> list[str]:
    return [r.event.name for r in log.read() if r.event.stream != WATERMARK_STREAM]


def arrivals(draw: st.DrawFn, lateness: float) -> list[GraphEvent]:
    """Events of two streams at sorted times (ties included), arriving each delayed by at most
    `lateness` after its time: within the bound of every stream."""
    count = draw(st.integers(1, 25))
    steps = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=count, max_size=count))
    times = [sum(steps[: i + 1]) for i in range(count)]
    streams = draw(st.lists(st.sampled_from("ab"), min_size=count, max_size=count))
    delays = draw(st.lists(st.floats(0, lateness), min_size=count, max_size=count))
    events = [
        event(f"http://example.org/{s}", t, f"e{i}")
        for i, (s, t) in enumerate(zip(streams, times, strict=True))
    ]
    order = sorted(range(count), key=lambda i: (times[i] + delays[i], i))
    return [events[i] for i in order]


@settings(max_examples=150, deadline=None)
@given(data=st.data(), lateness=st.sampled_from([0.0, 1.0, 3.0]))
def test_arrivals_within_the_lateness_reach_the_log_sorted_with_ties_in_arrival_order(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, lateness: float
) -> None:
    tmp = tmp_path_factory.mktemp("reorder")
    log = EventLog(tmp / "log")
    held = ReorderBuffer(tmp / "reorder", None, EventTimePolicy(lateness), clock=Clock())
    arrived = data.draw(st.composite(lambda draw: arrivals(draw, lateness))())
    for each in arrived:
        assert held.late([each]) == []
        held.hold([each])
        release_into(log, held)
        times = [r.event.time.seconds for r in log.read()]
        assert times == sorted(times)
    release_into(log, held, everything=True)
    in_order = sorted(arrived, key=lambda e: e.time.seconds)  # stable: ties keep arrival order
    assert clients(log) == [e.name for e in in_order]


def test_an_event_older_than_the_watermark_is_late(tmp_path: Path) -> None:
    held = buffer(tmp_path, 2.0)
    log = EventLog(tmp_path / "log")
    held.hold([event("s", 10, "a")])
    release_into(log, held)
    assert held.watermark == 8.0
    assert held.late([event("s", 8, "b"), event("s", 7.5, "c")]) == [event("s", 7.5, "c")]
    assert [r.event.stream for r in log.read()] == [WATERMARK_STREAM]  # 10 is held


def test_the_watermark_is_the_slowest_streams_and_never_goes_back(tmp_path: Path) -> None:
    held = buffer(tmp_path, 1.0)
    log = EventLog(tmp_path / "log")
    held.hold([event("a", 10, "a10"), event("b", 4, "b4")])
    release_into(log, held)
    assert held.watermark == 3.0
    held.hold([event("b", 9, "b9")], lateness=5.0)  # b's own lateness from now on
    release_into(log, held)
    assert held.watermark == 4.0
    held.hold([event("b", 20, "b20")])
    release_into(log, held)
    assert held.watermark == 9.0  # a: 10 - 1
    assert clients(log) == ["<http://example.org/b4>"]


def test_a_silent_stream_stops_holding_the_watermark_back_and_all_silent_it_follows_the_clock(
    tmp_path: Path,
) -> None:
    clock = Clock()
    held = buffer(tmp_path, 1.0, idle=5.0, clock=clock)
    log = EventLog(tmp_path / "log")
    held.hold([event("a", 10, "a10"), event("b", 2, "b2")])
    release_into(log, held)
    assert held.watermark == 1.0
    clock.now = 4.0
    held.hold([event("a", 12, "a12")])
    clock.now = 6.0  # b silent for 6 s: only a counts
    release_into(log, held)
    assert held.watermark == 11.0
    clock.now = 9.0  # a silent for 5 s too: W = 12 + (9 - 4 - 5)
    release_into(log, held)
    assert held.watermark == 12.0
    clock.now = 9.5
    release_into(log, held)
    assert held.watermark == 12.5
    assert clients(log) == ["<http://example.org/b2>", "<http://example.org/a10>", "<http://example.org/a12>"]
    marks = [r.event.time.seconds for r in log.read() if r.event.stream == WATERMARK_STREAM]
    assert marks == [1.0, 11.0, 12.0, 12.5]


def test_times_of_the_other_kind_are_refused(tmp_path: Path) -> None:
    held = buffer(tmp_path, 1.0)
    held.hold([event("s", 10, "a")])
    dated = GraphEvent("s", "<http://example.org/d>", Timestamp.at(1.0, False), "")
    with pytest.raises(MixedTimeError):
        held.late([dated])


@pytest.mark.parametrize("crash", ["after the journal", "after the release", "after the next journal"])
def test_a_crash_at_any_moment_loses_and_duplicates_nothing(tmp_path: Path, crash: str) -> None:
    """The buffer is dropped (as kill -9 would) at three moments and reopened on the same files."""
    log = EventLog(tmp_path / "log")
    held = ReorderBuffer(tmp_path / "reorder", log.newest, EventTimePolicy(2.0), clock=Clock())
    held.hold([event("s", 5, "e5"), event("s", 7, "w7"), event("s", 3, "e3"), event("s", 9, "e9")])
    if crash != "after the journal":
        release_into(log, held)  # 3 and 5 go (W = 7); 7, at the watermark, and 9 stay
        if crash == "after the next journal":
            held.hold([event("s", 8, "e8"), event("s", 7, "e7")])
    log = EventLog(tmp_path / "log")
    again = ReorderBuffer(tmp_path / "reorder", log.newest, EventTimePolicy(2.0), clock=Clock())
    release_into(log, again, everything=True)
    expected = ["e3", "e5", "w7", "e9"]
    if crash == "after the next journal":
        expected = ["e3", "e5", "w7", "e7", "e8", "e9"]
    assert clients(log) == [f"<http://example.org/{name}>" for name in expected]


def test_released_journal_segments_are_deleted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rsep.plugin.service.reorder.JOURNAL_SEGMENT", 2)
    log = EventLog(tmp_path / "log")
    held = ReorderBuffer(tmp_path / "reorder", None, EventTimePolicy(0.0), clock=Clock())
    for t in range(10):
        held.hold([event("s", t, f"e{t}")])
        release_into(log, held)
    assert len(list((tmp_path / "reorder").glob("*.jsonl"))) <= 2
    assert held.held == 1 and held.watermark == 9.0
    assert not math.isinf(held.watermark)
