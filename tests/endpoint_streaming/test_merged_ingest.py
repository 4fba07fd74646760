"""`POST /streams/merged`: the smart-grid example's three files in one multipart request, merged by
time as `rsep post` merges them, give the match that posting them one by one in time order gives;
a bad file is a 400 naming it, and nothing is stored."""

from __future__ import annotations

import io

from flask import Flask

from tests.support.smart_grid import SMART_GRID, SMART_GRID_STREAMS, load_kb
from tests.support.streaming_endpoint import caught_up, register, service, wait_for


def form(files: dict[str, tuple[str, bytes]]) -> dict:
    """A multipart form: per stream IRI, (file name, bytes); `stream` fields in the files' order."""
    return {"stream": list(files), "events": [(io.BytesIO(data), name) for name, data in files.values()]}


def test_three_files_merged_by_time_give_the_example_match(app: Flask) -> None:
    load_kb(app)
    client = app.test_client()
    query = register(client, (SMART_GRID / "query.rq").read_text()).json
    files = {iri: (path.name, path.read_bytes()) for iri, path in SMART_GRID_STREAMS.items()}
    response = client.post("/streams/merged", data=form(files), content_type="multipart/form-data")
    assert response.status_code == 202, response.get_data(as_text=True)
    assert response.json["accepted"] == 8 and response.json["streams"] == sorted(SMART_GRID_STREAMS)
    times = [record.event.time.seconds for record in service(app).log.read(0)]
    assert times == sorted(times)
    wait_for(caught_up(app))
    rows = client.get(f"/queries/{query['id']}/results").json["results"]["bindings"]
    assert [(row["start"]["value"], row["end"]["value"], row["city"]["value"]) for row in rows] == [
        ("2026-11-22T10:00:00Z", "2026-11-22T10:15:00Z", "http://smartgrid.org/Lyon")
    ]


def test_a_bad_file_is_named_and_nothing_is_stored(app: Flask) -> None:
    client = app.test_client()
    (first, path), *_ = SMART_GRID_STREAMS.items()
    files = {first: (path.name, path.read_bytes()), "http://example.org/bad": ("bad.trig", b"<a> <b> .")}
    response = client.post("/streams/merged", data=form(files), content_type="multipart/form-data",
                           headers={"Accept": "application/json"})  # fmt: skip
    assert response.status_code == 400
    assert response.json["parameter"] == "bad.trig" and response.json["line"] == 1
    assert service(app).log.next_position == 0
    one = {"stream": [first, first], "events": [(io.BytesIO(b""), "x.trig")]}
    response = client.post("/streams/merged", data=one, content_type="multipart/form-data")
    assert response.status_code == 400 and "2 stream IRIs for 1 files" in response.get_data(as_text=True)
