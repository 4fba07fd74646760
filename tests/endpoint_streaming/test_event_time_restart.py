"""A stream's own lateness (`POST /streams?max-lateness=`) across a restart (issue 18): what the
reorder buffer promises a stream before a crash, it should promise after it."""

from __future__ import annotations

import gc
from pathlib import Path

from rsep.endpoint.app import create_app
from rsep.plugin.graph_events import GraphEvent, Timestamp
from tests.support.streaming_endpoint import config, shut_down

NUMBERS = "http://example.org/numbers"


def n(t: float, name: str) -> str:
    return GraphEvent(NUMBERS, f"<http://example.org/{name}>", Timestamp(t, repr(t), True), "").nquads()


def posted(client, t: float, name: str) -> int:
    url = f"/streams?stream={NUMBERS}&max-lateness=60"
    response = client.post(url, data=n(t, name), content_type="application/n-quads")
    return response.status_code


def test_a_streams_own_lateness_holds_after_a_crash(data_dir: Path) -> None:
    """--max-lateness 1, the stream posting with max-lateness=60: 100 then 50 are held (W = 40). The
    same client posting 60 next is on time without a crash; after one, it should be too."""
    first = create_app(config(data_dir, RSEP_MAX_LATENESS=1.0, RSEP_START_STREAMING=False))
    client = first.test_client()
    assert posted(client, 100, "a") == 202
    assert posted(client, 50, "b") == 202
    del client, first  # as kill -9 after the 202s
    gc.collect()
    second = create_app(config(data_dir, RSEP_MAX_LATENESS=1.0))
    try:
        assert posted(second.test_client(), 60, "c") == 202
    finally:
        shut_down(second)


def test_without_a_crash_the_streams_own_lateness_holds(tmp_path: Path) -> None:
    app = create_app(config(tmp_path, RSEP_MAX_LATENESS=1.0))
    try:
        client = app.test_client()
        assert [posted(client, t, name) for t, name in ((100, "a"), (50, "b"), (60, "c"))] == [202] * 3
    finally:
        shut_down(app)
