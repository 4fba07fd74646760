"""The durable event log: atomic appends, order, recovery from a torn write."""

import pytest

from rsep.plugin.events import GraphEvent, Timestamp
from rsep.plugin.log import EventLog, OutOfOrderError


def event(t: float, name: str = "g", stream: str = "urn:s") -> GraphEvent:
    return GraphEvent(stream, f"<urn:{name}>", Timestamp(t, str(t), True), f"<urn:{name}> <urn:p> {t!r} .\n")


def test_append_and_read_back_in_order(tmp_path):
    log = EventLog(tmp_path, segment_size=3)
    assert log.append([event(1, "a"), event(2, "b")]) == range(0, 2)
    assert log.append([event(2, "c", "urn:t"), event(5, "d")]) == range(2, 4)
    assert log.append([event(7, "e")]) == range(4, 5)
    assert [r.event.name for r in log.read()] == ["<urn:a>", "<urn:b>", "<urn:c>", "<urn:d>", "<urn:e>"]
    assert [r.position for r in log.read(3, 5)] == [3, 4]
    assert len(list(tmp_path.glob("*.jsonl"))) == 2  # rolled over after three events


def test_reopening_continues_where_it_stopped(tmp_path):
    EventLog(tmp_path).append([event(1), event(2)])
    log = EventLog(tmp_path)
    assert log.next_position == 2 and log.last_time == 2
    log.append([event(3)])
    assert [r.position for r in log.read()] == [0, 1, 2]


def test_out_of_order_events_are_rejected_whole(tmp_path):
    log = EventLog(tmp_path)
    log.append([event(5)])
    with pytest.raises(OutOfOrderError, match="older than the newest accepted"):
        log.append([event(6, "x"), event(4, "y")])
    assert [r.event.name for r in log.read()] == ["<urn:g>"]
    assert log.next_position == 1


def test_a_torn_last_write_is_cut_off(tmp_path):
    log = EventLog(tmp_path)
    log.append([event(1, "a")])
    log.append([event(2, "b")])
    (segment,) = tmp_path.glob("*.jsonl")
    data = segment.read_bytes()
    segment.write_bytes(data[:-7])  # a crash in the middle of the second request
    recovered = EventLog(tmp_path)
    assert [r.event.name for r in recovered.read()] == ["<urn:a>"]
    assert recovered.next_position == 1
    recovered.append([event(3, "c")])
    assert [r.position for r in recovered.read()] == [0, 1]
