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
from pathlib import Path

import pyoxigraph as ox

from rsep.plugin.errors import InvalidInput
from rsep.plugin.graph_events import GraphEvent
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


def format_for(path: Path, formats: dict[str, ox.RdfFormat], what: str) -> ox.RdfFormat:
    try:
        return formats[path.suffix.lower()]
    except KeyError:
        known = ", ".join(sorted(formats))
        raise DataError(
            str(path), f"cannot tell the {what} format from the extension (use {known})"
        ) from None


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


def _syntax_position(error: SyntaxError) -> tuple[int | None, int | None]:
    if error.lineno is not None:
        return error.lineno, error.offset
    match = re.search(r"(\d+):(\d+)", str(error))
    return (int(match.group(1)), int(match.group(2))) if match else (None, None)


def syntax_error(source: str, error: SyntaxError) -> DataError:
    """A parser's error, located where the parser says."""
    line, column = _syntax_position(error)
    return DataError(source, _syntax_message(error), line, column)


def read_error(source: str, error: OSError) -> DataError:
    """A file that cannot be read, with the system's reason: pyoxigraph's OSErrors carry no
    `strerror`, only a message such as `No such file or directory (os error 2)`."""
    reason = error.strerror or re.sub(r" \(os error \d+\)$", "", str(error))
    return DataError(source, f"cannot read the file: {reason}")


def _syntax_message(error: SyntaxError) -> str:
    text = str(error.args[0]) if error.args else str(error)
    return re.sub(r"^Parser error at line \d+ (?:between columns \d+ and \d+|column \d+): ", "", text)


def _written(iri: str) -> str:
    """A regular expression for how a prov: predicate may be written: in full or prefixed."""
    local = iri.rsplit("#", 1)[1]
    return rf"(?:<{re.escape(iri)}>|(?:[A-Za-z][\w.-]*)?:{local}(?![\w-]))"


_GENERATED_AT_WRITTEN = _written(PROV_GENERATED_AT)
_STARTED_AT_WRITTEN = _written(PROV_STARTED_AT)


def located(source: str, data: bytes, term: object, message: str) -> DataError:
    """An error positioned at the first mention of `term` in the payload."""
    return _located_at(source, data, _term_pattern(term), message)


def located_stamp(source: str, data: bytes, graph: object, message: str, started: bool = False) -> DataError:
    """An error positioned at the triple `graph prov:generatedAtTime T` (or the `predicate` given,
    where it starts), or at the graph's first mention when that triple is not written in a way
    found here."""
    pattern = _term_pattern(graph)
    predicate = _STARTED_AT_WRITTEN if started else _GENERATED_AT_WRITTEN
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
    error = located_stamp("", data, ox.NamedNode(graph[1:-1]), "")
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
        raise read_error(str(path), error) from None
    try:
        quads = list(ox.parse(data, format=fmt, base_iri=path.resolve().as_uri()))
    except SyntaxError as error:
        raise syntax_error(str(path), error) from None
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
