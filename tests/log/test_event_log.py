"""The durable event log: atomic appends, order, recovery from a torn write."""

import json

import pytest

from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.log import EventLog, LateEventError, LogCorrupted, MixedTimeError


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
    with pytest.raises(LateEventError, match="older than the newest accepted"):
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


def dated(t: float, name: str) -> GraphEvent:
    return GraphEvent("urn:s", f"<urn:{name}>", Timestamp(t, f"t{t:g}", False), "")


def test_a_log_keeps_the_kind_of_time_of_its_events_after_reopening(tmp_path):
    EventLog(tmp_path).append([event(1, "a")])
    log = EventLog(tmp_path)
    assert log.numeric is True
    with pytest.raises(MixedTimeError) as refused:
        log.append([event(3, "b"), dated(2_000_000_000, "c")])
    assert str(refused.value) == (
        "event <urn:c> at t2e+09 is an xsd:dateTime, but the event log's timestamps are numbers: the "
        "timestamps of one event log must all be xsd:dateTimes or all numbers (epoch seconds and "
        "abstract time units do not compare)"
    )
    assert refused.value.event.name == "<urn:c>"
    assert [r.event.name for r in log.read()] == ["<urn:a>"] and log.next_position == 1
    assert log.append([event(3, "b")]) == range(1, 2)


def test_the_first_event_of_an_empty_log_sets_its_kind_of_time(tmp_path):
    log = EventLog(tmp_path)
    assert log.numeric is None
    with pytest.raises(MixedTimeError) as refused:
        log.append([dated(5, "x"), event(7, "y")])
    assert str(refused.value).startswith(
        "event <urn:y> at 7 is a number, but event <urn:x> of the same request is at t5, an xsd:dateTime: "
    )
    assert log.next_position == 0 and log.numeric is None
    log.append([dated(5, "x")])
    assert EventLog(tmp_path).numeric is False


def test_an_events_interval_start_is_logged_and_read_back(tmp_path):
    start = Timestamp(3.0, "3", True)
    spanning = GraphEvent("urn:s", "<urn:d>", Timestamp(8.0, "8", True), "<urn:d> <urn:p> 1 .\n", start)
    EventLog(tmp_path).append([event(1, "a"), spanning])
    read = [r.event for r in EventLog(tmp_path).read()]
    assert read == [event(1, "a"), spanning]
    assert read[0].start is None


def test_a_log_written_before_intervals_reads_the_same(tmp_path):
    """Six fields per event, as logs were written before interval starts were logged."""
    (tmp_path / f"{0:020d}.jsonl").write_text(
        '[0, [["urn:s", "<urn:a>", 1.0, "1", true, "<urn:a> <urn:p> 1 .\\n"]]]\n', encoding="utf-8"
    )
    log = EventLog(tmp_path)
    assert [r.event for r in log.read()] == [event(1, "a")]
    assert log.next_position == 1 and log.last_time == 1.0


def test_the_time_before_a_position_is_the_newest_event_before_it(tmp_path):
    """A query registered to read from a position was registered at this time (its windows' t0)."""
    log = EventLog(tmp_path, segment_size=2)
    assert log.time_before(0) is None
    log.append([event(1, "a"), event(3, "b")])
    log.append([event(3, "c"), event(8, "d"), event(9, "e")])
    assert [log.time_before(p) for p in range(6)] == [None, 1, 3, 3, 8, 9]
    assert EventLog(tmp_path, segment_size=2).time_before(3) == 3  # read back from the files


def test_a_record_in_an_older_segment_is_checked_where_it_is_read(tmp_path):
    """Opening reads the newest segment only; a damaged record of an older one is an error naming
    its file and offset when a reader reaches it (a query replaying the log), not a traceback."""
    log = EventLog(tmp_path, segment_size=2)
    log.append([event(1, "a"), event(2, "b")])
    log.append([event(3, "c")])
    older = sorted(tmp_path.glob("*.jsonl"))[0]
    first, [fields, *rest] = json.loads(older.read_text())
    older.write_text(json.dumps([first, [[*fields[:2], "x", *fields[3:]], *rest]]) + "\n")
    log = EventLog(tmp_path, segment_size=2)
    assert log.next_position == 3
    with pytest.raises(LogCorrupted, match=f"event log {older}, byte offset 0: not a log record"):
        list(log.read())
    assert [r.position for r in log.read(2)] == [2]


def test_a_file_not_named_by_a_position_is_not_a_segment(tmp_path):
    EventLog(tmp_path).append([event(1)])
    (tmp_path / "notes.jsonl").write_text("kept by hand\n")
    assert [r.position for r in EventLog(tmp_path).read()] == [0]
