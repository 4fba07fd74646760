"""Any timestamp ingest accepts keeps the server working (issue 15, item 2): dateTimes outside
years 1-9999 in UTC are refused at their triple; numbers up to 1e300 (epoch milliseconds) are
accepted as numbers, larger ones (which the windows' microseconds overflow) refused; a log
already holding a time past the range (written before this check) does not wedge ingest after a
restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsep.plugin import EventLog, GraphEvent, Timestamp
from tests.support.servers import Server, http_exchange

PROV = "<http://www.w3.org/ns/prov#generatedAtTime>"
XSD = "http://www.w3.org/2001/XMLSchema#"
STREAM = "http://example.org/s"
NQUADS = "application/n-quads"


def _event(name: str, time: str | None) -> bytes:
    lines = f'<http://example.org/{name}> <http://example.org/p> "1" <http://example.org/{name}> .\n'
    if time is not None:
        lines += f"<http://example.org/{name}> {PROV} {time} .\n"
    return lines.encode()


def _post(server: Server, body: bytes) -> tuple[int, str]:
    return http_exchange(server, "POST", f"/streams?stream={STREAM}", body, NQUADS)


@pytest.mark.parametrize(
    "time",
    [f'"9999-12-31T23:59:59-14:00"^^<{XSD}dateTime>', f'"10000-01-01T00:00:00Z"^^<{XSD}dateTime>',
     f'"-0001-01-01T00:00:00Z"^^<{XSD}dateTime>', f'"0001-01-01T00:00:00+01:00"^^<{XSD}dateTime>'],
)  # fmt: skip
def test_datetimes_outside_the_years_rsep_reads_are_400_at_the_triple(tmp_path: Path, time: str) -> None:
    server = Server(tmp_path / "data", tmp_path / "log")
    try:
        status, body = _post(server, _event("e1", time))
        assert status == 400, body
        assert body.startswith("body:2:") and "0001 to 9999" in body, body
        for name in ("e2", "e3"):  # the server goes on, with and without a timestamp
            status, body = _post(server, _event(name, f'"2026-11-26T10:00:00Z"^^<{XSD}dateTime>'))
            assert status == 202, body
        assert _post(server, _event("e4", None))[0] == 202
    finally:
        server.terminate()


def test_epoch_milliseconds_are_numbers_and_ingest_survives_them_and_a_restart(tmp_path: Path) -> None:
    millis = f'"1764170000123"^^<{XSD}integer>'
    server = Server(tmp_path / "data", tmp_path / "log")
    try:
        assert _post(server, _event("e1", millis))[0] == 202
        status, body = _post(server, _event("e2", None))  # arrival time is a dateTime: refused
        assert status == 400 and "no prov:generatedAtTime" in body, body
        assert _post(server, _event("e3", f'"1764170000124"^^<{XSD}integer>'))[0] == 202
    finally:
        server.terminate()
    again = Server(tmp_path / "data", tmp_path / "log")
    try:
        assert _post(again, _event("e4", None))[0] == 400
        assert _post(again, _event("e5", f'"1764170000125"^^<{XSD}integer>'))[0] == 202
    finally:
        again.terminate()


PRODUCER = f"""REGISTER STREAM <http://example.org/counts> AS
CONSTRUCT {{ <http://example.org/x> <http://example.org/n> ?n }}
FROM STREAM <{STREAM}> [RANGE 10s STEP 5s]
WHERE {{ {{ SELECT (COUNT(?e) AS ?n) WHERE {{ ?e <http://example.org/p> ?o }} }} }}"""


@pytest.mark.parametrize("time", ["1e308", "-1e301", "1.0e301"])
def test_a_number_too_large_for_the_windows_is_400_at_the_triple(tmp_path: Path, time: str) -> None:
    """Windows count microseconds: with a REGISTER STREAM producer, 1e308 was a 500 (an
    OverflowError deriving its closes), and so was every later request at that time."""
    server = Server(tmp_path / "data", tmp_path / "log")
    try:
        status, body = http_exchange(
            server, "POST", "/queries", PRODUCER.encode(), "application/sparql-query"
        )
        assert status == 201, body
        assert _post(server, _event("e1", f'"1"^^<{XSD}integer>'))[0] == 202
        status, body = _post(server, _event("e2", f'"{time}"^^<{XSD}double>'))
        assert status == 400, body
        assert body.startswith("body:2:1: ") and "too large: rsep reads numbers up to 1e300" in body, body
        status, body = _post(server, _event("e3", f'"2"^^<{XSD}integer>'))
        assert status == 202, body
        assert server.get("/health")["failed_queries"] == []
    finally:
        server.terminate()


def test_a_log_holding_a_time_past_year_9999_does_not_wedge_ingest(tmp_path: Path) -> None:
    """Written by a server before the check: the newest time is 10000-01-01T09:59:59Z in UTC."""
    late = Timestamp(253402300799.0 + 14 * 3600, "9999-12-31T23:59:59-14:00", False)
    EventLog(tmp_path / "data" / "log").append([GraphEvent(STREAM, "<http://example.org/e0>", late, "")])
    server = Server(tmp_path / "data", tmp_path / "log")
    try:
        status, body = _post(server, _event("e1", None))
        assert status == 202, body
        status, body = _post(server, _event("e2", f'"2026-11-26T10:00:00Z"^^<{XSD}dateTime>'))
        assert status == 400 and "older than the newest" in body, body
    finally:
        server.terminate()
