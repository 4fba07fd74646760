"""Time and concurrency limits (issue 15, item 4): event streams and SPARQL queries each have a
capped share of `rsep serve`'s threads, so neither many listeners nor runaway queries stop
ingest; past a cap, 503 at once; a query past --query-timeout is 503, and is stopped (its child
process killed), as is a query whose client leaves, so its slot is free at once."""

from __future__ import annotations

import http.client
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from rsep.endpoint import workers
from tests.support.events import QUERIES
from tests.support.servers import Server, forked_children, http_exchange, until

LISTENERS = 12
SPARQL_QUERY = "application/sparql-query"
VALUES = " ".join(str(i) for i in range(500))
RUNAWAY = "SELECT (COUNT(*) AS ?n) WHERE { " + " ".join(f"VALUES ?{v} {{{VALUES}}}" for v in "abc") + " }"
"""125 million solutions counted: seconds of Oxigraph's time on an empty store."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder: Path = tmp_path_factory.mktemp("workers")
    options = ("--engine", "inprocess", "--max-listeners", str(LISTENERS), "--max-running-queries", "2",
               "--query-timeout", "1")  # fmt: skip
    running = Server(folder / "data", folder / "server.log", options=options)
    yield running
    running.terminate()


def _listen(server: Server, query_id: str) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request("GET", f"/queries/{query_id}/events")
    return connection.getresponse()


def _query(server: Server, text: str) -> tuple[int, str]:
    return http_exchange(server, "GET", "/sparql?" + urllib.parse.urlencode({"query": text}))


def test_listeners_and_runaway_queries_leave_ingest_its_threads(server: Server) -> None:
    status, body = http_exchange(
        server, "POST", "/queries", QUERIES["any"].encode(), "application/sparql-query"
    )
    assert status == 201, body
    query_id = body.split('"id":')[1].split('"')[1]
    streams = [_listen(server, query_id) for _ in range(LISTENERS)]
    assert all(stream.status == 200 for stream in streams)
    refused = _listen(server, query_id)
    assert refused.status == 503 and refused.getheader("Retry-After") == "5"
    assert b"--max-listeners" in refused.read()

    answers: list[tuple[int, str]] = []

    def runaway() -> None:
        """Until it gets a slot (a probe below may hold one for a moment)."""
        while "--max-running-queries" in (found := _query(server, RUNAWAY))[1]:
            time.sleep(0.02)
        answers.append(found)

    threads = [threading.Thread(target=runaway) for _ in range(2)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 30
    while (found := _query(server, "ASK {}"))[0] == 200 and time.monotonic() < deadline:
        time.sleep(0.2)  # until both runaway queries hold their slots
    status, body = found  # both query slots taken: 503 at once
    assert status == 503 and "--max-running-queries" in body, body
    slowest = 0.0
    for index in range(20):  # ingest and the other routes answer meanwhile
        began = time.monotonic()
        name = f"<http://example.org/e{index}>"
        event = f'{name} <http://example.org/p> "1" {name} .\n'.encode()
        status, body = http_exchange(server, "POST", "/streams?stream=http://example.org/s", event,
                                     "application/n-quads")  # fmt: skip
        assert status == 202, body
        assert http_exchange(server, "GET", "/queries")[0] == 200
        slowest = max(slowest, time.monotonic() - began)
    assert slowest < 5.0, slowest  # not held up by the runaway queries (each runs ~10 s)
    for thread in threads:
        thread.join(timeout=60)
    assert [status for status, _ in answers] == [503, 503]
    assert all("--query-timeout" in body and "stopped" in body for _, body in answers)
    assert _query(server, "ASK {}")[0] == 200  # their slots are free: Oxigraph needs ~10 s more
    assert until(lambda: not forked_children(server), 2)  # killed (collected in the background)
    for stream in streams:
        stream.close()


@pytest.fixture(scope="module")
def patient_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder: Path = tmp_path_factory.mktemp("patient")
    options = ("--engine", "inprocess", "--max-running-queries", "1", "--query-timeout", "120")
    running = Server(folder / "data", folder / "server.log", options=options)
    yield running
    running.terminate()


def test_a_query_whose_client_leaves_is_stopped(patient_server: Server) -> None:
    server = patient_server
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request("GET", "/sparql?" + urllib.parse.urlencode({"query": RUNAWAY}))
    assert until(lambda: bool(forked_children(server)), 10)  # its child evaluates it
    assert "--max-running-queries" in _query(server, "ASK {}")[1]  # the one slot is taken
    connection.close()  # the client leaves
    assert until(lambda: not forked_children(server), 3)  # the child is killed, not left to finish
    status, body = _query(server, "ASK {}")
    assert status == 200, body


@pytest.mark.parametrize("pinned", ["true", "false"])
def test_queries_are_forked_unless_py4j_would_send_from_the_child(
    make_app: Callable[..., Flask], monkeypatch: pytest.MonkeyPatch, pinned: str
) -> None:
    """With py4j in the process, queries are forked in its pinned-thread mode (PySpark's default,
    made fork-safe by rsep.plugin.spark.inherited_connections), not in its unpinned mode, where
    a child's finalisers would talk to the JVM over the server's connections."""
    import py4j.clientserver  # noqa: F401 - loaded, as with a Spark engine in the process

    forked: list[bool] = []
    real = workers.run_in_child

    def spy(*given: Any) -> Any:
        forked.append(True)
        return real(*given)

    monkeypatch.setattr(workers, "run_in_child", spy)
    monkeypatch.setenv("PYSPARK_PIN_THREAD", pinned)
    app = make_app(RSEP_START_STREAMING=False)
    answer = app.test_client().get("/sparql", query_string={"query": "ASK {}"})
    assert answer.status_code == 200, answer.get_data(as_text=True)
    assert forked == ([True] if pinned == "true" else [])


def test_a_registration_whose_client_leaves_is_stopped(patient_server: Server) -> None:
    """A continuous query over 64 KiB is compiled in a child (rsep.endpoint.plans), killed when
    its client leaves: nothing is registered."""
    server = patient_server
    tests = " && ".join(f"(?o{k} > {k} || STRSTARTS(STR(?o{k}), 'x{k}'))" for k in range(8))
    group = "{ " + " . ".join(f"?s <http://e/p{k}> ?o{k}" for k in range(8)) + f" FILTER ({tests}) }}"
    text = "SELECT * WHERE { { ?s <http://e/a> ?x }" + f" SEQ {group}" * 150 + " }"  # ~130 KB
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request("POST", "/queries", body=text.encode(), headers={"Content-Type": SPARQL_QUERY})
    assert until(lambda: bool(forked_children(server)), 10)  # its child compiles it
    connection.close()  # the client leaves
    assert until(lambda: not forked_children(server), 3)  # the child is killed, not left to finish
    status, body = http_exchange(server, "GET", "/queries")
    assert status == 200 and '"queries": []' in body.replace('"queries":[]', '"queries": []'), body
