"""A window query's evaluations as named graphs (docs/endpoint.md, "Window queries").

A C-SPARQL or CQELS query answers at evaluation times, and one answer is a
whole result set (a `COUNT` per window, every solution over the window's
content), so each evaluation that answered something is ONE graph, not one
per solution. Its IRI depends on the query id and the evaluation time only:
an evaluation replayed after a restart gets the same graph, which the sink
skips. Like a match graph (rsep.plugin.service.match_graphs) it holds the answer
in the W3C result-set vocabulary (every solution; `rs:index` under ORDER BY;
`rs:boolean true` for ASK) or the constructed triples (CONSTRUCT, C-SPARQL's
REGISTER STREAM), and `urn:rsep:matches` describes it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from rsep.plugin.algebra.terms import iri_nt, literal_nt
from rsep.plugin.graph_events import XSD_DATETIME, Timestamp, timestamp_nt
from rsep.plugin.vocabulary import MATCH_IRI_PREFIX, MATCHES_GRAPH, PROV, RDF_TYPE, RS, RSEP
from rsep.plugin.windows.output import ticks_timestamp
from rsep.plugin.windows.window_plan import Form
from rsep.plugin.windows.window_replay import Evaluation

_HASH_CHARS = 32
_XSD_BOOLEAN = "http://www.w3.org/2001/XMLSchema#boolean"
_XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"


@dataclass(frozen=True, slots=True)
class EvaluationGraph:
    """One evaluation of a window query, ready to be written as a named graph."""

    iri: str
    query_iri: str
    form: Form
    time: Timestamp
    """The evaluation time (`rsep:time`)."""
    start: Timestamp
    end: Timestamp
    """The bounds of the evaluation's windows, as `rsep run` prints them."""
    detected: str
    variables: tuple[str, ...]
    rows: tuple[Mapping[str, str], ...] = ()
    spans: tuple[tuple[Timestamp, Timestamp] | None, ...] = ()
    """Per row, its interval (CQELS-CEP solutions); empty when rows carry none."""
    triples: tuple[str, ...] = ()
    ordered: bool = False

    def record(self) -> dict[str, object]:
        """The JSON object pushed to listeners: the evaluation and its whole answer."""
        out: dict[str, object] = {
            "time": self.time.json(),
            "start": self.start.json(),
            "end": self.end.json(),
        }
        if self.form is Form.CONSTRUCT:
            out["triples"] = list(self.triples)
        else:
            out["solutions"] = [dict(row) for row in self.rows]
        out["graph"] = self.iri
        return out

    def nquads(self) -> str:
        return "".join(self._content()) + "".join(self._metadata())

    def _content(self) -> Iterator[str]:
        graph = iri_nt(self.iri)
        if self.form is Form.CONSTRUCT:
            for statement in self.triples:
                yield f"{statement[:-1].rstrip()} {graph} .\n"
            return
        label = f"_:m{self.iri.rsplit(':', 1)[-1]}"
        rs = f"{label}rs"
        yield f"{rs} <{RDF_TYPE}> <{RS}ResultSet> {graph} .\n"
        if self.form is Form.ASK:
            yield f"{rs} <{RS}boolean> {literal_nt('true', _XSD_BOOLEAN)} {graph} .\n"
            return
        for name in self.variables:
            yield f"{rs} <{RS}resultVariable> {literal_nt(name)} {graph} .\n"
        spans = self.spans or (None,) * len(self.rows)
        for index, (row, span) in enumerate(zip(self.rows, spans, strict=True)):
            solution = f"{label}s{index}"
            yield f"{rs} <{RS}solution> {solution} {graph} .\n"
            if self.ordered:
                yield f"{solution} <{RS}index> {literal_nt(str(index + 1), _XSD_INTEGER)} {graph} .\n"
            if span is not None:
                yield f"{solution} <{RSEP}start> {timestamp_nt(span[0])} {graph} .\n"
                yield f"{solution} <{RSEP}end> {timestamp_nt(span[1])} {graph} .\n"
            for number, name in enumerate(n for n in self.variables if n in row):
                binding = f"{solution}b{number}"
                yield f"{solution} <{RS}binding> {binding} {graph} .\n"
                yield f"{binding} <{RS}variable> {literal_nt(name)} {graph} .\n"
                yield f"{binding} <{RS}value> {row[name]} {graph} .\n"

    def _metadata(self) -> Iterator[str]:
        subject = iri_nt(self.iri)
        graph = iri_nt(MATCHES_GRAPH)
        yield f"{subject} <{RDF_TYPE}> <{RSEP}Match> {graph} .\n"
        yield f"{subject} <{RDF_TYPE}> <{RSEP}Evaluation> {graph} .\n"
        yield f"{subject} <{PROV}wasGeneratedBy> {iri_nt(self.query_iri)} {graph} .\n"
        yield f"{subject} <{RSEP}time> {timestamp_nt(self.time)} {graph} .\n"
        yield f"{subject} <{RSEP}start> {timestamp_nt(self.start)} {graph} .\n"
        yield f"{subject} <{RSEP}end> {timestamp_nt(self.end)} {graph} .\n"
        yield f"{subject} <{PROV}generatedAtTime> {literal_nt(self.detected, XSD_DATETIME)} {graph} .\n"


def evaluation_iri(query_id: str, time: int) -> str:
    """`urn:rsep:match:<query id>:<hash>` of the evaluation time (one answer per time)."""
    key = json.dumps([query_id, "evaluation", time])
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:_HASH_CHARS]
    return f"{MATCH_IRI_PREFIX}{query_id}:{digest}"


def evaluation_graph(
    query_id: str,
    query_iri: str,
    form: Form,
    evaluation: Evaluation,
    variables: tuple[str, ...],
    numeric: bool,
    detected: str,
    ordered: bool = False,
) -> EvaluationGraph:
    def stamp(ticks: int) -> Timestamp:
        return ticks_timestamp(ticks, numeric)

    answer = evaluation.answer
    spans = tuple(None if s is None else (stamp(s[0]), stamp(s[1])) for s in answer.spans)
    return EvaluationGraph(
        evaluation_iri(query_id, evaluation.time),
        query_iri,
        form,
        stamp(evaluation.time),
        stamp(evaluation.start),
        stamp(evaluation.end),
        detected,
        variables,
        answer.rows,
        spans,
        answer.triples,
        ordered,
    )
