"""The event log under a failing disk (issue 15, item 3), with a fault-injecting `os.write` /
truncate: a failed append stores nothing and leaves whole records only, a torn tail is cut and
logged on open, an unreadable record names its file and offset. (The same against a real full
tmpfs, through the endpoint: tests/hardening/test_disk_full.py.)"""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path

import pytest

from rsep.plugin import StorageFailure
from rsep.plugin import log as log_module
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.log import EventLog, LogCorrupted


def event(t: float, name: str) -> GraphEvent:
    return GraphEvent("urn:s", f"<urn:{name}>", Timestamp(t, str(t), True), f"<urn:{name}> <urn:p> {t!r} .\n")


REAL_WRITE = os.write


class FullDisk:
    """`os.write` that, on files under `folder`, writes `room` more bytes (a partial write, as a
    disk filling up does) and then fails with ENOSPC until `room` is given again."""

    def __init__(self, folder: Path, room: int) -> None:
        self.folder, self.room = str(folder), room

    def __call__(self, descriptor: int, data: bytes | memoryview) -> int:
        if not os.readlink(f"/proc/self/fd/{descriptor}").startswith(self.folder):
            return REAL_WRITE(descriptor, data)
        if self.room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written = REAL_WRITE(descriptor, bytes(data[: self.room]))
        self.room -= written
        return written


def no_cut(path: Path, size: int) -> None:
    raise StorageFailure("no cut")


def test_a_failed_append_stores_nothing_and_the_next_one_is_whole(tmp_path: Path, monkeypatch) -> None:
    log = EventLog(tmp_path)
    log.append([event(1, "a")])
    (segment,) = tmp_path.glob("*.jsonl")
    size = segment.stat().st_size
    disk = FullDisk(tmp_path, room=10)
    monkeypatch.setattr(log_module.os, "write", disk)
    with pytest.raises(StorageFailure, match="nothing of it was stored") as caught:
        log.append([event(2, "b"), event(3, "c")])
    assert caught.value.http_status == 507
    assert segment.stat().st_size == size  # the 10 bytes written were cut back
    assert log.next_position == 1 and log.last_time == 1
    disk.room = 10_000  # room again
    assert log.append([event(4, "d")]) == range(1, 2)
    monkeypatch.undo()
    reopened = EventLog(tmp_path)
    assert [(r.position, r.event.name) for r in reopened.read()] == [(0, "<urn:a>"), (1, "<urn:d>")]


def test_a_failed_cut_is_made_before_the_next_append(tmp_path: Path, monkeypatch) -> None:
    log = EventLog(tmp_path)
    log.append([event(1, "a")])
    (segment,) = tmp_path.glob("*.jsonl")
    size = segment.stat().st_size
    real_cut = log_module._cut
    monkeypatch.setattr(log_module.os, "write", FullDisk(tmp_path, room=7))
    monkeypatch.setattr(
        log_module, "_cut", lambda path, size: (_ for _ in ()).throw(StorageFailure("no cut"))
    )
    with pytest.raises(StorageFailure):
        log.append([event(2, "b")])
    assert segment.stat().st_size == size + 7  # the torn bytes are still there
    with pytest.raises(StorageFailure, match="no cut"):  # and stay in the way of any append
        log.append([event(3, "c")])
    monkeypatch.setattr(log_module, "_cut", real_cut)
    monkeypatch.setattr(log_module.os, "write", FullDisk(tmp_path, room=10_000))
    assert log.append([event(4, "d")]) == range(1, 2)
    assert [r.event.name for r in EventLog(tmp_path).read()] == ["<urn:a>", "<urn:d>"]


def test_a_torn_tail_is_cut_on_open_and_logged(tmp_path: Path, caplog) -> None:
    EventLog(tmp_path).append([event(1, "a")])
    (segment,) = tmp_path.glob("*.jsonl")
    size = segment.stat().st_size
    with segment.open("ab") as handle:
        handle.write(b'[1, [["urn:s", "<urn:b>", 2')
    with caplog.at_level(logging.WARNING, logger="rsep.log"):
        log = EventLog(tmp_path)
    assert segment.stat().st_size == size
    assert f"cut a torn record of 27 bytes at byte offset {size}" in caplog.text
    assert str(segment) in caplog.text
    assert log.next_position == 1


def test_an_unreadable_record_names_the_file_and_offset(tmp_path: Path) -> None:
    log = EventLog(tmp_path)
    log.append([event(1, "a")])
    (segment,) = tmp_path.glob("*.jsonl")
    size = segment.stat().st_size
    with segment.open("ab") as handle:
        handle.write(b'[1, [["urn:s", "<urn:b>", 2[1, [["urn:s"]]]\n')  # glued: what the old log left
    with pytest.raises(LogCorrupted, match=f"event log {segment}, byte offset {size}: not a log record"):
        EventLog(tmp_path)
