"""Converts the SPAseq reference engine's test inputs into rsep event files.

The engine reads N-Triples where every N consecutive triples form one event
(N is the third field of the `stream*.txt` files) and stamps events with their
arrival time. We emulate its "sequence-based generation": streams are fed in
the order of the stream file, one event per millisecond; an event carrying an
`<http://example/occursat>` triple (the conjunction test) uses that value, in
seconds, instead. The inputs are in the shared data folder (../shared/data/spaseq):
without it the tests that read them skip.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.support.shared_data import shared_data

OCCURS_AT = "<http://example/occursat>"


@dataclass(frozen=True)
class ReferenceStream:
    iri: str
    data: Path
    triples_per_event: int


def streams_of(folder: str) -> list[ReferenceStream]:
    root = shared_data("spaseq", folder)
    (spec,) = sorted(root.glob("stream*.txt"))
    streams = []
    for line in spec.read_text().splitlines():
        if not line.strip():
            continue
        iri, path, size = line.split()
        data = root / Path(path.strip("<>")).name
        if not data.exists():  # credit-card's stream file names card20k.n3; the folder has card10k.n3
            (data,) = [p for p in root.iterdir() if p.suffix in (".nt", ".n3")]
        streams.append(ReferenceStream(iri.strip("<>"), data, int(size)))
    return streams


def events_of(stream: ReferenceStream) -> list[list[str]]:
    lines = [
        line.strip()
        for line in stream.data.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    size = stream.triples_per_event
    return [lines[i : i + size] for i in range(0, len(lines), size)]


def write_trig(folder: str, target: Path) -> dict[str, Path]:
    """One TriG file per stream in `target`; returns stream IRI -> file."""
    files: dict[str, Path] = {}
    tick = 0
    for index, stream in enumerate(streams_of(folder)):
        chunks = []
        for position, triples in enumerate(events_of(stream)):
            tick += 1
            stamp = f'"{tick / 1000:.3f}"^^<http://www.w3.org/2001/XMLSchema#decimal>'
            for triple in triples:
                if OCCURS_AT in triple:
                    value = triple.split(OCCURS_AT)[1].split('"')[1]
                    stamp = f'"{value}"^^<http://www.w3.org/2001/XMLSchema#integer>'
            graph = f"<urn:spaseq:{folder}:s{index}:e{position}>"
            body = "\n  ".join(triples)
            chunks.append(
                f"{graph} {{\n  {body}\n}}\n{graph} <http://www.w3.org/ns/prov#generatedAtTime> {stamp} .\n"
            )
        path = target / f"stream{index}.trig"
        path.write_text("".join(chunks))
        files[stream.iri] = path
    return files


def query_of(folder: str) -> Path:
    (query,) = sorted(shared_data("spaseq", folder).glob("*.q"))
    return query
