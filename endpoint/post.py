"""`rsep post URL --stream IRI=FILE ...`: replay event files into a running endpoint.

The endpoint accepts events in timestamp order across all streams, so the files are merged by
time first (as `rsep run` merges them) and posted in that order: runs of consecutive events of
one stream go as one N-Quads request of at most `batch` events. Each request is all or nothing
on the server, so a failure leaves exactly the events of the earlier requests accepted; the
error says how many that was.

As fast as the endpoint takes them by default; `--speed X` replays in event time (an event t
seconds after the first is posted t / X seconds after the start: 1 is real time), `--rate N` at
N events per second. A paced request holds the events due within `PACE_SLACK` of its first one.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from rsep.endpoint.progress import Progress
from rsep.endpoint.run_command import StreamFile
from rsep.plugin import GraphEvent, InvalidInput, number_events, read_event_file

TIMEOUT_SECONDS = 60.0
PACE_SLACK = 0.05
"""Seconds: a paced request carries the events due this long after its first."""


class PostError(InvalidInput):
    """A request the endpoint refused (or could not be reached), with what was accepted before."""


@dataclass(frozen=True, slots=True)
class PostRequest:
    url: str
    """The endpoint's base URL, e.g. http://127.0.0.1:7878/"""
    streams: Sequence[StreamFile]
    token: str | None = None
    batch: int = 500
    rate: float | None = None
    """Events per second (`--rate`); None: no pacing by count."""
    speed: float | None = None
    """Event time replayed this many times faster than real time (`--speed`); None: no pacing."""


@dataclass(frozen=True, slots=True)
class Pace:
    """When each event is due, in seconds after the first was posted: by event time over
    `speed`, or by its index over `rate`; always 0 without either."""

    rate: float | None = None
    speed: float | None = None

    def due(self, index: int, event: GraphEvent, first: GraphEvent) -> float:
        if self.speed is not None:
            return max(0.0, (event.time.seconds - first.time.seconds) / self.speed)
        if self.rate is not None:
            return index / self.rate
        return 0.0

    @property
    def paced(self) -> bool:
        return self.speed is not None or self.rate is not None


def post(
    request: PostRequest, progress: Progress | None = None, sleep: Callable[[float], None] = time.sleep
) -> int:
    """Post every event of the files; returns how many the endpoint accepted. `progress` counts
    the events of each accepted request."""
    progress = progress or Progress(False, "")
    per_stream = [
        read_event_file(stream.path, stream.iri, scope=f"s{index}")
        for index, stream in enumerate(request.streams)
    ]
    merged = [numbered.event for numbered in number_events(per_stream)]
    progress.set_total(len(merged))
    pace = Pace(request.rate, request.speed)
    began = time.monotonic()
    accepted = 0
    for due, stream, events in requests(merged, request.batch, pace):
        wait = began + due - time.monotonic()
        if wait > 0:
            sleep(wait)
        try:
            sent = _send(request, stream, events)
        except PostError as error:
            raise PostError(f"{error} ({accepted} events accepted before this request)") from None
        accepted += sent
        progress.add(sent)
    return accepted


def requests(
    events: Sequence[GraphEvent], batch: int, pace: Pace = Pace()
) -> Iterator[tuple[float, str, list[GraphEvent]]]:
    """(when it is due, stream, events) of each request: consecutive events of one stream, at
    most `batch`, and, when paced, due within PACE_SLACK of the request's first event."""
    start = 0
    while start < len(events):
        head = events[start]
        due = pace.due(start, head, events[0])
        stop = start + 1
        while stop < len(events) and stop - start < batch and events[stop].stream == head.stream:
            if pace.paced and pace.due(stop, events[stop], events[0]) > due + PACE_SLACK:
                break
            stop += 1
        yield due, head.stream, list(events[start:stop])
        start = stop


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
