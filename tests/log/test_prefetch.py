"""Events read in a second process (rsep.plugin.prefetch): the same events as reading them here,
errors at the same point of the stream, the child gone when the reader stops."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import pytest

from rsep.plugin import prefetch as module
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.prefetch import read_ahead
from rsep.plugin.store.event_reader import stream_event_file
from rsep.plugin.store.rdfio import DataError

PROV = "<http://www.w3.org/ns/prov#generatedAtTime>"
STARTED = "<http://www.w3.org/ns/prov#startedAtTime>"
DATETIME = "<http://www.w3.org/2001/XMLSchema#dateTime>"


@pytest.fixture(autouse=True)
def _forks_here(monkeypatch):
    """The suite's process runs threads (Spark's gateway, servers), where `available` refuses to
    fork; these readers take no lock a thread could hold, so forking here is safe."""
    monkeypatch.setattr(module, "_other_threads", lambda: False)
    if not module.available():
        pytest.skip("no fork, or one core: events are read in-process")


def _file(tmp_path: Path, count: int, late_at: int | None = None) -> Path:
    """`count` events a second apart (every 7th an interval); the event after `late_at` is 2,000
    seconds late, beyond what the reader reorders."""
    lines = []
    for i in range(count):
        at = i - 2_000 if late_at is not None and i == late_at + 1 else i
        stamp = f'"2026-01-02T{at // 3600 % 24:02d}:{at // 60 % 60:02d}:{at % 60:02d}Z"^^{DATETIME}'
        lines.append(f'<urn:g{i}> {{ <urn:x{i}> <urn:p> "{i}" . }}\n<urn:g{i}> {PROV} {stamp} .\n')
        if i % 7 == 0:  # an interval event
            lines.append(f'<urn:g{i}> {STARTED} "2026-01-01T23:59:59Z"^^{DATETIME} .\n')
    path = tmp_path / "events.trig"
    path.write_text("".join(lines))
    return path


def _read(path: Path):
    return lambda: stream_event_file(path, "urn:s", scope="s0")


def test_the_events_are_those_read_here_in_the_same_order(tmp_path):
    path = _file(tmp_path, 5_003)  # more than two batches, and a part of one
    here = list(_read(path)())
    ahead = list(read_ahead(_read(path), batch=2_000))
    assert ahead == here and len(here) == 5_003
    assert any(event.start is not None for event in ahead)


def _until_error(events) -> tuple[list[GraphEvent], DataError]:
    got: list[GraphEvent] = []
    with pytest.raises(DataError) as raised:
        for event in events:
            got.append(event)
    return got, raised.value


def test_an_error_comes_after_the_events_before_it_as_the_reader_raised_it(tmp_path):
    path = _file(tmp_path, 3_000, late_at=2_500)
    here, expected = _until_error(_read(path)())
    ahead, crossed = _until_error(read_ahead(_read(path), batch=100))
    assert ahead == here and len(here) > 1_000
    assert type(crossed) is type(expected) and str(crossed) == str(expected)
    assert (crossed.source, crossed.line, crossed.column) == (expected.source, expected.line, expected.column)


def test_a_reader_that_stops_early_ends_the_child(tmp_path):
    path = _file(tmp_path, 20_000)
    events = read_ahead(_read(path), batch=500)
    first = next(events)
    assert first.time == Timestamp.from_literal("2026-01-02T00:00:00Z", DATETIME[1:-1])
    assert len(multiprocessing.active_children()) == 1
    events.close()
    assert multiprocessing.active_children() == []


def test_an_unexpected_failure_in_the_child_is_an_engine_failure():
    def broken():
        yield GraphEvent("urn:s", "<urn:g>", Timestamp(1.0, "1", True), "")
        raise ZeroDivisionError("boom")

    got = []
    with pytest.raises(module.EngineFailure, match="ZeroDivisionError: boom"):
        for event in read_ahead(broken):
            got.append(event)
    assert [event.name for event in got] == ["<urn:g>"]


def test_turned_off_it_reads_here(tmp_path, monkeypatch):
    monkeypatch.setenv("RSEP_READ_AHEAD", "0")
    assert not module.available()
    path = _file(tmp_path, 10)
    events = read_ahead(_read(path))
    next(events)
    assert multiprocessing.active_children() == []
    events.close()


def test_a_process_running_another_thread_reads_here(monkeypatch):
    monkeypatch.undo()  # the real check
    release = threading.Event()
    other = threading.Thread(target=release.wait, daemon=True)
    other.start()
    try:
        assert not module.available()
    finally:
        release.set()
        other.join()
