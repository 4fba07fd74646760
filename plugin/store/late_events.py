"""Late events kept under `--late side`: a named graph per event, listed in `urn:rsep:late`.

An event older than the watermark cannot reach the queries any more (they have seen the sorted
stream past it), but it is not dropped: its triples go into a graph `urn:rsep:late:<n>`, and
`urn:rsep:late` lists it (`a rsep:LateEvent`) with its stream, its name as posted, its timestamp,
the watermark it missed and when it arrived, so plain SPARQL finds what came too late
(docs/endpoint.md, "Event time"). One `Store.extend` per request: one transaction.

The store is open to SPARQL Update, so the listing may have lost entries or graphs may exist that
it no longer lists: a new late event's `<n>` is past the highest one listed, and any `n` whose
graph or listing exists is skipped, so a late event never lands in another one's graph.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pyoxigraph as ox

from rsep.plugin.graph_events import GraphEvent, Timestamp, timestamp_nt
from rsep.plugin.store.kb import KnowledgeBase
from rsep.plugin.vocabulary import LATE_GRAPH, LATE_IRI_PREFIX, PROV_GENERATED_AT, RDF_TYPE, RSEP


class LateEventGraphs:
    """The `LateSink` of the endpoint's store."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self._lock = threading.Lock()
        self._next = self._past_listed()

    def _past_listed(self) -> int:
        """One past the highest `n` listed in `urn:rsep:late`."""
        listed = self.kb.store.quads_for_pattern(None, None, None, ox.NamedNode(LATE_GRAPH))
        numbers = (_number(quad.subject) for quad in listed)
        return max((n + 1 for n in numbers if n is not None), default=0)

    def _taken(self, name: str) -> bool:
        node = ox.NamedNode(name)
        store = self.kb.store
        listed = store.quads_for_pattern(node, None, None, ox.NamedNode(LATE_GRAPH))
        return store.contains_named_graph(node) or next(iter(listed), None) is not None

    def _fresh_names(self, count: int) -> list[str]:
        names: list[str] = []
        while len(names) < count:
            name = f"{LATE_IRI_PREFIX}{self._next}"
            self._next += 1
            if not self._taken(name):
                names.append(name)
        return names

    def keep(self, events: Sequence[GraphEvent], watermark: Timestamp) -> list[str]:
        arrived = Timestamp.now()
        with self._lock:
            names = self._fresh_names(len(events))
            pairs = zip(names, events, strict=True)
            text = "".join(_nquads(name, event, watermark, arrived) for name, event in pairs)
            quads = list(ox.parse(text, ox.RdfFormat.N_QUADS))
            with self.kb.writing(default_graph=False, results=True) as store:
                store.extend(quads)
            self.kb.flush()
        return names


def _number(subject: object) -> int | None:
    """`n` of a subject `urn:rsep:late:<n>`, None for any other."""
    if not isinstance(subject, ox.NamedNode) or not subject.value.startswith(LATE_IRI_PREFIX):
        return None
    digits = subject.value[len(LATE_IRI_PREFIX) :]
    return int(digits) if digits.isdigit() and digits.isascii() else None


def _nquads(name: str, event: GraphEvent, watermark: Timestamp, arrived: Timestamp) -> str:
    graph = f"<{name}>"
    late = f"<{LATE_GRAPH}>"
    body = "".join(f"{line[:-2]} {graph} .\n" for line in event.ntriples.splitlines() if line.strip())
    posted = event.name if event.name.startswith("<") else _literal(event.name)
    metadata = [
        (f"<{RDF_TYPE}>", f"<{RSEP}LateEvent>"),
        (f"<{RSEP}stream>", f"<{event.stream}>"),
        (f"<{RSEP}postedAs>", posted),
        (f"<{PROV_GENERATED_AT}>", timestamp_nt(event.time)),
        (f"<{RSEP}watermark>", timestamp_nt(watermark)),
        (f"<{RSEP}arrivedAt>", timestamp_nt(arrived)),
    ]
    return body + "".join(f"{graph} {p} {o} {late} .\n" for p, o in metadata)


def _literal(text: str) -> str:
    """A blank node's label as a string (the graph it named exists no more)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'
