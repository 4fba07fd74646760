"""Safe by default (issue 15, item 5): without a token, other web origins cannot write; `Host`
must name the server (DNS rebinding); the access modes (rsep.endpoint.access)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from rsep.endpoint.app import create_app
from rsep.plugin import InvalidInput
from tests.support.servers import Server, http_exchange
from tests.support.streaming_endpoint import config as streaming_config
from tests.support.streaming_endpoint import shut_down

FORM = "application/x-www-form-urlencoded"
INSERT = "update=INSERT+DATA+%7B+%3Curn%3Aa%3E+%3Curn%3Ab%3E+%3Curn%3Ac%3E+%7D"
DROP = "update=DROP+ALL"
COUNT = "query=SELECT+(COUNT(*)+AS+%3Fn)+%7B+%3Fs+%3Fp+%3Fo+%7D"
EVIL = {"Origin": "http://evil.example"}


def client(tmp_path: Path, **config: Any) -> FlaskClient:
    settings = {"RSEP_DATA_DIR": str(tmp_path / "data"), "RSEP_START_STREAMING": False, "TESTING": True}
    return create_app({**settings, **config}).test_client()


def triples(web: FlaskClient, **headers: str) -> int:
    answer = web.post("/sparql", data=COUNT, content_type=FORM, headers=headers)
    assert answer.status_code == 200, answer.get_data(as_text=True)
    return int(answer.json["results"]["bindings"][0]["n"]["value"])


def test_other_origins_read_but_do_not_write(tmp_path: Path) -> None:
    web = client(tmp_path)
    assert web.post("/sparql", data=INSERT, content_type=FORM).status_code == 204  # curl: no Origin
    for headers in (
        EVIL,
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
        {"Origin": "null"},
    ):
        refused = web.post("/sparql", data=DROP, content_type=FORM, headers=headers)
        assert refused.status_code == 403, headers
        assert "another web origin" in refused.get_data(as_text=True)
        body = web.post("/sparql", data="DROP ALL", content_type="application/sparql-update", headers=headers)
        assert body.status_code == 403
        assert triples(web, **headers) == 1  # reads stay open, and nothing was dropped
    assert web.post("/queries", data="SELECT * { ?s ?p ?o }", headers=EVIL).status_code == 403
    assert web.put("/store?default", data="<urn:x> <urn:y> <urn:z> .", content_type="text/turtle",
                   headers=EVIL).status_code == 403  # fmt: skip
    assert web.delete("/store?default", headers=EVIL).status_code == 403
    same = {"Origin": "http://localhost", "Sec-Fetch-Site": "same-origin"}
    assert web.post("/sparql", data=DROP, content_type=FORM, headers=same).status_code == 204
    assert triples(web) == 0


def test_the_host_must_name_this_server(tmp_path: Path) -> None:
    web = client(tmp_path, RSEP_BIND_HOST="0.0.0.0")
    for host in ("localhost:7878", "127.0.0.1:7878", "[::1]:7878", "10.1.2.3"):
        assert web.get("/sparql?query=ASK%7B%7D", headers={"Host": host}).status_code == 200, host
    refused = web.get("/sparql?query=ASK%7B%7D", headers={"Host": "rebound.evil.example:7878"})
    assert refused.status_code == 400
    assert "--allowed-host rebound.evil.example" in refused.get_data(as_text=True)
    named = client(tmp_path / "named", RSEP_ALLOWED_HOSTS=("rsep.example.org",))
    assert named.get("/sparql?query=ASK%7B%7D", headers={"Host": "rsep.example.org"}).status_code == 200
    anyone = client(tmp_path / "any", RSEP_ALLOWED_HOSTS=("*",))
    assert anyone.get("/sparql?query=ASK%7B%7D", headers={"Host": "whatever.example"}).status_code == 200


def test_modes(tmp_path: Path) -> None:
    read_only = client(tmp_path / "ro", RSEP_ACCESS="read-only")
    assert read_only.post("/sparql", data=INSERT, content_type=FORM).status_code == 403
    assert triples(read_only) == 0
    opened = client(tmp_path / "open", RSEP_ACCESS="open")
    assert opened.post("/sparql", data=INSERT, content_type=FORM, headers=EVIL).status_code == 204
    token = {"Authorization": "Bearer s3cret"}
    writes_token = client(tmp_path / "wt", RSEP_ACCESS="writes-token", RSEP_TOKEN="s3cret")
    assert triples(writes_token, **EVIL) == 0  # reads need no token
    assert writes_token.post("/sparql", data=INSERT, content_type=FORM).status_code == 401
    assert (
        writes_token.post("/sparql", data=INSERT, content_type=FORM, headers={**token, **EVIL}).status_code
        == 204
    )
    guarded = client(tmp_path / "token", RSEP_TOKEN="s3cret")  # same-origin with a token: all need it
    assert guarded.post("/sparql", data=COUNT, content_type=FORM).status_code == 401
    with pytest.raises(InvalidInput, match="needs a token"):
        client(tmp_path / "bad", RSEP_ACCESS="writes-token")


def test_a_cross_origin_drop_all_is_refused_by_rsep_serve(server: Server) -> None:
    status, body = http_exchange(server, "POST", "/sparql", INSERT.encode(), FORM)
    assert status == 204, body
    status, body = http_exchange(server, "POST", "/sparql", DROP.encode(), FORM, headers=EVIL)
    assert status == 403, body
    status, body = http_exchange(server, "GET", "/sparql?query=ASK%7B%3Curn%3Aa%3E%3Fp%3Fo%7D")
    assert status == 200 and "true" in body
    status, body = http_exchange(server, "GET", "/sparql?query=ASK%7B%7D", headers={"Host": "evil.example"})
    assert status == 400, body


def test_the_stream_parameter_is_one_iri_without_control_characters(tmp_path: Path) -> None:
    """A NUL in `?stream=` was accepted, and a repeated `?stream=` silently ignored."""
    app = create_app(streaming_config(tmp_path / "streaming"))
    try:
        web = app.test_client()
        body = b'<urn:e> <urn:p> "1" <urn:e> .\n'
        for query in ("stream=http://example.org/s%00", "stream=http://example.org/a&stream=http://example.org/b",
                      "stream=http://example.org/%01x"):  # fmt: skip
            answer = web.post(f"/streams?{query}", data=body, content_type="application/n-quads")
            assert answer.status_code == 400, query
            assert answer.get_data(as_text=True).startswith("stream: ")
        assert web.post("/streams?stream=http://example.org/s", data=body,
                        content_type="application/n-quads").status_code == 202  # fmt: skip
    finally:
        shut_down(app)
