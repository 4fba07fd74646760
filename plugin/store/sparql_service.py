"""The Oxigraph side of the SPARQL 1.1 Protocol and the Graph Store HTTP Protocol.

The HTTP edge (`rsep.endpoint`) speaks media types and IRIs as strings; this module turns them
into pyoxigraph formats and terms, runs queries and updates on the one store of the process, and
reads and writes whole graphs. Results are always serialised by pyoxigraph (`QueryResultsFormat`,
`RdfFormat`), never by hand.

Writes that are more than one store call (replacing a graph is "clear, then extend") run under
one process-wide lock, so two writers cannot interleave and "did the graph exist?" answers stay
true until the write is done. A payload is parsed completely before the store is touched, so a
malformed body changes nothing.
"""

from __future__ import annotations

import io
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

import pyoxigraph as ox

from rsep.plugin.errors import InvalidInput, RemoteFailure, RsepError, Unrepresentable
from rsep.plugin.store.literal_limit import bounded
from rsep.plugin.store.remote import check_remote
from rsep.plugin.store.remote_deadline import within_deadline

GraphName = str | None
"""A graph of the store: a named graph's IRI, or None for the default graph."""

RESULT_MEDIA_TYPES = (
    "application/sparql-results+json",
    "application/sparql-results+xml",
    "text/csv",
    "text/tab-separated-values",
)
"""Media types of SELECT results, in the order of preference when the client has none."""
BOOLEAN_MEDIA_TYPES = RESULT_MEDIA_TYPES
"""ASK results: the SPARQL 1.1 CSV/TSV formats define solution sequences only, but Oxigraph
writes a boolean in them as the one line `true` or `false`, which we serve."""
GRAPH_MEDIA_TYPES = (
    "text/turtle",
    "application/n-triples",
    "application/rdf+xml",
    "application/ld+json",
    "application/n-quads",
    "application/trig",
)
"""Media types of RDF graphs (CONSTRUCT, DESCRIBE, GET of one graph)."""
QueryForm = Literal["solutions", "boolean", "graph"]
"""What a query answers: SELECT, ASK, or CONSTRUCT and DESCRIBE."""
OFFERS: dict[QueryForm, tuple[str, ...]] = {
    "solutions": RESULT_MEDIA_TYPES,
    "boolean": BOOLEAN_MEDIA_TYPES,
    "graph": GRAPH_MEDIA_TYPES,
}
"""The media types each form of answer can be serialised as, in order of preference."""
GRAPH_PAYLOAD_MEDIA_TYPES = GRAPH_MEDIA_TYPES[:4]
"""What a PUT or POST of one graph may carry: formats without named graphs, and JSON-LD."""
DATASET_MEDIA_TYPES = ("application/trig", "application/n-quads", "application/ld+json")
"""Media types of a whole dataset (GET or POST of the graph store itself)."""

_write_lock = threading.Lock()


class PayloadError(InvalidInput):
    """An RDF payload that does not parse (line and column when the parser reports them)."""

    source = "body"


class QuerySyntaxError(InvalidInput):
    """A query or update that Oxigraph's parser rejects; `source` is `query` or `update`, and
    line and column are where Oxigraph says."""

    def __init__(self, message: str, *, source: str, line: int | None, column: int | None) -> None:
        super().__init__(message, source=source, line=line, column=column)


class EvaluationError(InvalidInput):
    """A query or update that Oxigraph parsed but could not evaluate."""


class ServiceCallError(RemoteFailure):
    """An input/output error while evaluating: in practice a SERVICE call that failed (refused,
    an HTTP error, an IRI that is not an http(s) URL), or a LOAD that could not fetch."""


class UnrepresentableResult(Unrepresentable):
    """A result that the requested format cannot carry (e.g. RDF 1.2 triple terms in JSON-LD)."""


@dataclass(frozen=True, slots=True)
class Dataset:
    """An RDF dataset given by the protocol (default-graph-uri / named-graph-uri, or the
    using-* parameters of an update): it replaces the one the query names, if any."""

    default_graphs: tuple[str, ...] = ()
    named_graphs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Payload:
    """A request body: its bytes and media type (without parameters)."""

    data: bytes
    media_type: str


def is_absolute_iri(text: str) -> bool:
    """Whether `text` can name a graph: an absolute IRI as Oxigraph validates it."""
    try:
        ox.NamedNode(text)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- queries and updates


def run_query(
    store: ox.Store,
    text: str,
    *,
    choose: Callable[[QueryForm], str],
    base_iri: str | None,
    dataset: Dataset | None = None,
    union: bool = False,
) -> tuple[str, bytes]:
    """Run a query (its text as the client sent it) and serialise the whole result before
    returning: (media type, body). `choose` gets the form of the answer and returns one of
    its OFFERS (or raises, e.g. when nothing is acceptable). `union`: without a protocol
    dataset, the default graph is the union of all graphs (Oxigraph's `--union-default-graph`;
    a FROM in the text still decides).

    pyoxigraph's results are lazy and "unsendable" (they must be dropped by the thread that made
    them), so every error is turned into a RsepError here, raised after the result is
    dropped: no traceback carries the result to another thread. A text with a SERVICE or LOAD
    runs within `--service-timeout` (rsep.plugin.store.remote_deadline)."""
    check_remote(text, base_iri=base_iri, source="query")
    return within_deadline(text, base_iri, lambda: _run_query(store, text, choose, base_iri, dataset, union))


def _run_query(
    store: ox.Store,
    text: str,
    choose: Callable[[QueryForm], str],
    base_iri: str | None,
    dataset: Dataset | None,
    union: bool,
) -> tuple[str, bytes]:
    result = _evaluate(store, text, base_iri, dataset, union)
    failure: RsepError | None = None
    try:
        media_type = choose(_form(result))
        body = _serialize(result, media_type)
    except UnrepresentableResult as error:  # a fresh one: this one's traceback holds the result
        failure = UnrepresentableResult(error.message)
    except (OSError, ValueError, RuntimeError) as error:
        failure = _evaluation_error(error)
    finally:
        del result
    if failure is not None:
        raise failure
    return media_type, body


def run_update(store: ox.Store, text: str, *, base_iri: str | None) -> None:
    """Run a SPARQL update; Oxigraph applies it in one transaction (a LOAD or SERVICE within
    `--service-timeout`)."""
    check_remote(text, base_iri=base_iri, source="update")
    within_deadline(text, base_iri, lambda: _run_update(store, text, base_iri))


def _run_update(store: ox.Store, text: str, base_iri: str | None) -> None:
    failure: RsepError | None = None
    with _write_lock:
        try:
            store.update(text, base_iri=base_iri)
        except SyntaxError as error:
            failure = _syntax_error(error, "update")
        except (OSError, ValueError, RuntimeError) as error:
            failure = _evaluation_error(error)
    if failure is not None:
        raise failure


def _evaluate(
    store: ox.Store, text: str, base_iri: str | None, dataset: Dataset | None, union: bool = False
) -> ox.QuerySolutions | ox.QueryBoolean | ox.QueryTriples:
    """Parse the query and start it: SELECT and CONSTRUCT evaluate lazily, ASK here."""
    check_remote(text, base_iri=base_iri, source="query")
    failure: RsepError
    try:
        if dataset is None:
            return store.query(text, base_iri=base_iri, use_default_graph_as_union=union)
        # both are given, so that a dataset of named graphs only has an empty default graph
        return store.query(
            text,
            base_iri=base_iri,
            default_graph=[ox.NamedNode(iri) for iri in dataset.default_graphs],
            named_graphs=[ox.NamedNode(iri) for iri in dataset.named_graphs],
        )
    except SyntaxError as error:
        failure = _syntax_error(error, "query")
    except (OSError, ValueError, RuntimeError) as error:
        failure = _evaluation_error(error)
    raise failure


def _form(result: ox.QuerySolutions | ox.QueryBoolean | ox.QueryTriples) -> QueryForm:
    if isinstance(result, ox.QueryTriples):
        return "graph"
    return "boolean" if isinstance(result, ox.QueryBoolean) else "solutions"


_COMPLETE_FORMATS = (ox.RdfFormat.N_TRIPLES, ox.RdfFormat.N_QUADS, ox.RdfFormat.TURTLE, ox.RdfFormat.TRIG)
"""Graph formats that carry every RDF 1.2 term (triple terms, directional language tags): an error
while writing them is the evaluation's. (RDF/XML, as pyoxigraph 0.5 writes it, also does, but has
no specification that says so.)"""


def _serialize(result: ox.QuerySolutions | ox.QueryBoolean | ox.QueryTriples, media_type: str) -> bytes:
    """The result as `media_type`, evaluated and written in one pass by pyoxigraph into a buffer
    (the results formats and the complete graph formats carry every term). For a graph format
    that may not (JSON-LD: no triple terms), pyoxigraph reports an evaluation error and a term it
    cannot write alike, so the triples pass through `_watched` to tell them apart."""
    buffer = io.BytesIO()
    if not isinstance(result, ox.QueryTriples):
        result.serialize(buffer, format=_results_format(media_type))
        return buffer.getvalue()
    rdf_format = _rdf_format(media_type)
    if rdf_format in _COMPLETE_FORMATS:
        result.serialize(buffer, format=rdf_format)
        return buffer.getvalue()
    failed: list[Exception] = []
    try:
        ox.serialize(_watched(result, failed), buffer, format=rdf_format)
    except (OSError, ValueError) as error:
        if failed:
            raise
        message = f"the result cannot be written as {media_type}: {_one_line(str(error))}"
        raise UnrepresentableResult(message) from None
    return buffer.getvalue()


def _watched(triples: ox.QueryTriples, failed: list[Exception]) -> Iterator[ox.Triple]:
    """The triples, noting in `failed` an error of their evaluation."""
    try:
        yield from triples
    except Exception as error:
        failed.append(error)
        raise


_SYNTAX_POSITION = re.compile(r"^error at (\d+):(\d+): ")


def _syntax_error(error: SyntaxError, source: str) -> QuerySyntaxError:
    """Oxigraph's message (`error at 3:10: expected ...`) with its position as fields."""
    message = _one_line(str(error))
    found = _SYNTAX_POSITION.match(message)
    if found is None:
        return QuerySyntaxError(message, source=source, line=error.lineno, column=error.offset)
    line, column = int(found.group(1)), int(found.group(2))
    return QuerySyntaxError(message[found.end() :], source=source, line=line, column=column)


def _evaluation_error(error: Exception) -> RsepError:
    kind: type[RsepError] = ServiceCallError if isinstance(error, OSError) else EvaluationError
    return kind(_one_line(str(error)) or type(error).__name__)


def _one_line(message: str) -> str:
    return " ".join(message.split())


# --------------------------------------------------------------------------- graph store


def graph_exists(store: ox.Store, graph: GraphName) -> bool:
    """The default graph always exists; a named graph once created and until dropped."""
    return graph is None or store.contains_named_graph(ox.NamedNode(graph))


def get_graph(store: ox.Store, graph: GraphName, media_type: str) -> bytes:
    """One graph, serialised as one of GRAPH_MEDIA_TYPES."""
    triples = (quad.triple for quad in store.quads_for_pattern(None, None, None, _graph_term(graph)))
    return ox.serialize(triples, format=_rdf_format(media_type)) or b""


def get_dataset(store: ox.Store, media_type: str) -> bytes:
    """Every graph of the store, serialised as one of DATASET_MEDIA_TYPES."""
    return ox.serialize(store, format=_rdf_format(media_type)) or b""


def put_graph(store: ox.Store, graph: GraphName, payload: Payload, *, base_iri: str | None) -> bool:
    """Replace a graph's content with the payload's triples; True if the graph is new."""
    quads = parse_graph_payload([payload], graph, base_iri=base_iri)
    with _write_lock:
        created = not graph_exists(store, graph)
        store.clear_graph(_graph_term(graph))
        _extend(store, graph, quads)
    return created


def post_graph(
    store: ox.Store, graph: GraphName, payloads: Iterable[Payload], *, base_iri: str | None
) -> bool:
    """Merge the payloads' triples into a graph (several payloads: a multipart request);
    True if the graph is new."""
    quads = parse_graph_payload(payloads, graph, base_iri=base_iri)
    with _write_lock:
        created = not graph_exists(store, graph)
        _extend(store, graph, quads)
    return created


def post_dataset(store: ox.Store, payload: Payload, *, base_iri: str | None) -> None:
    """Merge a TriG, N-Quads or JSON-LD document's quads into the store."""
    quads = _parse(payload, base_iri=base_iri, named_graphs=True)
    with _write_lock:
        store.extend(quads)


def delete_graph(store: ox.Store, graph: GraphName) -> bool:
    """Drop a named graph or empty the default graph; False if the named graph does not exist."""
    with _write_lock:
        if not graph_exists(store, graph):
            return False
        if graph is None:
            store.clear_graph(ox.DefaultGraph())
        else:
            store.remove_graph(ox.NamedNode(graph))
    return True


def parse_graph_payload(
    payloads: Iterable[Payload], graph: GraphName, *, base_iri: str | None
) -> list[ox.Quad]:
    """Every triple of the payloads, placed in `graph`; the whole input is read before any of it
    is used. Blank nodes get fresh labels, so two requests never share one by accident."""
    target = _graph_term(graph)
    return [
        ox.Quad(quad.subject, quad.predicate, quad.object, target)
        for payload in payloads
        for quad in _parse(payload, base_iri=base_iri, named_graphs=False)
    ]


def _extend(store: ox.Store, graph: GraphName, quads: list[ox.Quad]) -> None:
    if graph is not None:
        store.add_graph(ox.NamedNode(graph))  # an empty PUT still creates the graph
    store.extend(quads)


def _parse(payload: Payload, *, base_iri: str | None, named_graphs: bool) -> list[ox.Quad]:
    try:
        quads = ox.parse(
            payload.data,
            _rdf_format(payload.media_type),
            base_iri=base_iri,
            without_named_graphs=not named_graphs,
            rename_blank_nodes=True,
        )
        return list(bounded(quads, source="body"))
    except SyntaxError as error:
        raise _payload_error(error) from None


_PARSER_PREFIX = re.compile(r"^Parser error (?:at|between) [^:]*: ")
_LINE_SUFFIX = re.compile(r" \(line \d+\)$")


def _payload_error(error: SyntaxError) -> PayloadError:
    """Oxigraph's message without the position it also spells out, which we report as fields."""
    message = _LINE_SUFFIX.sub("", _PARSER_PREFIX.sub("", str(error)))
    return PayloadError(message, line=error.lineno, column=error.offset)


def _graph_term(graph: GraphName) -> ox.NamedNode | ox.DefaultGraph:
    return ox.DefaultGraph() if graph is None else ox.NamedNode(graph)


def _rdf_format(media_type: str) -> ox.RdfFormat:
    found = ox.RdfFormat.from_media_type(media_type)
    if found is None:
        raise ValueError(f"not an RDF media type: {media_type}")
    return found


def _results_format(media_type: str) -> ox.QueryResultsFormat:
    found = ox.QueryResultsFormat.from_media_type(media_type)
    if found is None:
        raise ValueError(f"not a query results media type: {media_type}")
    return found
