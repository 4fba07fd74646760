"""`rsep serve --engine spark` runs SPARQL queries in forked children like the in-process engine,
and the Spark job goes on: a runaway query whose client leaves is stopped (its child killed),
and forty more forked queries later, every match of the events posted meanwhile is pushed, by
Spark, with no py4j error logged. (A child disturbs the server's py4j connections only when it
forks while another thread is mid-call, rare here: tests/spark_streaming/test_inherited_connections.py
provokes it, and fails without rsep.plugin.spark.inherited_connections.)"""

from __future__ import annotations

import http.client
import urllib.parse

import pytest

from tests.support.events import QUERIES, synthetic_events
from tests.support.servers import Listener, expected, forked_children, http_exchange, post_events, until
from tests.support.spark_server import SparkServer, wait_caught_up

pytestmark = [pytest.mark.spark, pytest.mark.e2e]

VALUES = " ".join(str(i) for i in range(500))
RUNAWAY = "SELECT (COUNT(*) AS ?n) WHERE { " + " ".join(f"VALUES ?{v} {{{VALUES}}}" for v in "abc") + " }"
"""125 million solutions counted: seconds of Oxigraph's time."""


def ask(server: SparkServer) -> tuple[int, str]:
    return http_exchange(server, "GET", "/sparql?" + urllib.parse.urlencode({"query": "ASK {}"}))


def test_queries_are_stopped_and_the_spark_job_goes_on(tmp_path):
    data, log = tmp_path / "data", tmp_path / "server.log"
    events = synthetic_events(30)
    server = SparkServer(data, log, options=("--max-running-queries", "1", "--query-timeout", "120"))
    try:
        text = QUERIES["any"].encode()
        status, query = server.request("POST", "/queries", text, "application/sparql-query")
        assert status == 201
        listener = Listener(server, query["id"])
        post_events(server, events[:10])
        first = expected(query["id"], events[:10])
        assert {r["graph"] for r in listener.take(len(first), timeout=90)} == first

        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        connection.request("GET", "/sparql?" + urllib.parse.urlencode({"query": RUNAWAY}))
        assert until(lambda: bool(forked_children(server)), 10)  # its child evaluates it
        assert "--max-running-queries" in ask(server)[1]  # the one slot is taken
        connection.close()  # the client leaves
        assert until(lambda: not forked_children(server), 5)  # the child is killed
        for n, event in enumerate(events[10:]):
            post_events(server, [event])
            if n % 2 == 0:
                status, body = ask(server)
                assert status == 200, body
        for _ in range(30):
            status, body = ask(server)
            assert status == 200, body
        everything = expected(query["id"], events)
        later = {r["graph"] for r in listener.take(len(everything - first), timeout=90)}
        assert later == everything - first
        read = wait_caught_up(server, query["id"])
        assert read["matches"] == len(everything) and read["status"] == "running"
        assert server.spark_batches(query["id"]) > 0  # Spark ran it, not the in-process fallback
    finally:
        assert server.terminate() == 0
    assert "Py4J" not in log.read_text(errors="replace")
