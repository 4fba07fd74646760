"""POST /streams: durable ingest, whole-payload rejection with positions,
order, content types, arrival times, blank-node scopes."""

from __future__ import annotations

import gc
from datetime import UTC, datetime

from rsep.endpoint.app import create_app
from tests.support.streaming_endpoint import config, service, shut_down

STREAM = "http://example.org/sensors"
PROV = "<http://www.w3.org/ns/prov#generatedAtTime>"
XSD = "http://www.w3.org/2001/XMLSchema#"
TRIG = f"""
@prefix : <http://example.org/> .
@prefix prov: <http://www.w3.org/ns/prov#> .
@prefix xsd: <{XSD}> .
:e1 {{ :s1 :temp 21 . }}
:e1 prov:generatedAtTime "2026-11-22T10:00:00Z"^^xsd:dateTime .
:e2 {{ :s1 :temp 22 . }}
:e2 prov:generatedAtTime "2026-11-22T10:01:00Z"^^xsd:dateTime .
"""


def post(client, body, stream=STREAM, content_type="application/trig", **headers):
    url = "/streams" if stream is None else f"/streams?stream={stream}"
    return client.post(url, data=body, content_type=content_type, headers=headers)


def logged(app):
    return list(service(app).log.read())


def test_ingest_answers_202_once_the_events_are_in_the_log(app):
    client = app.test_client()
    response = post(client, TRIG)
    assert response.status_code == 202
    assert response.json == {
        "stream": STREAM, "accepted": 2, "first_position": 0, "next_position": 2, "derived": []
    }  # fmt: skip
    records = logged(app)
    assert [(r.position, r.event.stream, r.event.name) for r in records] == [
        (0, STREAM, "<http://example.org/e1>"),
        (1, STREAM, "<http://example.org/e2>"),
    ]
    assert (
        records[0].event.ntriples
        == f'<http://example.org/s1> <http://example.org/temp> "21"^^<{XSD}integer> .\n'
    )


def test_ingest_takes_n_quads(app):
    body = f'<urn:s> <urn:p> "x" <urn:g1> .\n<urn:g1> {PROV} "5"^^<{XSD}integer> .\n'
    response = post(app.test_client(), body, content_type="application/n-quads")
    assert response.status_code == 202 and response.json["accepted"] == 1
    assert logged(app)[0].event.time.lexical == "5"


def test_a_malformed_payload_is_rejected_whole_with_its_position(app):
    client = app.test_client()
    bad = TRIG + ":e3 { :s1 :temp 23 \n"  # an unterminated graph on line 9
    response = post(client, bad)
    assert response.status_code == 400
    assert response.get_data(as_text=True).startswith("body:10:")
    as_json = post(client, bad, Accept="application/json").json
    assert (as_json["parameter"], as_json["line"]) == ("body", 10)
    assert logged(app) == []  # nothing of it stored, not even e1 and e2


def test_a_payload_error_after_parsing_is_located_too(app):
    body = TRIG + ':e2 <http://example.org/other> "x" .\n'
    response = post(app.test_client(), body)
    assert response.status_code == 400
    text = response.get_data(as_text=True)
    assert text.startswith("body:") and "prov:generatedAtTime" in text
    assert logged(app) == []


def test_events_older_than_the_log_are_rejected_whole(app):
    client = app.test_client()
    assert post(client, TRIG).status_code == 202
    older = TRIG.replace(":e1", ":e3").replace("10:00:00", "10:05:00").replace("10:01:00", "09:59:00")
    response = post(client, older)
    assert response.status_code == 400
    # the newest time is named: without it, a log stuck at a far-future time gave no clue
    assert "older than the newest accepted event, at 2026-11-22T10:01:00Z" in response.get_data(as_text=True)
    assert [r.event.name for r in logged(app)] == ["<http://example.org/e1>", "<http://example.org/e2>"]


def test_equal_timestamps_in_a_later_request_are_accepted(app):
    client = app.test_client()
    assert post(client, TRIG).status_code == 202
    same = TRIG.replace(":e1", ":e3").replace(":e2", ":e4").replace("10:00:00", "10:01:00")
    assert post(client, same).status_code == 202
    assert len(logged(app)) == 4


def test_other_content_types_are_415(app):
    response = post(app.test_client(), TRIG, content_type="text/turtle")
    assert response.status_code == 415
    assert "application/trig" in response.get_data(as_text=True)


def test_the_stream_must_be_given_as_an_absolute_iri(app):
    client = app.test_client()
    missing = post(client, TRIG, stream=None)
    assert missing.status_code == 400 and missing.get_data(as_text=True).startswith("stream: missing")
    relative = post(client, TRIG, stream="sensors/1")
    assert relative.status_code == 400 and "not an absolute IRI" in relative.get_data(as_text=True)
    assert post(client, TRIG, stream=f"<{STREAM}>").status_code == 202  # angle brackets are fine


def test_events_without_a_timestamp_share_one_arrival_time(app):
    body = "@prefix : <http://example.org/> .\n:e1 { :s :p 1 . }\n:e2 { :s :p 2 . }\n"
    before = datetime.now(UTC).timestamp()
    assert post(app.test_client(), body).status_code == 202
    times = {r.event.time for r in logged(app)}
    assert len(times) == 1
    (time,) = times
    assert before - 1 <= time.seconds <= datetime.now(UTC).timestamp() + 1
    assert not time.numeric and time.lexical.endswith("Z")


def test_arrival_time_is_never_earlier_than_the_newest_event(app):
    client = app.test_client()
    future = TRIG.replace("2026-11-22T10:01:00Z", "2999-01-01T00:00:00Z")
    assert post(client, future).status_code == 202
    untimed = "@prefix : <http://example.org/> .\n:e9 { :s :p 9 . }\n"
    assert post(client, untimed).status_code == 202
    last = logged(app)[-1].event.time
    assert last.seconds == datetime(2999, 1, 1, tzinfo=UTC).timestamp()
    assert last.lexical.startswith("2999-01-01T00:00:00")


def test_blank_nodes_are_scoped_to_their_request(app):
    client = app.test_client()
    body = f'_:g {{ _:s <urn:p> "1" . }}\n_:g {PROV} "1"^^<{XSD}integer> .\n'
    assert post(client, body).status_code == 202
    assert post(client, body.replace('"1"^^', '"2"^^')).status_code == 202
    first, second = logged(app)
    assert first.event.name != second.event.name
    assert first.event.ntriples.split()[0] != second.event.ntriples.split()[0]


def test_an_empty_payload_accepts_nothing(app):
    response = post(app.test_client(), "")
    assert response.status_code == 202 and response.json["accepted"] == 0


NUMBERED = """@prefix : <http://example.org/> .
@prefix prov: <http://www.w3.org/ns/prov#> .
:n1 { :s1 :temp 20 . }
:n1 prov:generatedAtTime 2000000000 .
"""
KINDS = (
    "the timestamps of one event log must all be xsd:dateTimes or all numbers (epoch seconds and "
    "abstract time units do not compare)"
)


def test_a_number_after_datetimes_is_refused_at_its_timestamp_not_read_as_epoch_seconds(app):
    """2000000000 would sort after 2026-11-22 as epoch seconds: it is refused, not compared."""
    client = app.test_client()
    assert post(client, TRIG).status_code == 202
    response = post(client, NUMBERED, Accept="application/json")
    assert response.status_code == 400
    assert (response.json["parameter"], response.json["line"], response.json["column"]) == ("body", 4, 1)
    assert post(client, NUMBERED).get_data(as_text=True) == (
        "body:4:1: event <http://example.org/n1> at 2000000000 is a number, but the event log's "
        f"timestamps are xsd:dateTimes: {KINDS}\n"
    )
    assert [r.event.name for r in logged(app)] == ["<http://example.org/e1>", "<http://example.org/e2>"]


def test_a_payload_mixing_datetimes_and_numbers_is_refused_whole(app):
    mixed = TRIG.replace('"2026-11-22T10:01:00Z"^^xsd:dateTime', "2000000000")
    response = post(app.test_client(), mixed)
    assert response.status_code == 400
    assert response.get_data(as_text=True) == (
        "body:8:1: event <http://example.org/e2> at 2000000000 is a number, but event "
        "<http://example.org/e1> of the same request is at 2026-11-22T10:00:00Z, an xsd:dateTime: "
        f"{KINDS}\n"
    )
    assert logged(app) == []


def test_the_logs_kind_of_time_survives_a_restart(make_app, data_dir):
    first = create_app(config(data_dir))
    assert post(first.test_client(), NUMBERED).status_code == 202
    shut_down(first)
    del first
    gc.collect()  # closes the store, as the end of the process would
    second = make_app()
    client = second.test_client()
    refused = post(client, TRIG)
    assert refused.status_code == 400
    assert refused.get_data(as_text=True).startswith(
        "body:6:1: event <http://example.org/e1> at 2026-11-22T10:00:00Z is an xsd:dateTime, but the "
        "event log's timestamps are numbers: "
    )
    later = NUMBERED.replace(":n1", ":n2").replace("2000000000", "2000000001")
    assert post(client, later).status_code == 202
    assert [r.event.time.lexical for r in logged(second)] == ["2000000000", "2000000001"]


def test_an_event_without_a_timestamp_is_refused_on_a_log_of_numbers(app):
    client = app.test_client()
    assert post(client, NUMBERED).status_code == 202
    untimed = "@prefix : <http://example.org/> .\n:u1 { :s :p 1 . }\n"
    response = post(client, untimed)
    assert response.status_code == 400
    text = response.get_data(as_text=True)
    assert text.startswith("body:2:1: event <http://example.org/u1> at ") and text.endswith(
        f"is an xsd:dateTime, but the event log's timestamps are numbers: {KINDS} "
        "(<http://example.org/u1> has no prov:generatedAtTime: it was given the arrival time)\n"
    )
    assert len(logged(app)) == 1
