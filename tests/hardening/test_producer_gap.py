"""A REGISTER STREAM producer evaluates, inside the ingest request, every window close the
request's events make final. An event far after the log's newest made that unbounded: under a
1-second step, one of year 9999 after one of today is 2.5e11 closes, and the request (with every
later write and a DELETE of the producer) waited for ever while memory grew. A request that would
make a producer evaluate more than `MAX_DERIVED_CLOSES` closes is refused whole; the producer and
ingest go on."""

from __future__ import annotations

import json
import time
from pathlib import Path

from rsep.plugin.service.producers import MAX_DERIVED_CLOSES
from tests.support.servers import Server, http_exchange

STREAM = "http://example.org/s"
XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"
NQUADS = "application/n-quads"
PRODUCER = f"""REGISTER STREAM <http://example.org/counts> AS
CONSTRUCT {{ <http://example.org/x> <http://example.org/n> ?n }}
FROM STREAM <{STREAM}> [RANGE 10s STEP 1s]
WHERE {{ {{ SELECT (COUNT(?e) AS ?n) WHERE {{ ?e <http://example.org/p> ?o }} }} }}"""


def _post(server: Server, name: str, seconds: int) -> tuple[int, str]:
    return http_exchange(server, "POST", f"/streams?stream={STREAM}", _event(name, seconds), NQUADS)


def _event(name: str, seconds: int) -> bytes:
    event = f"<http://example.org/{name}>"
    stamp = f'{event} <http://www.w3.org/ns/prov#generatedAtTime> "{seconds}"^^<{XSD_INTEGER}> .\n'
    body = f'{event} <http://example.org/p> "1" {event} .\n' + stamp
    return body.encode()


def test_a_request_that_would_make_a_producer_derive_too_many_closes_is_400(tmp_path: Path) -> None:
    server = Server(tmp_path / "data", tmp_path / "server.log")
    try:
        status, body = http_exchange(
            server, "POST", "/queries", PRODUCER.encode(), "application/sparql-query"
        )
        assert status == 201, body
        assert _post(server, "e1", 1)[0] == 202
        for far in (
            12 + MAX_DERIVED_CLOSES,
            253402300799,
        ):  # closes 11 ... 11 + MAX; year 9999 in epoch seconds
            began = time.monotonic()
            status, body = _post(server, "far", far)
            assert status == 400, body[:300]
            assert body.startswith("body: event <http://example.org/far> at "), body
            assert f"evaluate more than {MAX_DERIVED_CLOSES:,} window closes in one request" in body, body
            assert time.monotonic() - began < 30
        step = MAX_DERIVED_CLOSES // 2 + 1  # each event within the limit, the request past it
        events = b"".join(_event(f"s{i}", 1 + i * step) for i in (1, 2, 3))
        status, body = http_exchange(server, "POST", f"/streams?stream={STREAM}", events, NQUADS)
        assert status == 400 and body.startswith("body: ") and "in one request" in body, body[:300]
        boundary = "rsep-boundary"
        merged = (f'--{boundary}\r\nContent-Disposition: form-data; name="stream"\r\n\r\n{STREAM}\r\n'
                  f'--{boundary}\r\nContent-Disposition: form-data; name="events"; filename="far.nq"\r\n'
                  "Content-Type: application/n-quads\r\n\r\n").encode()  # fmt: skip
        merged += _event("m", 253402300799) + f"\r\n--{boundary}--\r\n".encode()
        status, body = http_exchange(server, "POST", "/streams/merged", merged,
                                     f"multipart/form-data; boundary={boundary}")  # fmt: skip
        assert status == 400 and body.startswith("events: event <http://example.org/m> at "), body[:300]
        health = server.get("/health")
        assert health["log_position"] == 1 and health["failed_queries"] == [], health
        status, body = _post(server, "e2", 51)  # closes 11 (the first window's end) ... 50
        assert status == 202, body
        assert [d["time"] for d in json.loads(body)["derived"]] == list(range(11, 51))
    finally:
        server.terminate()
