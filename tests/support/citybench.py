"""CityBench (Ali et al., ISWC 2015) for the C-SPARQL and CQELS tests: a slice of the CSV streams
converted by bench.citybench, `rsep run` over it, and an independent oracle.

The oracle does not use rsep's parser, plan or runtime. It reads the converted TriG with
pyoxigraph, assembles each window itself (t - 3 s < t_i <= t, written out below), and runs the
CityBench query text with its stream clauses replaced by FROM (C-SPARQL: every window merged into
the default graph with the knowledge base) or GRAPH (CQELS: one named graph per window) over a
plain pyoxigraph store.

The data is CityBench's, in the shared data folder (../shared/data/citybench): `citybench(...)`
finds it when a test runs, and skips the test without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest

from bench.citybench import Repository, convert, stream_iri
from rsep.endpoint.run_command import KbFile, RunRequest, StreamFile
from tests.support.paths import FIXTURES
from tests.support.run_cases import output
from tests.support.shared_data import shared_data, shared_params

START, END = "2014-08-01T08:00:00", "2014-08-01T09:00:00"
"""The slice: the first hour of the traffic streams (12 readings each; weather at 08:00, 08:20
and 08:50)."""
STREAMS = ("AarhusTrafficData182955", "AarhusTrafficData158505", "AarhusWeatherData0")
WIDTH = 3
"""Every window of CityBench's Q1-Q3 is 3 s wide (`[range 3s]`, `[range 3000ms step 1s]`)."""
KB_GRAPH = "urn:oracle:kb"
PROV_GENERATED_AT = "http://www.w3.org/ns/prov#generatedAtTime"
TRAFFIC = "http://www.insight-centre.org/dataset/SampleEventService#AarhusTrafficData158505"
CULTURAL_EVENTS = FIXTURES / "citybench" / "culturalevents.ttl"
"""Two cultural events for CQELS Q5's graph `<culturalevents>` (not in CityBench's data): a
concert near AarhusTrafficData158505's road, a fair far from it."""


def citybench(*parts: str) -> Path:
    """A path of CityBench's data (../shared/data/citybench); skips the test without it."""
    return shared_data("citybench", *parts)


def sensor_repository() -> Path:
    """CityBench's background knowledge: the sensors and what they observe."""
    return citybench("dataset", "SensorRepository.n3")


def q5_row(row: int) -> dict[str, str]:
    """CQELS Q5's answer to the reading of AarhusTrafficData158505's CSV row `row` with
    CULTURAL_EVENTS in `<culturalevents>`: the concert."""
    xsd = "http://www.w3.org/2001/XMLSchema#"
    return {
        "evtId": "<http://example.org/events/concert>",
        "title": '"Concert in the park"',
        "obId2": f"<{TRAFFIC}-{row}-CongestionLevel>",
        "lat1": f'"56.2"^^<{xsd}decimal>',
        "lon1": f'"10.1"^^<{xsd}decimal>',
        "lat2": f'"56.21508593264829"^^<{xsd}double>',  # the segment's start in SensorRepository.n3
        "lon2": f'"10.13978019262504"^^<{xsd}double>',
    }


def convert_slice(folder: Path) -> dict[str, Path]:
    """The slice of each stream as a TriG file in `folder`, by stream IRI."""
    repository = Repository.load(citybench("dataset"))
    files = {}
    for name in STREAMS:
        path = folder / f"{name}.trig"
        path.write_text(convert(citybench("streams", f"{name}.stream"), repository, start=START, end=END))
        files[stream_iri(name)] = path
    return files


def query_folder(dialect: str) -> str:
    return "csparql_query" if dialect == "c-sparql" else "cqels_query"


def query_path(dialect: str, name: str) -> Path:
    return citybench(query_folder(dialect), f"{name}.txt")


def query_files(dialect: str) -> list[Path]:
    """CityBench's query files in a dialect (c-sparql or cqels)."""
    return sorted(citybench(query_folder(dialect)).glob("*.txt"))


def query_params(dialect: str) -> list[Any]:
    """`query_files` as pytest parameters (id: the file name), made at collection time without
    needing the data: one skipping parameter stands for them when it is not there."""
    return shared_params(
        "citybench",
        query_folder(dialect),
        params=lambda folder: [pytest.param(path, id=path.name) for path in sorted(folder.glob("*.txt"))],
    )


def streams_of(text: str) -> list[str]:
    """The stream IRIs a CityBench query reads, in order of appearance."""
    return list(dict.fromkeys(re.findall(r"stream\s*<([^>]+)>", text, flags=re.IGNORECASE)))


def run_rsep(dialect: str, name: str, files: dict[str, Path]) -> list[dict[str, object]]:
    text = query_path(dialect, name).read_text()
    request = RunRequest(
        query_path(dialect, name),
        [StreamFile(iri, files[iri]) for iri in streams_of(text)],
        [KbFile(sensor_repository())],
        engine="inprocess",
    )
    return output(request)


# --------------------------------------------------------------------------- the oracle


def seconds(lexical: str) -> float:
    moment = datetime.fromisoformat(lexical.replace("Z", "+00:00"))
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


@dataclass(frozen=True)
class Event:
    time: float
    triples: tuple[ox.Triple, ...]


def read_events(path: Path) -> list[Event]:
    graphs: dict[str, list[ox.Triple]] = {}
    times: dict[str, float] = {}
    for quad in ox.parse(path=str(path), format=ox.RdfFormat.TRIG):
        if isinstance(quad.graph_name, ox.DefaultGraph):
            assert quad.predicate.value == PROV_GENERATED_AT
            times[str(quad.subject)] = seconds(quad.object.value)
        else:
            graphs.setdefault(str(quad.graph_name), []).append(
                ox.Triple(quad.subject, quad.predicate, quad.object)
            )
    return sorted((Event(times[g], tuple(triples)) for g, triples in graphs.items()), key=lambda e: e.time)


def in_window(events: list[Event], t: float) -> list[ox.Triple]:
    """RSEP-QL's W^τ(3 s, β) at a close t (or CQELS's [RANGE 3s] at t): t - 3 < t_i <= t."""
    return [triple for event in events if t - WIDTH < event.time <= t for triple in event.triples]


class Oracle:
    """A plain pyoxigraph store with the knowledge base in KB_GRAPH and the windows loaded per
    evaluation by the caller."""

    def __init__(self) -> None:
        self.store = ox.Store()
        kb = sensor_repository()
        self.store.load(path=str(kb), format=ox.RdfFormat.TURTLE, to_graph=ox.NamedNode(KB_GRAPH))

    def answer(self, query: str, windows: dict[str, list[ox.Triple]]) -> list[dict[str, str]]:
        for graph in windows:
            self.store.remove_graph(ox.NamedNode(graph))
        for graph, triples in windows.items():
            self.store.extend(ox.Quad(t.subject, t.predicate, t.object, ox.NamedNode(graph)) for t in triples)
        results = self.store.query(query)
        names = [v.value for v in results.variables]
        return [{n: str(v) for n, v in zip(names, row, strict=True) if v is not None} for row in results]


def csparql_oracle_query(text: str) -> str:
    """C-SPARQL's semantics in plain SPARQL: the query over the merge of the static data and one
    graph holding every window."""
    text = re.sub(r"from\s+stream\s*<[^>]+>\s*\[[^\]]*\]", "", text, flags=re.IGNORECASE)
    text = re.sub(r"from\s*<[^>]+>", "", text, flags=re.IGNORECASE)
    return re.sub(
        r"\bwhere\b", f"FROM <{KB_GRAPH}> FROM <urn:oracle:window> WHERE", text, count=1, flags=re.I
    )


def cqels_oracle_query(text: str, streams: list[str]) -> str:
    """CQELS's semantics in plain SPARQL: each `stream <s> [range 3s] {P}` is `GRAPH <window of s> {P}`."""
    for index, stream in enumerate(streams):
        block = re.compile(rf"stream\s*<{re.escape(stream)}>\s*\[[^\]]*\]", flags=re.IGNORECASE)
        text = block.sub(f"GRAPH <urn:oracle:window{index}>", text)
    named = " ".join(f"FROM NAMED <urn:oracle:window{i}>" for i in range(len(streams)))
    return re.sub(r"\bwhere\b", f"FROM <{KB_GRAPH}> {named} WHERE", text, count=1, flags=re.I)


def expected_csparql(name: str, files: dict[str, Path], oracle: Oracle) -> dict[float, list[dict[str, str]]]:
    """Solutions per window close. Closes every second; only a close within 3 s of an event has a
    non-empty window, and Q1-Q3 need window triples, so the others answer nothing. The windows
    start at the query's t0, the first event: a close t counts when t - 3 >= t0 (as the C-SPARQL
    engine and CSRBench's oracle evaluate no window that opened before the query)."""
    text = query_path("c-sparql", name).read_text()
    events = {iri: read_events(files[iri]) for iri in streams_of(text)}
    t0 = min(e.time for stream in events.values() for e in stream)
    every = {e.time + k for stream in events.values() for e in stream for k in range(WIDTH)}
    closes = sorted(close for close in every if close - WIDTH >= t0)
    query = csparql_oracle_query(text)
    out = {}
    for close in closes:
        window = [t for stream in events.values() for t in in_window(stream, close)]
        out[close] = oracle.answer(query, {"urn:oracle:window": window})
    return {close: rows for close, rows in out.items() if rows}


def expected_cqels(name: str, files: dict[str, Path], oracle: Oracle) -> dict[float, list[dict[str, str]]]:
    """Solutions per new event (content change), each window block over its stream's window."""
    text = query_path("cqels", name).read_text()
    streams = streams_of(text)
    events = {iri: read_events(files[iri]) for iri in streams}
    times = sorted({e.time for stream in events.values() for e in stream})
    query = cqels_oracle_query(text, streams)
    out = {}
    for t in times:
        windows = {f"urn:oracle:window{i}": in_window(events[iri], t) for i, iri in enumerate(streams)}
        out[t] = oracle.answer(query, windows)
    return {t: rows for t, rows in out.items() if rows}


def by_time(lines: list[dict[str, object]]) -> dict[float, list[dict[str, str]]]:
    """rsep's output grouped by evaluation (end), each evaluation's rows in output order; checks
    that start = end - 3 s and that evaluations come in time order."""
    grouped: dict[float, list[dict[str, str]]] = {}
    last = float("-inf")
    for line in lines:
        start, end = seconds(str(line["start"])), seconds(str(line["end"]))
        assert start == end - WIDTH and end >= last
        last = end
        grouped.setdefault(end, []).append(line["bindings"])  # type: ignore[arg-type]
    return grouped


def sort_rows(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    return sorted(rows, key=lambda row: sorted(row.items()))
