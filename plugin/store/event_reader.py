"""Graph events read from TriG and N-Quads, as they stream.

An event is a named graph; its timestamp is `<graph> prov:generatedAtTime T` in the default
graph (T an xsd:dateTime or a number), and `<graph> prov:startedAtTime S` beside it (S of T's
kind, S <= T) makes it span [S, T]. Blank nodes are renamed with a per-document prefix, so two
files (or two HTTP requests) never share one by accident.

Oxigraph parses the document and prints its quads back as canonical N-Quads (both in Rust); the
lines are sorted into events here, by text: the graph name is a line's last term, and the
default graph holds timestamp lines only. That is several times cheaper than formatting every
term from Python.

**Streaming** (`stream_event_file`): a file is read in chunks, and an event is released once
it is *complete* (its graph's lines and its timestamp lines are behind the reader: a line about
another graph has come since) and nothing still open could come before it in time. Events leave
in time order; up to `REORDER_WINDOW` complete events are held, so a file may be that far out of
time order, and one that is further out (an event older than one already released) is an
error at its timestamp. Memory is then bounded by the window, not by the file, for files that
write each event's graph and its timestamp together (in any order); a file that writes all its
timestamps apart from the graphs (first or last) is still read right, only held whole.
With a **lateness** L (`rsep run --max-lateness`), the bound is time instead of a count: an event
is held until the newest time read so far, less L (the *watermark*), has passed it, so a file may
be out of order by up to L seconds whatever the rate, and an event older than the watermark when
it is read is an error at its timestamp, naming the watermark.
A whole payload (`parse_events`: HTTP ingest, `rsep post`) is read in one piece with the same
code, and rejected whole when any part of it is bad.
"""

from __future__ import annotations

import heapq
import re
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

import pyoxigraph as ox

from rsep.plugin.algebra.sparql import Literal
from rsep.plugin.algebra.terms import nt_to_term
from rsep.plugin.graph_events import GraphEvent, Timestamp, TimestampError
from rsep.plugin.store.literal_limit import bounded
from rsep.plugin.store.rdfio import (
    EVENT_FORMATS,
    MEDIA_TYPES,
    DataError,
    located,
    located_stamp,
    read_error,
    syntax_error,
)
from rsep.plugin.vocabulary import PROV_GENERATED_AT, PROV_STARTED_AT

REORDER_WINDOW = 1000
"""Complete events a streamed file holds back, so that it may be out of time order by this many."""
CHUNK_QUADS = 20_000
"""Quads parsed and printed per chunk of a streamed file."""

_GENERATED = f"<{PROV_GENERATED_AT}>"
_STARTED = f"<{PROV_STARTED_AT}>"
_TYPED = re.compile(r'"([^"\\]*)"\^\^<([^>]*)>$')
"""A typed literal with nothing escaped in its lexical form."""
_UNLABELLED = re.compile(r"_:([a-f][0-9a-f]{15,31})$")
"""How Oxigraph (0.5) names a blank node the document writes without a label (`[ ... ]`, a
collection): a random 128-bit number in hex that starts with a letter, new on every parse."""


def stream_event_file(
    path: Path, stream: str, *, scope: str, lateness: float | None = None
) -> Iterator[GraphEvent]:
    """The events of one file, in time order, read as they are needed; out of order by up to
    `REORDER_WINDOW` events, or by up to `lateness` seconds when it is given."""
    fmt = _format(path)
    reader = _Assembler(stream, scope, str(path), lambda: _read(path), REORDER_WINDOW, lateness=lateness)
    try:
        quads = ox.parse(path=str(path), format=fmt, base_iri=path.resolve().as_uri())
        while True:
            text = _nquads(islice(quads, CHUNK_QUADS))
            if not text:
                break
            yield from reader.feed(text)
    except SyntaxError as error:
        raise syntax_error(str(path), error) from None
    except OSError as error:
        raise read_error(str(path), error) from None
    yield from reader.finish()


def read_event_file(path: Path, stream: str, *, scope: str) -> list[GraphEvent]:
    """All events of one file, in time order."""
    return list(stream_event_file(path, stream, scope=scope))


def parse_events(
    data: bytes,
    fmt: ox.RdfFormat | str,
    stream: str,
    *,
    source: str,
    scope: str,
    base_iri: str | None = None,
    default_time: Timestamp | None = None,
) -> list[GraphEvent]:
    """A whole payload's events, in time order, or an error and nothing: a bad payload is
    rejected whole. Events without a timestamp get `default_time` when given (HTTP ingest stamps
    arrival time), and are an error otherwise."""
    try:
        quads = ox.parse(data, MEDIA_TYPES[fmt] if isinstance(fmt, str) else fmt, base_iri=base_iri)
        text = _nquads(bounded(quads, source=source))
    except SyntaxError as error:
        raise syntax_error(source, error) from None
    reader = _Assembler(stream, scope, source, lambda: data, None, default_time)
    return [*reader.feed(text), *reader.finish()]


def _format(path: Path) -> ox.RdfFormat:
    fmt = EVENT_FORMATS.get(path.suffix.lower())
    if fmt is None:
        known = ", ".join(sorted(EVENT_FORMATS))
        raise DataError(str(path), f"cannot tell the event file format from the extension (use {known})")
    return fmt


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _nquads(quads: Iterable[ox.Quad]) -> str:
    return (ox.serialize(quads, format=ox.RdfFormat.N_QUADS) or b"").decode()


# ---------------------------------------------------------------------- lines into events


@dataclass(slots=True)
class _Draft:
    """What has been read of one event: its lines, timestamps, and where it was last mentioned."""

    name: str
    """The graph's name as the event has it (blank nodes renamed)."""
    written: str
    """The graph's name as the payload writes it (for error positions)."""
    lines: list[str] = field(default_factory=list)
    time: Timestamp | None = None
    start: Timestamp | None = None
    first: int | None = None
    """The order in which its graph was first written (ties between equal times keep it)."""


class _Assembler:
    """Sorts N-Quads lines into events and releases complete ones in time order (see the module
    docstring); `window` None holds everything until `finish` (a whole payload)."""

    def __init__(
        self,
        stream: str,
        scope: str,
        source: str,
        data: object,
        window: int | None,
        default_time: Timestamp | None = None,
        lateness: float | None = None,
    ) -> None:
        self.stream = stream
        self.source = source
        self._data = data
        """A callable giving the payload's bytes, read only to locate an error."""
        self.window = window
        self.lateness = lateness
        """Seconds out of order allowed (None: `window` events); then the window counts nothing."""
        self.watermark = float("-inf")
        """With a lateness: the newest time of a complete event, less the lateness."""
        self.default_time = default_time
        self.names = _BlankNodes(scope)
        self.open: dict[str, _Draft] = {}
        """Events still being read, by graph name as written."""
        self.ready: list[tuple[float, int, GraphEvent]] = []
        """Complete events, a heap by (time, order of completion)."""
        self.released: set[str] = set()
        """The names of the last events released, to name a graph written in two places."""
        self._released_order: deque[str] = deque()
        self._remembered = 4 * (window or 0) + 1024
        self.last_time: float | None = None
        self.newest_lexical = ""
        self.order = 0
        self.current: str | None = None

    def feed(self, text: str) -> Iterator[GraphEvent]:
        """Read a chunk of N-Quads lines; complete events leave as the window allows. (The loop runs
        once per triple of the file: the common line, one more triple of the event being read,
        takes no call.)"""
        blank = "_:" in text
        window = self.window if self.lateness is None else None
        timed = self.lateness is not None
        ready = self.ready
        current, draft = self.current, self.open.get(self.current or "")
        for line in text.split(" .\n"):
            if not line:
                continue
            body, last = line.rsplit(" ", 1)
            if body.count(" ") >= 2 and _is_graph(last):
                if last != current or draft is None:
                    draft = self._switch(last, blank)
                    current = last
                    if draft.first is None:
                        draft.first, self.order = self.order, self.order + 1
                draft.lines.append(self.names.triple(body) + " .\n" if blank else body + " .\n")
            else:
                subject, predicate, obj = line.split(" ", 2)
                if subject != current or draft is None:
                    draft = self._switch(subject, blank)
                    current = subject
                self._stamp(draft, predicate, obj)
            held_enough = (
                len(ready) > window
                if window is not None
                else timed and ready and ready[0][0] <= self.watermark
            )
            if held_enough:
                yield from self._release(final=False)

    def _switch(self, key: str, blank: bool) -> _Draft:
        """The reader moves on to lines about `key`: the events behind it may be complete."""
        self._close_all(keep=key)
        self.current = key
        return self._draft(key, blank)

    def finish(self) -> Iterator[GraphEvent]:
        self._close_all()
        for key, draft in list(self.open.items()):
            del self.open[key]
            self._complete(draft)
        yield from self._release(final=True)

    # ------------------------------------------------------------------ lines

    def _draft(self, key: str, blank: bool) -> _Draft:
        draft = self.open.get(key)
        if draft is None:
            name = self.names.term(key) if blank and key.startswith("_:") else key
            if key in self.released:
                raise self._error(name, key, f"event graph {name} is written in two places of the file: "
                                  "write each event's triples and its timestamps together")  # fmt: skip
            draft = self.open[key] = _Draft(name, key)
        return draft

    def _stamp(self, draft: _Draft, predicate: str, obj: str) -> None:
        started = predicate == _STARTED
        if not started and predicate != _GENERATED:
            raise self._error(
                draft.name,
                draft.written,
                "the default graph may only hold prov:generatedAtTime and prov:startedAtTime triples, "
                f"found {predicate} on {draft.name}",
            )
        what = "interval start" if started else "timestamp"
        typed = _TYPED.match(obj)
        if typed is not None:  # "lexical"^^<datatype>, nothing escaped: the usual timestamp
            lexical, datatype = typed.group(1), typed.group(2)
        else:
            # (uncached: every timestamp is a new term, which would only push others out of the cache)
            term = nt_to_term.__wrapped__(obj) if obj.startswith('"') else None
            if not isinstance(term, Literal):
                raise self._stamp_error(
                    draft, f"the {what} of {draft.name} must be a literal, not {obj}", started
                )
            lexical, datatype = term.lexical, term.datatype
        try:
            stamp = Timestamp.from_literal(lexical, datatype)
        except TimestampError as error:
            raise self._stamp_error(draft, f"bad {what} for {draft.name}: {error}", started) from None
        known = draft.start if started else draft.time
        if known is not None and known != stamp:
            raise self._error(draft.name, draft.written, f"event graph {draft.name} has two {what}s")
        if started:
            draft.start = stamp
        else:
            draft.time = stamp

    # ------------------------------------------------------------------ events

    def _close_all(self, keep: str | None = None) -> None:
        """Every open event but `keep` whose lines are all behind the reader and that has its
        timestamp is complete (one without waits: its timestamp may come later)."""
        if self.window is None:
            return  # a whole payload: everything completes at the end
        open_ = self.open
        for key in [k for k, d in open_.items() if k != keep and d.time is not None and d.lines]:
            self._complete(open_.pop(key))

    def _complete(self, draft: _Draft) -> None:
        time = draft.time or self.default_time
        if time is None:
            if draft.start is not None:
                raise self._stamp_error(
                    draft,
                    f"event graph {draft.name} has a prov:startedAtTime but no prov:generatedAtTime",
                    True,
                )
            raise self._error(
                draft.name, draft.written, f"event graph {draft.name} has no prov:generatedAtTime"
            )
        start = draft.start
        if start is not None:
            if draft.time is None:
                raise self._stamp_error(
                    draft,
                    f"event graph {draft.name} has a prov:startedAtTime but no prov:generatedAtTime",
                    True,
                )
            if time.numeric != start.numeric:
                message = (
                    f"the interval of {draft.name} starts at {start.lexical}, {start.kind}, but ends at "
                    f"{time.lexical}, {time.kind}: both ends must be of one kind"
                )
                raise self._stamp_error(draft, message, True)
            if start.seconds > time.seconds:
                raise self._stamp_error(
                    draft,
                    f"the interval of {draft.name} starts at {start.lexical}, after its end {time.lexical}",
                    True,
                )
        event = GraphEvent(self.stream, draft.name, time, "".join(draft.lines), start)
        if draft.first is None:  # a timestamp without triples: an empty event, after the others
            draft.first, self.order = self.order, self.order + 1
        if self.lateness is not None:
            if time.seconds < self.watermark:
                raise self._stamp_error(
                    draft,
                    f"event {draft.name} at {time.lexical} is late: it is older than the newest time read "
                    f"({self.newest_lexical}) less --max-lateness {self.lateness:g} s",
                    False,
                )
            if time.seconds - self.lateness > self.watermark:
                self.watermark, self.newest_lexical = time.seconds - self.lateness, time.lexical
        heapq.heappush(self.ready, (time.seconds, draft.first, event))
        if self.window is not None:  # remembered a while, to name a graph written twice
            self.released.add(draft.written)
            order = self._released_order
            order.append(draft.written)
            if len(order) > self._remembered:
                self.released.discard(order.popleft())

    def _release(self, final: bool) -> Iterator[GraphEvent]:
        """Complete events in time order: all at the end, else while more than the window wait and
        no open event could come before them."""
        if self.window is None and not final:
            return
        bound = None if final else self._earliest_open()
        timed = self.lateness is not None
        while self.ready and (final or timed or len(self.ready) > (self.window or 0)):
            seconds, _, event = self.ready[0]
            if bound is not None and seconds > bound:
                break
            if timed and not final and seconds > self.watermark:
                break
            heapq.heappop(self.ready)
            if self.last_time is not None and seconds < self.last_time and self.window is not None:
                raise self._stamp_error(
                    _Draft(event.name, event.name),
                    f"event {event.name} at {event.time.lexical} comes after events of later times: rsep run "
                    f"streams event files in time order, out of order by at most {self.window} events "
                    "(sort the file by time)",
                    False,
                )
            self.last_time = seconds
            yield event

    def _earliest_open(self) -> float | None:
        """No event before this time can still come from the open ones (-inf: one of unknown time
        is open, which could come first)."""
        bound = None
        for draft in self.open.values():
            if draft.time is None:
                return float("-inf")
            if bound is None or draft.time.seconds < bound:
                bound = draft.time.seconds
        return bound

    # ------------------------------------------------------------------ errors

    def _payload(self) -> bytes:
        data = self._data() if callable(self._data) else b""
        return data if isinstance(data, bytes) else b""

    def _error(self, name: str, written: str, message: str) -> DataError:
        return located(self.source, self._payload(), _written_term(name, written), message)

    def _stamp_error(self, draft: _Draft, message: str, started: bool) -> DataError:
        return located_stamp(
            self.source, self._payload(), _written_term(draft.name, draft.written), message, started
        )


def _is_graph(token: str) -> bool:
    """Is the last term of an N-Quads line a graph name (and not the end of a literal object)?"""
    if token[0] == "<":
        return token[-1] == ">" and '"' not in token
    return token.startswith("_:") and '"' not in token


def _written_term(name: str, written: str) -> object:
    """The graph term as the document writes it, for locating errors (IRIs; a blank node's label
    is not findable after renaming)."""
    text = written if written.startswith("<") else name
    return ox.NamedNode(text[1:-1]) if text.startswith("<") else ox.BlankNode(text[2:])


class _BlankNodes:
    """Renames the blank nodes of one document with a fixed prefix: `_:b1` becomes `_:<prefix>xb1`,
    and an unlabelled one `_:<prefix>a<n>`, numbered in the order the document writes them, so
    the same document gives the same names on every run (the parser's names for unlabelled nodes
    are random). Only unlabelled nodes are remembered, and only the most recent ones: a node the
    document writes without a label is mentioned where it is written, not further on."""

    KEPT = 100_000

    def __init__(self, scope: str) -> None:
        self.prefix = re.sub(r"[^A-Za-z0-9]", "", scope) or "d"
        self.unlabelled: OrderedDict[str, str] = OrderedDict()
        self.count = 0

    def term(self, text: str) -> str:
        if not text.startswith("_:"):
            return text
        if not _UNLABELLED.match(text):
            return f"_:{self.prefix}x{text[2:]}"
        renamed = self.unlabelled.get(text)
        if renamed is None:
            renamed = self.unlabelled[text] = f"_:{self.prefix}a{self.count}"
            self.count += 1
            if len(self.unlabelled) > self.KEPT:
                self.unlabelled.popitem(last=False)
        return renamed

    def triple(self, body: str) -> str:
        """`s p o` with its blank nodes renamed (a literal object keeps its text)."""
        subject, predicate, obj = body.split(" ", 2)
        if obj.startswith("_:"):
            return f"{self.term(subject)} {predicate} {self.term(obj)}"
        return f"{self.term(subject)} {predicate} {obj}" if subject.startswith("_:") else body
