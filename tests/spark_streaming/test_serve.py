"""`rsep serve --engine spark` stopped in the middle of a stream, by SIGKILL
(the JVM goes with it) or by SIGTERM (a clean stop): after the restart on the
same data folder every match is in the store once and pushed once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from tests.endpoint_streaming.test_results_and_push import synthetic_events
from tests.endpoint_streaming.test_serve import (
    Listener,
    Server,
    detection_times,
    expected,
    free_port,
    post_events,
)
from tests.paths import REPO
from tests.service.support import QUERIES

pytestmark = [pytest.mark.spark, pytest.mark.e2e]

START_TIMEOUT = 120


class SparkServer(Server):
    """A `rsep serve --engine spark --master local[2]` subprocess."""

    def __init__(
        self,
        data: Path,
        log: Path,
        *,
        engine: str | None = "spark",
        master: str = "local[2]",
        options: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        """`engine=None` leaves `--engine` out: the server's default; `options` are more flags,
        `env` its environment (default: the test's). (Not Server's constructor: another command,
        a longer start.)"""
        self.data = data
        for _ in range(3):  # a free port may be taken meanwhile (Spark's own ports are random)
            self.port = free_port()
            self.base = f"http://127.0.0.1:{self.port}"
            command = [sys.executable, "-m", "rsep.endpoint.cli", "serve", "--port", str(self.port),
                       "--data", str(data), "--master", master, *options]  # fmt: skip
            if engine is not None:
                command += ["--engine", engine]
            self.process = subprocess.Popen(command, cwd=REPO, stdout=log.open("ab"),
                                            stderr=subprocess.STDOUT,
                                            env=dict(env if env is not None else os.environ))  # fmt: skip
            if self._started(log):
                return
        raise AssertionError(f"rsep serve did not start: {log.read_text()}")

    def _started(self, log: Path) -> bool:
        """Wait until this process says it listens (not another one on the same port) and answers;
        False if it could not listen on its port."""
        listening = f"listening on {self.base}/"
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            text = log.read_text(errors="replace")
            if listening in text:
                try:
                    self.get("/queries")
                    return True
                except OSError:
                    pass
            if self.process.poll() is not None:
                if f"cannot listen on 127.0.0.1:{self.port}" in text:
                    return False
                raise AssertionError(f"rsep serve did not start: {text}")
            if time.monotonic() > deadline:
                raise AssertionError(f"rsep serve did not start: {text}")
            time.sleep(0.2)

    def descendants(self) -> list[int]:
        children: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    stat = Path(f"/proc/{entry}/stat").read_text()
                except OSError:
                    continue
                children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
        found, todo = [], [self.process.pid]
        while todo:
            for child in children.get(todo.pop(), []):
                found.append(child)
                todo.append(child)
        return found

    def kill(self) -> None:
        """SIGKILL the server; its JVM notices its stdin closing and exits too
        (waited for: a JVM still finishing a batch must not meet the next one)."""
        family = self.descendants()
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        deadline = time.monotonic() + 60
        while any(Path(f"/proc/{pid}").exists() and _alive(pid) for pid in family):
            assert time.monotonic() < deadline, "the server's JVM outlived it"
            time.sleep(0.1)

    def terminate(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=90)

    def spark_batches(self, query_id: str) -> int:
        """Micro-batches of the Spark job that read a query: its offset log (written before a
        batch runs) in the job's checkpoint, which only the Spark engine writes (the in-process
        engine, which `spark` falls back to without Java, keeps `*.ckpt` files instead)."""
        offsets = self.data / "spark" / "checkpoint" / "offsets"
        if not offsets.is_dir():
            return 0
        logged = [entry.read_text() for entry in offsets.iterdir() if entry.name.isdigit()]
        return sum(1 for text in logged if f'"{query_id}"' in text)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_caught_up(server: SparkServer, query_id: str, timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        read = server.get(f"/queries/{query_id}")
        if read["lag"] == 0 and read["status"] == "running":
            return read
        assert read["status"] != "failed", read["error"]
        assert time.monotonic() < deadline, read
        time.sleep(0.1)


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
