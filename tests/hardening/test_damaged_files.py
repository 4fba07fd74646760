"""A data directory damaged outside rsep (a disk error, a hand edit, a bad restore): `rsep serve`
refuses to start with one line naming the file, as it does for a damaged event-log record, and
starts again with nothing lost once the file is restored. A damaged registration used to stop the
start with a JSONDecodeError traceback that named no file; so did a streams' lateness file that
was JSON but not an object of numbers."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.events import QUERIES, S1, XSD_INTEGER, synthetic_events
from tests.support.servers import Server, free_port, http_exchange, post_events, rsep_command, until

EVENTS = synthetic_events(30)
NQUADS = "application/n-quads"
STAMP = '<http://www.w3.org/ns/prov#generatedAtTime> "{seconds}"^^<' + XSD_INTEGER + ">"
EVENT = '<urn:t:{name}> <urn:t:p> "x" <urn:t:{name}> .\n<urn:t:{name}> ' + STAMP + " .\n"


def _with(**fields: object) -> Callable[[str], str]:
    """A registration's text with these fields changed."""
    return lambda text: json.dumps({**json.loads(text), **fields})


def _without_text(text: str) -> str:
    return json.dumps({key: value for key, value in json.loads(text).items() if key != "text"})


def _registered_and_stopped(data: Path, log: Path) -> tuple[str, int]:
    """A server with one query that has read EVENTS, stopped: (the query's id, its matches)."""
    server = Server(data, log)
    try:
        status, body = server.request("POST", "/queries", QUERIES["any"].encode(), "application/sparql-query")
        assert status == 201
        post_events(server, EVENTS)
        query = f"/queries/{body['id']}"
        assert until(lambda: server.get(query)["position"] == len(EVENTS), 30)
        matches = server.get(query)["matches"]
        assert matches > 0
    finally:
        assert server.terminate() == 0
    return body["id"], matches


def _assert_refused(data: Path, prefix: str, options: tuple[str, ...] = ("--engine", "inprocess")) -> None:
    """`rsep serve` on `data` exits 2 with one line starting with `prefix`, no traceback."""
    refused = rsep_command("serve", "--port", str(free_port()), "--data", str(data), *options)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.startswith(prefix), refused.stderr
    assert "Traceback" not in refused.stderr and refused.stderr.count("\n") == 1


def _assert_whole(data: Path, log: Path, query_id: str, matches: int) -> None:
    """The server starts on `data` with the query where it was and every event in the log."""
    server = Server(data, log)
    try:
        listed = server.get(f"/queries/{query_id}")
        assert (listed["status"], listed["position"], listed["matches"]) == ("running", len(EVENTS), matches)
        assert server.get("/health")["log_position"] == len(EVENTS)
    finally:
        server.terminate()


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda text: text[: len(text) // 2], id="truncated"),
        pytest.param(lambda text: "[]", id="not-an-object"),
        pytest.param(_without_text, id="no-text"),
        pytest.param(_with(start="x"), id="bad-start"),
        pytest.param(_with(start=-3), id="negative-start"),
        pytest.param(_with(text=None), id="null-text"),
        pytest.param(_with(streams="urn:t:s1"), id="streams-a-string"),
    ],
)
def test_a_damaged_registration_names_its_file_and_loses_nothing_once_restored(tmp_path, damage):
    data = tmp_path / "data"
    query_id, matches = _registered_and_stopped(data, tmp_path / "server.log")
    registration = data / "queries" / f"{query_id}.json"
    intact = registration.read_text()
    registration.write_text(damage(intact))

    _assert_refused(data, f"rsep: registration {registration}: not a registered query (")
    registration.write_text(intact)
    _assert_whole(data, tmp_path / "server.log", query_id, matches)


def test_a_registration_under_another_query_s_name_is_refused(tmp_path):
    data = tmp_path / "data"
    query_id, _ = _registered_and_stopped(data, tmp_path / "server.log")
    other = "0123456789abcdef"
    registration = data / "queries" / f"{other}.json"
    (data / "queries" / f"{query_id}.json").rename(registration)
    _assert_refused(data, f"rsep: registration {registration}: holds the query {query_id}, not {other}")


LATENESS_DAMAGES = ['["urn:t:s1"]', '{"urn:t:s1": "3"x}', '{"urn:t:s1": "x"}', '{"urn:t:s1": NaN}',
                    '{"urn:t:s1": -3}', '{"urn:t:s1": [3]}']  # fmt: skip


@pytest.mark.parametrize("damage", LATENESS_DAMAGES)
def test_a_damaged_lateness_file_names_itself_and_nothing_is_lost_once_restored(tmp_path, damage):
    """`DATA/reorder/lateness.json` keeps the `max-lateness=` of each stream; a damaged one stopped
    the start with an AttributeError or ValueError traceback, or was taken (a NaN or negative
    lateness)."""
    data, log = tmp_path / "data", tmp_path / "server.log"
    options = ("--engine", "inprocess", "--max-lateness", "10")
    server = Server(data, log, options=options)
    try:
        for name, seconds in (("e1", 10), ("e2", 20)):
            body = EVENT.format(name=name, seconds=seconds).encode()
            path = f"/streams?stream={S1}&max-lateness=PT3S"
            status, text = http_exchange(server, "POST", path, body, NQUADS)
            assert status == 202, text
    finally:
        assert server.terminate() == 0
    lateness = data / "reorder" / "lateness.json"
    intact = lateness.read_text()
    lateness.write_text(damage)
    _assert_refused(data, f"rsep: {lateness}: unreadable (", options)

    lateness.write_text(intact)
    server = Server(data, log, options=options)
    try:
        body = EVENT.format(name="e3", seconds=21).encode()
        status, text = http_exchange(server, "POST", f"/streams?stream={S1}", body, NQUADS)
        assert status == 202 and json.loads(text)["watermark"] == 18  # the stream's own 3 s, kept
        assert json.loads(text)["held"] == 2  # e2 and e3
    finally:
        server.terminate()


def _time_not_a_number(record: list) -> str:
    first, [fields, *rest] = record
    return json.dumps([first, [[*fields[:2], "x", *fields[3:]], *rest]])


LOG_DAMAGES = {
    "events-not-lists": lambda record: json.dumps([record[0], [["urn:t:s1"]]]),
    "events-not-a-list": lambda record: json.dumps([record[0], 5]),
    "time-not-a-number": _time_not_a_number,
    "position-repeated": lambda record: json.dumps([record[0] - 1, record[1]]),
    "position-skipped": lambda record: json.dumps([record[0] + 1, record[1]]),
}


@pytest.mark.parametrize("damage", LOG_DAMAGES.values(), ids=LOG_DAMAGES.keys())
def test_a_log_record_of_the_wrong_shape_names_the_file_and_offset(tmp_path, damage):
    """A JSON line that is not a record (`[position, [event fields...]]`, positions following on)
    stopped the start with a ValueError or TypeError traceback, or (a wrong position) was taken:
    the next event then got a position already used. Now it is refused as a line that is not
    JSON is, naming the file and the byte offset; the log is whole again once restored."""
    data = tmp_path / "data"
    query_id, matches = _registered_and_stopped(data, tmp_path / "server.log")
    segment = next((data / "log").glob("*.jsonl"))
    intact = segment.read_bytes()
    lines = intact.decode().splitlines(keepends=True)
    offset = sum(len(line.encode()) for line in lines[:-1])
    lines[-1] = damage(json.loads(lines[-1])) + "\n"  # the newest record: what the start reads
    segment.write_text("".join(lines))

    _assert_refused(data, f"rsep: event log {segment}, byte offset {offset}: not a log record (")
    segment.write_bytes(intact)
    _assert_whole(data, tmp_path / "server.log", query_id, matches)


def test_a_damaged_store_names_its_folder(tmp_path):
    """RocksDB reports a damaged store as a RuntimeError, which stopped the start with a traceback
    (a locked store was already one line)."""
    data = tmp_path / "data"
    query_id, matches = _registered_and_stopped(data, tmp_path / "server.log")
    current = data / "store" / "CURRENT"
    intact = current.read_bytes()
    current.write_bytes(b"garbage\n")
    _assert_refused(data, f"rsep: store {data / 'store'}: cannot be opened (Corruption: ")
    current.write_bytes(intact)
    _assert_whole(data, tmp_path / "server.log", query_id, matches)


def test_a_damaged_record_a_query_reaches_fails_that_query_only(tmp_path):
    """The start reads the newest record only; a damaged older one is found by the query that
    reads it (one registered `from=0`). The engine used to retry that read on every cycle: the
    query stayed `running`, every other query stopped with it (the engine steps the queries in
    log order), and the server log got a traceback per poll (a thousand in ten seconds)."""
    data, log = tmp_path / "data", tmp_path / "server.log"
    first_id, _ = _registered_and_stopped(data, log)
    segment = next((data / "log").glob("*.jsonl"))
    lines = segment.read_text().splitlines(keepends=True)
    offset = sum(len(line.encode()) for line in lines[:3])
    lines[3] = _time_not_a_number(json.loads(lines[3])) + "\n"
    segment.write_text("".join(lines))
    before = len(log.read_text())

    server = Server(data, log)
    try:
        status, body = server.request(
            "POST", "/queries?from=0", QUERIES["any"].encode(), "application/sparql-query"
        )
        assert status == 201
        damaged = f"/queries/{body['id']}"
        assert until(lambda: server.get(damaged)["status"] == "failed", 30)
        assert server.get(damaged)["error"].startswith(
            f"event log {segment}, byte offset {offset}: not a log record"
        )
        assert server.get("/health")["failed_queries"] == [body["id"]]

        later = synthetic_events(31)[30]
        post_events(server, [later])  # the other query goes on
        assert until(lambda: server.get(f"/queries/{first_id}")["position"] == len(EVENTS) + 1, 30)
    finally:
        server.terminate()
    written = log.read_text()[before:]
    assert "Traceback" not in written and written.count("not a log record") == 1
