"""`rsep serve --engine spark` as a subprocess: started, killed and stopped by tests of the Spark
engine on one machine (tests/spark_streaming) and on a cluster (tests/spark_cluster)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.support.paths import REPO
from tests.support.servers import Server, free_port

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
