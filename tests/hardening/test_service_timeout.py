"""SERVICE and LOAD within `--service-timeout` (issue 15, item 4): a remote that accepts the
connection and never answers costs the client the deadline and a 504, and the evaluation's thread,
query slot and write lock are free again (its connection is cut), so later requests go through."""

from __future__ import annotations

import argparse
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from rsep.endpoint.app import create_app
from rsep.endpoint.settings import add_arguments, configuration
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.store.remote_deadline import GRACE_S
from tests.support.streaming_endpoint import caught_up, ingest, register, wait_for


class Silent:
    """A TCP server that accepts and never answers; it notes when a client closes."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.accepted = 0
        self.closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._drain, args=(connection,), daemon=True).start()

    def _drain(self, connection: socket.socket) -> None:
        with connection:
            while connection.recv(65536):
                pass  # the request is read, never answered
        self.closed.set()


@pytest.fixture
def silent() -> Iterator[Silent]:
    server = Silent()
    yield server
    server.server.close()


def serve(tmp_path: Path, **config: Any) -> Flask:
    base = {"RSEP_DATA_DIR": str(tmp_path / "data"), "RSEP_START_STREAMING": False, "TESTING": True}
    return create_app({**base, "RSEP_ALLOW_REMOTE": ("127.0.0.1",), "RSEP_SERVICE_TIMEOUT": 1.0, **config})


def test_a_service_that_never_answers_is_a_504_within_the_deadline_and_frees_the_slot(tmp_path, silent):
    app = serve(tmp_path)
    web = app.test_client()
    query = f"SELECT * WHERE {{ SERVICE <http://127.0.0.1:{silent.port}/sparql> {{ ?s ?p ?o }} }}"
    began = time.monotonic()
    answer = web.get("/sparql", query_string={"query": query})
    took = time.monotonic() - began
    assert answer.status_code == 504, answer.get_data(as_text=True)
    assert f"SERVICE <http://127.0.0.1:{silent.port}/sparql> did not answer within 1 s" in answer.get_data(
        as_text=True
    )
    assert "waits for the remote" not in answer.get_data(as_text=True)  # its connection was cut
    assert silent.accepted == 1 and silent.closed.wait(5)
    assert took < 1 + GRACE_S
    slots = app.extensions["rsep.workers"].queries
    deadline = time.monotonic() + 5
    while slots.used and time.monotonic() < deadline:
        time.sleep(0.05)
    assert slots.used == 0
    assert web.get("/sparql", query_string={"query": "ASK {}"}).status_code == 200


def test_a_load_that_never_answers_is_a_504_and_releases_the_write_lock(tmp_path, silent):
    web = serve(tmp_path).test_client()
    load = web.post("/sparql", data=f"LOAD <http://127.0.0.1:{silent.port}/data.ttl>",
                    content_type="application/sparql-update")  # fmt: skip
    assert load.status_code == 504, load.get_data(as_text=True)
    assert "LOAD" in load.get_data(as_text=True) and "--service-timeout" in load.get_data(as_text=True)
    update = web.post("/sparql", data="INSERT DATA { <urn:a> <urn:b> <urn:c> }",
                      content_type="application/sparql-update")  # fmt: skip
    assert update.status_code == 204


def test_the_setting_is_read_from_the_command_line_and_the_environment():
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert configuration(parser.parse_args([]), {"RSEP_SERVICE_TIMEOUT": "3"})["RSEP_SERVICE_TIMEOUT"] == 3.0
    given = parser.parse_args(["--service-timeout", "0.5"])
    assert configuration(given, {"RSEP_SERVICE_TIMEOUT": "3"})["RSEP_SERVICE_TIMEOUT"] == 0.5


def _window_query(where: str) -> str:
    return f"""REGISTER QUERY counted AS
PREFIX ex: <http://example.org/>
SELECT (COUNT(?k) AS ?n)
FROM STREAM <http://example.org/s> [RANGE 10s STEP 5s]
WHERE {{ {where} }}
"""


def test_a_window_query_whose_service_never_answers_fails_and_the_rest_goes_on(
    make_app: Callable[..., Flask], silent: Silent
) -> None:
    """A SERVICE in a C-SPARQL window query (GPMs refuse SERVICE) waits at most
    --service-timeout: the query fails saying so, and ingest and the other queries go on (before,
    the engine waited on the remote for ever)."""
    app = make_app(RSEP_ALLOW_REMOTE=("127.0.0.1",), RSEP_SERVICE_TIMEOUT=1.0)
    web = app.test_client()
    remote = f"SERVICE <http://127.0.0.1:{silent.port}/sparql> {{ ?k ex:q ?w }}"
    stuck = register(web, _window_query(f"?k ex:p ?v . {remote}"))
    assert stuck.status_code == 201, stuck.get_data(as_text=True)
    fine = register(web, _window_query("?k ex:p ?v"))
    assert fine.status_code == 201, fine.get_data(as_text=True)
    times = (1, 2, 7, 12, 30)
    events = [GraphEvent("http://example.org/s", f"<urn:e{i}>", Timestamp(i, str(i), True),
                         f'<urn:k{i}> <http://example.org/p> "{i}" .') for i in times]  # fmt: skip
    began = time.monotonic()
    ingest(web, events)
    wait_for(lambda: web.get(f"/queries/{stuck.json['id']}").json["status"] == "failed", timeout=20)
    assert time.monotonic() - began < 10
    summary = web.get(f"/queries/{stuck.json['id']}").json
    assert f"SERVICE <http://127.0.0.1:{silent.port}/sparql> did not answer within 1 s" in summary["error"]
    assert silent.closed.wait(5)  # its connection was cut
    wait_for(caught_up(app))
    counts = web.get(f"/queries/{fine.json['id']}").json
    assert counts["status"] != "failed", counts
