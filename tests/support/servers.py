"""A real `rsep serve` in a subprocess, as a client sees it: requests, an SSE listener on a thread,
posting events, the matches expected of QUERIES["any"] (tests/support/events.py), and the `rsep`
command line run in a subprocess."""

from __future__ import annotations

import http.client
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from rsep.plugin.log import LogRecord
from rsep.plugin.service.match_graphs import match_iri
from tests.support.events import plan_of, reference
from tests.support.paths import REPO
from tests.support.streaming_endpoint import nquads_of


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Server:
    """A `rsep serve` subprocess: `options` (default: the in-process engine) after the port and
    data folder, `env` added to the environment."""

    def __init__(
        self, data: Path, log: Path, *, options: tuple[str, ...] = ("--engine", "inprocess"),
        env: dict[str, str] | None = None,
    ) -> None:  # fmt: skip
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "rsep.endpoint.cli", "serve", "--port", str(self.port),
                   "--data", str(data), *options]  # fmt: skip
        self.process = subprocess.Popen(command, cwd=REPO, stdout=log.open("ab"), stderr=subprocess.STDOUT,
                                        env={**os.environ, **(env or {})})  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            try:
                self.get("/queries")
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"rsep serve did not start: {log.read_text()}") from None
                time.sleep(0.1)

    def request(self, method: str, path: str, body: bytes | None = None, content_type: str | None = None):
        request = urllib.request.Request(self.base + path, data=body, method=method)
        if content_type:
            request.add_header("Content-Type", content_type)
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")

    def get(self, path: str):
        return self.request("GET", path)[1]

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def terminate(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=60)


class Listener:
    """An SSE client on a thread: match records into a queue."""

    def __init__(self, server: Server, query_id: str) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        self.connection.request("GET", f"/queries/{query_id}/events")
        self.response = self.connection.getresponse()
        self.headers = dict(self.response.getheaders())
        self.records: queue.Queue[dict] = queue.Queue()
        self.comments: list[str] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            while line := self.response.readline():
                text = line.decode().rstrip("\n")
                if text.startswith("data: "):
                    self.records.put(json.loads(text[len("data: ") :]))
                elif text.startswith(":"):
                    self.comments.append(text)
        except (OSError, ValueError):
            pass

    def take(self, count: int, timeout: float = 30.0) -> list[dict]:
        return [self.records.get(timeout=timeout) for _ in range(count)]


def post_events(server: Server, events) -> None:
    for e in events:
        status, body = server.request("POST", f"/streams?stream={e.stream}", nquads_of(e).encode(),
                                      "application/n-quads")  # fmt: skip
        assert status == 202 and body["accepted"] == 1


def expected(query_id: str, events) -> set[str]:
    log = [LogRecord(i, e) for i, e in enumerate(events)]
    return {match_iri(query_id, m) for m in reference(plan_of("any"), log)}


def detection_times(server: Server, query_iri: str) -> dict[str, int]:
    """Per match graph of the query, how many `prov:generatedAtTime` values it has: a graph
    written a second time (a replayed batch not recognised as done) gets a second detection
    time, while the graph itself, named after the match, would still be counted once."""
    sparql = urllib.parse.urlencode({"query": (
        "PREFIX prov: <http://www.w3.org/ns/prov#>\n"
        "SELECT ?g (COUNT(DISTINCT ?t) AS ?n) WHERE { GRAPH <urn:rsep:matches> "
        f"{{ ?g prov:wasGeneratedBy <{query_iri}> ; prov:generatedAtTime ?t }} }} GROUP BY ?g")})  # fmt: skip
    rows = server.get(f"/sparql?{sparql}")["results"]["bindings"]
    return {row["g"]["value"]: int(row["n"]["value"]) for row in rows}


def rsep_command(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "rsep.endpoint.cli", *args]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)


def http_exchange(
    server: Server, method: str, path: str, body: bytes | None = None, content_type: str | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, str]:  # fmt: skip
    """One request to the server, whatever its status: (status, body as text)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        sent = dict(headers or {})
        if content_type:
            sent["Content-Type"] = content_type
        connection.request(method, path, body=body, headers=sent)
        response = connection.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        connection.close()


def forked_children(server: Server) -> set[int]:
    """The server's children that run its own command line: queries' forked children (a Spark
    engine's JVM is a child too, with another one)."""
    mine = Path(f"/proc/{server.process.pid}/cmdline").read_bytes()
    found = set()
    for task in Path(f"/proc/{server.process.pid}/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except FileNotFoundError:  # the thread ended since the listing
            continue
        for child in children:
            try:
                if Path(f"/proc/{child}/cmdline").read_bytes() == mine:
                    found.add(int(child))
            except OSError:
                continue
    return found


def until(condition: Callable[[], bool], seconds: float) -> bool:
    """Whether `condition()` holds within `seconds` (polled)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
