"""`rsep post URL --stream IRI=FILE ...`: replay event files into a running endpoint.

The endpoint accepts events in timestamp order across all streams, so the files are merged by
time first (as `rsep run` merges them) and posted in that order: runs of consecutive events of
one stream go as one N-Quads request of at most `batch` events. Each request is all or nothing
on the server, so a failure leaves exactly the events of the earlier requests accepted; the
error says how many that was.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import groupby

from rsep.endpoint.run_command import StreamFile
from rsep.plugin import GraphEvent, InvalidInput, number_events, read_event_file

TIMEOUT_SECONDS = 60.0


class PostError(InvalidInput):
    """A request the endpoint refused (or could not be reached), with what was accepted before."""


@dataclass(frozen=True, slots=True)
class PostRequest:
    url: str
    """The endpoint's base URL, e.g. http://127.0.0.1:7878/"""
    streams: Sequence[StreamFile]
    token: str | None = None
    batch: int = 500


def post(request: PostRequest) -> int:
    """Post every event of the files; returns how many the endpoint accepted."""
    per_stream = [
        read_event_file(stream.path, stream.iri, scope=f"s{index}")
        for index, stream in enumerate(request.streams)
    ]
    merged = [numbered.event for numbered in number_events(per_stream)]
    accepted = 0
    for stream, events in _requests(merged, request.batch):
        try:
            accepted += _send(request, stream, events)
        except PostError as error:
            raise PostError(f"{error} ({accepted} events accepted before this request)") from None
    return accepted


def _requests(events: Sequence[GraphEvent], batch: int) -> Iterator[tuple[str, list[GraphEvent]]]:
    for stream, run in groupby(events, key=lambda event: event.stream):
        group = list(run)
        for start in range(0, len(group), batch):
            yield stream, group[start : start + batch]


def _send(request: PostRequest, stream: str, events: Sequence[GraphEvent]) -> int:
    url = request.url.rstrip("/") + "/streams?" + urllib.parse.urlencode({"stream": stream})
    headers = {"Content-Type": "application/n-quads", "Accept": "application/json"}
    if request.token:
        headers["Authorization"] = f"Bearer {request.token}"
    body = "".join(event.nquads() for event in events).encode("utf-8")
    http = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(http, timeout=TIMEOUT_SECONDS) as response:
            answer = json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        raise PostError(f"{url}: HTTP {error.code}: {_message(error)}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise PostError(f"{url}: cannot reach the endpoint: {reason}") from None
    return int(answer.get("accepted", len(events)))


def _message(error: urllib.error.HTTPError) -> str:
    text = error.read().decode("utf-8", "replace")
    try:
        found = json.loads(text).get("message")
    except (ValueError, AttributeError):
        found = None
    return str(found or text.strip() or error.reason)
