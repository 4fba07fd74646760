"""Reading graph events and background knowledge from RDF files.

Event files are TriG or N-Quads: each named graph is one event, and its
timestamp is the triple `<graph> prov:generatedAtTime T` in the default graph
(T an xsd:dateTime or a number); `<graph> prov:startedAtTime S` beside it, S of
T's kind and S <= T, makes the event span the interval [S, T]. Blank nodes are scoped to the document they
come from: they are renamed with a per-document prefix so that two files (or
two HTTP requests) never share one by accident.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph as ox

from rsep.plugin.errors import InvalidInput
from rsep.plugin.graph_events import GraphEvent, Timestamp, TimestampError
from rsep.plugin.vocabulary import PROV_GENERATED_AT, PROV_STARTED_AT

_GENERATED_AT = ox.NamedNode(PROV_GENERATED_AT)
_STARTED_AT = ox.NamedNode(PROV_STARTED_AT)
EVENT_FORMATS = {".trig": ox.RdfFormat.TRIG, ".nq": ox.RdfFormat.N_QUADS, ".nquads": ox.RdfFormat.N_QUADS}
KB_FORMATS = {
    **EVENT_FORMATS,
    ".ttl": ox.RdfFormat.TURTLE,
    ".nt": ox.RdfFormat.N_TRIPLES,
    ".n3": ox.RdfFormat.TURTLE,
    ".rdf": ox.RdfFormat.RDF_XML,
    ".owl": ox.RdfFormat.RDF_XML,
    ".jsonld": ox.RdfFormat.JSON_LD,
}
MEDIA_TYPES = {
    "application/trig": ox.RdfFormat.TRIG,
    "application/n-quads": ox.RdfFormat.N_QUADS,
    "application/x-trig": ox.RdfFormat.TRIG,
    "text/x-nquads": ox.RdfFormat.N_QUADS,
}
"""The media types of event payloads (the two registered ones and their older aliases)."""


class DataError(InvalidInput):
    """Bad input data, located as precisely as the input allows."""

    def __init__(self, source: str, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.source, self.message, self.line, self.column = source, message, line, column

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}:{self.column or 1}"
        return f"{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class _Draft:
    name: ox.NamedNode | ox.BlankNode
    lines: list[str]
    """The event's triples, each as an N-Triples line."""


def format_for(path: Path, formats: dict[str, ox.RdfFormat], what: str) -> ox.RdfFormat:
    try:
        return formats[path.suffix.lower()]
    except KeyError:
        known = ", ".join(sorted(formats))
        raise DataError(
            str(path), f"cannot tell the {what} format from the extension (use {known})"
        ) from None


def read_event_file(path: Path, stream: str, *, scope: str) -> list[GraphEvent]:
    """All events of one file, ordered by timestamp (stable for equal ones)."""
    fmt = format_for(path, EVENT_FORMATS, "event file")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise DataError(str(path), f"cannot read the file: {error.strerror}") from None
    return parse_events(data, fmt, stream, source=str(path), scope=scope, base_iri=path.resolve().as_uri())


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
    """Parse a whole payload or fail without yielding anything: a bad payload
    is rejected whole. Events without a timestamp get `default_time` when
    given (HTTP ingest stamps arrival time), and are an error otherwise."""
    quads = _parse(data, MEDIA_TYPES[fmt] if isinstance(fmt, str) else fmt, source, base_iri)
    drafts, stamps, starts = _split(quads, source, data, scope)
    if starts.times:
        _check_intervals(starts, stamps, source, data)
    events = []
    for key, draft in drafts.items():
        time = stamps.pop(key, None) or default_time
        if time is None:
            raise _located(source, data, draft.name, f"event graph {draft.name} has no prov:generatedAtTime")
        events.append(GraphEvent(stream, key, time, "".join(draft.lines), starts.times.get(key)))
    for key, time in stamps.items():  # a timestamp for a graph without triples: an empty event
        events.append(GraphEvent(stream, key, time, "", starts.times.get(key)))
    events.sort(key=lambda e: e.time.seconds)  # by the end T, the detection time, also for intervals
    return events


@dataclass(slots=True)
class _Starts:
    """The events' interval starts (`prov:startedAtTime`) by event key, and each key's graph
    term as the payload writes it (blank nodes are renamed), to locate errors."""

    times: dict[str, Timestamp]
    written: dict[str, object]


def _check_intervals(starts: _Starts, stamps: dict[str, Timestamp], source: str, data: bytes) -> None:
    """Each `prov:startedAtTime S` needs its event's generatedAtTime T, of the same kind, with
    S <= T (an HTTP arrival time does not stand in for T: it could precede S)."""
    for key, start in starts.times.items():
        end = stamps.get(key)
        if end is None:
            message = f"event graph {key} has a prov:startedAtTime but no prov:generatedAtTime"
        elif end.numeric != start.numeric:
            message = (
                f"the interval of {key} starts at {start.lexical}, {start.kind}, but ends at "
                f"{end.lexical}, {end.kind}: both ends must be of one kind"
            )
        elif start.seconds > end.seconds:
            message = f"the interval of {key} starts at {start.lexical}, after its end {end.lexical}"
        else:
            continue
        raise _located_stamp(source, data, starts.written[key], message, _STARTED_AT_WRITTEN)


def _parse(data: bytes, fmt: ox.RdfFormat, source: str, base_iri: str | None) -> list[ox.Quad]:
    try:
        return list(ox.parse(data, fmt, base_iri=base_iri))
    except SyntaxError as error:
        line, column = _syntax_position(error)
        raise DataError(source, _syntax_message(error), line, column) from None


def _split(
    quads: Iterable[ox.Quad], source: str, data: bytes, scope: str
) -> tuple[dict[str, _Draft], dict[str, Timestamp], _Starts]:
    """The events' texts, their timestamps (generatedAtTime) and interval starts (startedAtTime)."""
    renamer = _BlankNodeScope(scope)
    drafts: dict[object, _Draft] = {}  # by graph term as parsed: hashing a term is cheaper than printing it
    stamps: dict[str, Timestamp] = {}
    starts = _Starts({}, {})
    for quad in quads:
        graph = quad.graph_name
        if isinstance(graph, ox.DefaultGraph):
            if quad.predicate == _STARTED_AT:
                starts.written[str(renamer.term(quad.subject))] = quad.subject
                _read_timestamp(quad, renamer, starts.times, source, data)
            else:
                _read_timestamp(quad, renamer, stamps, source, data)
            continue
        draft = drafts.get(graph)
        if draft is None:
            draft = drafts[graph] = _Draft(renamer.term(graph), [])  # type: ignore[arg-type]
        draft.lines.append(
            _ntriples_line(renamer.term(quad.subject), quad.predicate, renamer.term(quad.object))
        )
    # Renaming is one-to-one, so grouping by the parsed name groups by the renamed one.
    return {str(draft.name): draft for draft in drafts.values()}, stamps, starts


def _read_timestamp(
    quad: ox.Quad, renamer: _BlankNodeScope, stamps: dict[str, Timestamp], source: str, data: bytes
) -> None:
    """One timestamp triple of the default graph into `stamps` (generatedAtTime's or, for a
    prov:startedAtTime triple, the interval starts')."""
    subject = renamer.term(quad.subject)
    if quad.predicate != _GENERATED_AT and quad.predicate != _STARTED_AT:
        raise _located(
            source,
            data,
            subject,
            "the default graph may only hold prov:generatedAtTime and prov:startedAtTime triples, "
            f"found {quad.predicate} on {quad.subject}",
        )
    started = quad.predicate == _STARTED_AT
    written = _STARTED_AT_WRITTEN if started else _GENERATED_AT_WRITTEN
    what = "interval start" if started else "timestamp"
    value = quad.object
    key = str(subject)
    if not isinstance(value, ox.Literal):
        raise _located_stamp(
            source, data, quad.subject, f"the {what} of {key} must be a literal, not {value}", written
        )
    try:
        stamp = Timestamp.from_literal(value.value, value.datatype.value)
    except TimestampError as error:
        raise _located_stamp(source, data, quad.subject, f"bad {what} for {key}: {error}", written) from None
    if key in stamps and stamps[key] != stamp:
        raise _located(source, data, quad.subject, f"event graph {key} has two {what}s")
    stamps[key] = stamp


_UNLABELLED = re.compile(r"[a-f][0-9a-f]{15,31}")
"""How Oxigraph (0.5) names a blank node the document writes without a label (`[ ... ]`, a
collection): a random 128-bit number in hex that starts with a letter, new on every parse."""


class _BlankNodeScope:
    """Renames the blank nodes of one document with a fixed prefix: `_:b1` becomes
    `_:<prefix>xb1` (unless `keep_labels`), and an unlabelled one `_:<prefix>a<n>`, numbered in
    the order the document writes them, so the same document gives the same names on every run
    (the parser's names for unlabelled nodes are random)."""

    def __init__(self, scope: str, keep_labels: bool = False) -> None:
        self.prefix = re.sub(r"[^A-Za-z0-9]", "", scope) or "d"
        self.keep_labels = keep_labels
        self.cache: dict[str, ox.BlankNode] = {}
        self.unlabelled = 0

    def term(self, term: object) -> object:
        if isinstance(term, ox.BlankNode):
            renamed = self.cache.get(term.value)
            if renamed is None:
                renamed = self.cache[term.value] = ox.BlankNode(self._name(term.value))
            return renamed
        return term

    def _name(self, label: str) -> str:
        if _UNLABELLED.fullmatch(label):
            self.unlabelled += 1
            return f"{self.prefix}a{self.unlabelled - 1}"
        return label if self.keep_labels else f"{self.prefix}x{label}"


def _ntriples_line(subject: object, predicate: ox.NamedNode, obj: object) -> str:
    """One triple as canonical N-Triples, byte for byte what `ox.serialize`
    writes: terms print in N-Triples syntax, so formatting them is much
    cheaper than building an `ox.Triple` and serialising it. A triple term
    (RDF 1.2) object prints differently on its own, so it takes the serialiser."""
    if isinstance(obj, ox.Triple):
        data = ox.serialize([ox.Triple(subject, predicate, obj)], format=ox.RdfFormat.N_TRIPLES)  # type: ignore[arg-type]
        assert data is not None  # no output file given, so the bytes are returned
        return data.decode()
    return f"{subject} {predicate} {obj} .\n"


def _syntax_position(error: SyntaxError) -> tuple[int | None, int | None]:
    if error.lineno is not None:
        return error.lineno, error.offset
    match = re.search(r"(\d+):(\d+)", str(error))
    return (int(match.group(1)), int(match.group(2))) if match else (None, None)


def _syntax_message(error: SyntaxError) -> str:
    text = str(error.args[0]) if error.args else str(error)
    return re.sub(r"^Parser error at line \d+ between columns \d+ and \d+: ", "", text)


def _written(iri: str) -> str:
    """A regular expression for how a prov: predicate may be written: in full or prefixed."""
    local = iri.rsplit("#", 1)[1]
    return rf"(?:<{re.escape(iri)}>|(?:[A-Za-z][\w.-]*)?:{local}(?![\w-]))"


_GENERATED_AT_WRITTEN = _written(PROV_GENERATED_AT)
_STARTED_AT_WRITTEN = _written(PROV_STARTED_AT)


def _located(source: str, data: bytes, term: object, message: str) -> DataError:
    """An error positioned at the first mention of `term` in the payload."""
    return _located_at(source, data, _term_pattern(term), message)


def _located_stamp(
    source: str, data: bytes, graph: object, message: str, predicate: str = _GENERATED_AT_WRITTEN
) -> DataError:
    """An error positioned at the triple `graph prov:generatedAtTime T` (or the `predicate` given,
    where it starts), or at the graph's first mention when that triple is not written in a way
    found here."""
    pattern = _term_pattern(graph)
    found = _located_at(source, data, rf"{pattern}\s+{predicate}", message)
    return found if found.line is not None else _located_at(source, data, pattern, message)


def timestamp_position(path: Path, graph: str) -> tuple[int | None, int | None]:
    """Where the timestamp triple of the event graph `graph` (N-Triples text of an IRI) is written
    in an event file; (None, None) when it cannot be told (a blank node, an unreadable file)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None, None
    return payload_timestamp_position(data, graph)


def payload_timestamp_position(data: bytes, graph: str) -> tuple[int | None, int | None]:
    """Where the timestamp triple of the event graph `graph` (N-Triples text of an IRI) is written
    in a payload, else the graph's first mention; (None, None) for a blank node (renamed)."""
    if not graph.startswith("<"):
        return None, None
    error = _located_stamp("", data, ox.NamedNode(graph[1:-1]), "")
    return error.line, error.column


def _located_at(source: str, data: bytes, pattern: str, message: str) -> DataError:
    text = data.decode("utf-8", "replace")
    match = re.search(pattern, text)
    if match is None:
        return DataError(source, message)
    index = match.start()
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return DataError(source, message, line, column)


def _term_pattern(term: object) -> str:
    """A regular expression for how a term may be written: in full, or for an IRI as a prefixed
    name or a relative IRI ending in its local name (matched from its first character)."""
    written = re.escape(str(term))
    if not isinstance(term, ox.NamedNode):
        return written
    local = re.split(r"[#/:]", term.value)[-1]
    if not local:
        return written
    name = re.escape(local)
    shortened = rf"<(?:[^<>\s]*[/#:])?{name}>|(?<![\w:.-])(?:[A-Za-z][\w.-]*)?:{name}(?![\w-])"
    return rf"(?:{written}|{shortened})"


def load_into(store: ox.Store, path: Path, *, graph: str | None = None) -> int:
    """Load a background-knowledge file (named graphs kept; triple formats go
    to `graph`, or the default graph). Returns the number of quads loaded."""
    fmt = format_for(path, KB_FORMATS, "knowledge base")
    target = ox.NamedNode(graph) if graph else None
    try:
        data = path.read_bytes()
    except OSError as error:
        raise DataError(str(path), f"cannot read the file: {error.strerror}") from None
    try:
        quads = list(ox.parse(data, format=fmt, base_iri=path.resolve().as_uri()))
    except SyntaxError as error:
        line, column = _syntax_position(error)
        raise DataError(str(path), _syntax_message(error), line, column) from None
    scope = _BlankNodeScope(_kb_scope(path), keep_labels=True)
    store.extend(
        ox.Quad(
            scope.term(q.subject),  # type: ignore[arg-type]
            q.predicate,
            scope.term(q.object),  # type: ignore[arg-type]
            target or scope.term(q.graph_name),  # type: ignore[arg-type]
        )
        for q in quads
    )
    return len(quads)


def _kb_scope(path: Path) -> str:
    """The prefix of a knowledge-base file's unlabelled blank nodes: from its path, so that they
    are named the same on every run and differ between files (labels are kept: files of one
    knowledge base may share them)."""
    return "k" + hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:10]


def batch_nquads(events: Iterable[tuple[int, GraphEvent]], graph_prefix: str) -> str:
    """N-Quads text of a batch of events, each in the graph `graph_prefix + id`.
    Canonical N-Triples escapes newlines inside literals, so " .\n" only ends lines."""
    return "".join(
        event.ntriples.replace(" .\n", f" <{graph_prefix}{event_id}> .\n") for event_id, event in events
    )


def events_trig(events: Iterable[GraphEvent]) -> str:
    """Graph events as TriG in the format event files are read in (each event a named graph, its
    `prov:generatedAtTime` in the default graph), so that `rsep run --stream` reads them back."""
    quads = ox.parse("".join(event.nquads() for event in events), format=ox.RdfFormat.N_QUADS)
    prefixes = {"prov": "http://www.w3.org/ns/prov#", "xsd": "http://www.w3.org/2001/XMLSchema#"}
    text = ox.serialize(quads, format=ox.RdfFormat.TRIG, prefixes=prefixes)
    return (text or b"").decode("utf-8")
