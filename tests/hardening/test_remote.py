"""Server-side request forgery (issue 15, item 5): SERVICE and LOAD fetch nothing unless
`--allow-remote` names the host; the refusal is 400 at the keyword, and no request leaves."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from rsep.endpoint.app import create_app
from rsep.plugin.store.remote import remote_calls

FORM = "application/x-www-form-urlencoded"


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        _Recorder.hits.append(self.path)
        body = (
            b'{"head": {"vars": ["s"]}, "results": {"bindings": [{"s": {"type": "uri", "value": "urn:x"}}]}}'
        )
        self.send_response(200)
        self.send_header("Content-Type", "application/sparql-results+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def internal() -> Iterator[str]:
    """An 'internal' HTTP service: what a forged request would reach."""
    _Recorder.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/sparql"
    server.shutdown()


def client(tmp_path: Path, **config: Any) -> FlaskClient:
    base = {"RSEP_DATA_DIR": str(tmp_path / "data"), "RSEP_START_STREAMING": False, "TESTING": True}
    return create_app({**base, **config}).test_client()


def ask(web: FlaskClient, query: str) -> Any:
    return web.get("/sparql", query_string={"query": query})


def test_service_and_load_are_off_by_default(tmp_path: Path, internal: str) -> None:
    web = client(tmp_path)
    query = f"SELECT * WHERE {{\n  SERVICE <{internal}> {{ ?s ?p ?o }} }}"
    refused = web.get("/sparql", query_string={"query": query})
    assert refused.status_code == 400
    assert refused.get_data(as_text=True).startswith(
        f"query:2:3: SERVICE <{internal}>: this server fetches no"
    )
    prefixed = "PREFIX in: <http://127.0.0.1/> SELECT * WHERE { SERVICE SILENT in:x { ?s ?p ?o } }"
    assert web.get("/sparql", query_string={"query": prefixed}).status_code == 400
    load = web.post("/sparql", data=f"LOAD <{internal}>", content_type="application/sparql-update")
    assert load.status_code == 400 and "LOAD" in load.get_data(as_text=True)
    assert _Recorder.hits == []


def test_allowed_hosts_only(tmp_path: Path, internal: str) -> None:
    web = client(tmp_path, RSEP_ALLOW_REMOTE=("127.0.0.1",))
    answer = web.get(
        "/sparql", query_string={"query": f"SELECT * WHERE {{ SERVICE <{internal}> {{ ?s ?p ?o }} }}"}
    )
    assert answer.status_code == 200 and "urn:x" in answer.get_data(as_text=True)
    assert len(_Recorder.hits) == 1
    other = web.get(
        "/sparql", query_string={"query": "SELECT * { SERVICE <http://169.254.169.254/> { ?s ?p ?o } }"}
    )
    assert other.status_code == 400 and "not an http(s) address of an allowed host" in other.get_data(
        as_text=True
    )
    variable = web.get(
        "/sparql", query_string={"query": "SELECT * { VALUES ?e { <http://x/> } SERVICE ?e { } }"}
    )
    assert variable.status_code == 400
    assert len(_Recorder.hits) == 1


def test_strings_comments_and_names_are_no_calls() -> None:
    text = 'PREFIX ex: <http://e/> SELECT * { ?s ex:SERVICE "SERVICE <http://x/>" ; ex:load ?load } # LOAD <http://y/>'
    assert remote_calls(text, None) == ()
