"""A full disk under the event log, for real (issue 15, item 3): the log folder of a running
`rsep serve` is a 64 KiB tmpfs. Past what fits, ingest answers 507 and stores nothing, the
server keeps serving, and once there is room again ingest goes on at the next position; after a
restart every acknowledged event is read back once, in order. Mounting needs root (or
CAP_SYS_ADMIN): elsewhere the test skips, and tests/log/test_log_storage_failures.py covers the
same with a fault-injecting write."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from rsep.plugin import EventLog
from tests.support.servers import Server, http_exchange

PROV = "<http://www.w3.org/ns/prov#generatedAtTime>"
STREAM = "http://example.org/s"


@pytest.fixture
def small_log_disk(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "data" / "log"
    folder.mkdir(parents=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
                             capture_output=True, text=True)  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()}); see test_log_storage_failures.py")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def _event(index: int) -> bytes:
    name = f"<http://example.org/e{index}>"
    padding = "x" * 1500
    return (f'{name} <http://example.org/p> "{padding}" {name} .\n'
            f'{name} {PROV} "{index}"^^<http://www.w3.org/2001/XMLSchema#integer> .\n').encode()  # fmt: skip


def _post(server: Server, index: int) -> tuple[int, str]:
    return http_exchange(server, "POST", f"/streams?stream={STREAM}", _event(index), "application/n-quads")


def test_a_full_disk_answers_507_stores_nothing_and_ingest_resumes(
    tmp_path: Path, small_log_disk: Path
) -> None:
    server = Server(tmp_path / "data", tmp_path / "server.log")
    accepted: list[int] = []
    try:
        index = 0
        while True:
            status, body = _post(server, index)
            if status != 202:
                break
            accepted.append(index)
            index += 1
            assert index < 200, "the 64 KiB disk never filled"
        assert status == 507, body
        assert "nothing of it was stored" in body
        for later in range(index, index + 3):  # still full: refused again, never glued
            assert _post(server, later)[0] == 507
        assert http_exchange(server, "GET", "/sparql?query=ASK%7B%7D")[0] == 200
        subprocess.run(["mount", "-o", "remount,size=1m", str(small_log_disk)], check=True)
        status, body = _post(server, index + 3)
        assert status == 202, body
        assert f'"first_position":{len(accepted)}' in body.replace(" ", "")
        accepted.append(index + 3)
    finally:
        server.terminate()
    again = Server(tmp_path / "data", tmp_path / "server.log")
    try:
        assert _post(again, index + 4)[0] == 202
        accepted.append(index + 4)
    finally:
        again.terminate()
    names = [record.event.name for record in EventLog(small_log_disk).read()]
    assert names == [f"<http://example.org/e{i}>" for i in accepted]
