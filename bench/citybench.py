"""CityBench's CSV streams as rsep graph events (TriG), for the C-SPARQL and CQELS queries.

The mapping follows CityBench's own stream annotators (`DataWrapper.get*Statements`
in CityBench's sources) and the triples its queries match:

    <obs> a ssn:Observation ;
          ssn:observedBy <SampleEventService#AarhusTrafficData182955> ;
          ssn:observedProperty <SampleEventService#Property-...> ;
          sao:hasValue "0.0215..."^^xsd:double .

- The sensor is the stream: `ssn:observedBy` is the stream IRI
  (`SampleEventService#<file name without .stream>`), as the queries write it.
- One observation per property the sensor observes (`<sensor> ssn:observes <p>`
  in dataset/SensorRepository.n3); the property's class (`<p> a ct:CongestionLevel`)
  stays in the repository, where the queries look it up (`?p1 a ct:CongestionLevel`).
  Observations are typed `ssn:Observation` only, as CityBench types them: its queries
  join on `?obId1 a ?ob . ?obId2 a ?ob`, which a second type would multiply.
- Values, as CityBench computes them: traffic AvgSpeed = avgSpeed, VehicleCount =
  vehicleCount, MeasureTime = avgMeasuredTime, EstimatedTime = distance / avgSpeed (-1 when
  avgSpeed is 0), CongestionLevel = vehicleCount / distance (-1 when the distance is 0), the
  distance being DISTANCE_IN_METERS of dataset/MetaData/trafficMetaData.csv; weather
  Temperature = tempm, Humidity = hum, WindSpeed = wspdm; pollution API = the largest of its
  five pollutant readings. Java doubles are xsd:double; Humidity and API are Java ints, which
  Jena's `addLiteral` writes as xsd:long. (CityBench gives MeasureTime no value: its annotator
  looks for a type containing "MeasuredTime", and the repository's class is ct:MeasureTime; we
  give it avgMeasuredTime. No CityBench query reads it.) tests/csparql/test_citybench_converter.py
  checks this against rows built from the CSV text.
- One event (named graph) per CSV row holding all of that row's observations: they share
  the row's timestamp, and CityBench streams them together. The timestamp is the row's
  TIMESTAMP (or `timestamp`) column as an xsd:dateTime without a timezone (rsep reads it
  as UTC).
- IRIs are deterministic: row n (1-based, counting data rows) of stream S is the graph
  `SampleEventService#S-n` and holds `SampleEventService#S-n-<PropertyClass>`.

Run it by its path from any directory (it imports nothing from the repository), or as a
module from the repository root (`-m bench.citybench` needs the root on the path):

    .venv/bin/python bench/citybench.py FILE.stream [--start T] [--end T] > events.trig

bench/README.md ("CityBench") shows a whole run of Q1 over converted streams.
"""

from __future__ import annotations

import argparse
import csv
import functools
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph as ox

SAMPLE = "http://www.insight-centre.org/dataset/SampleEventService#"
CT = "http://www.insight-centre.org/citytraffic#"
SSN = "http://purl.oclc.org/NET/ssnx/ssn#"
SAO = "http://purl.oclc.org/NET/sao/"
PROV_GENERATED_AT = "http://www.w3.org/ns/prov#generatedAtTime"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"

Values = Callable[[dict[str, str], float], dict[str, float | int]]


def citybench_root() -> Path:
    """The CityBench data: `$RSEP_SHARED_DATA/citybench`, else `../shared/data/citybench`."""
    repo = Path(__file__).resolve().parents[1]
    return Path(os.environ.get("RSEP_SHARED_DATA", repo.parent / "shared" / "data")) / "citybench"


def stream_iri(name: str) -> str:
    """The stream (and sensor) IRI of a CityBench stream file name, e.g. AarhusTrafficData182955."""
    return SAMPLE + name


@dataclass(frozen=True, slots=True)
class Repository:
    """What the converter needs from CityBench's dataset folder: each sensor's observed properties
    (class local name -> property IRI) and the traffic segments' lengths."""

    properties: dict[str, dict[str, str]]
    distances: dict[str, float]

    @classmethod
    def load(cls, dataset: Path) -> Repository:
        return _load_repository(dataset.resolve())

    def observed(self, stream: str) -> dict[str, str]:
        try:
            return self.properties[stream_iri(stream)]
        except KeyError:
            raise ValueError(f"{stream} observes nothing in SensorRepository.n3") from None


@functools.cache
def _load_repository(dataset: Path) -> Repository:
    store = ox.Store()
    store.load(path=str(dataset / "SensorRepository.n3"), format=ox.RdfFormat.TURTLE)
    query = f"SELECT ?s ?p ?c WHERE {{ ?s <{SSN}observes> ?p . ?p a ?c FILTER STRSTARTS(STR(?c), '{CT}') }}"
    properties: dict[str, dict[str, str]] = {}
    for row in store.query(query):  # type: ignore[union-attr]
        sensor, prop, kind = (term.value for term in row)  # type: ignore[union-attr]
        properties.setdefault(sensor, {})[kind[len(CT) :]] = prop
    with (dataset / "MetaData" / "trafficMetaData.csv").open(encoding="utf-8", newline="") as file:
        distances = {r["REPORT_ID"]: float(r["DISTANCE_IN_METERS"]) for r in csv.DictReader(file)}
    return Repository(properties, distances)


def _traffic(row: dict[str, str], distance: float) -> dict[str, float | int]:
    speed, count = float(row["avgSpeed"]), float(row["vehicleCount"])
    return {
        "AvgSpeed": speed,
        "VehicleCount": count,
        "MeasureTime": float(row["avgMeasuredTime"]),
        "EstimatedTime": distance / speed if speed != 0 else -1.0,
        "CongestionLevel": count / distance if distance != 0 else -1.0,
    }


def _weather(row: dict[str, str], distance: float) -> dict[str, float | int]:
    return {
        "Temperature": float(row["tempm"]),
        "Humidity": int(row["hum"]),
        "WindSpeed": float(row["wspdm"]),
    }


_POLLUTANTS = ("ozone", "particullate_matter", "carbon_monoxide", "sulfure_dioxide", "nitrogen_dioxide")


def _pollution(row: dict[str, str], distance: float) -> dict[str, float | int]:
    return {"API": max(int(row[name]) for name in _POLLUTANTS)}


_KINDS: dict[str, Values] = {
    "AarhusTrafficData": _traffic,
    "AarhusWeatherData": _weather,
    "AarhusPollutionData": _pollution,
}


@dataclass(frozen=True, slots=True)
class Observation:
    iri: str
    prop: str
    kind: str
    value: float | int
    """A Java double (xsd:double) or int (xsd:long), as CityBench's annotators type it."""


@dataclass(frozen=True, slots=True)
class Row:
    """One CSV row: its number (1-based), timestamp (xsd:dateTime lexical) and observations."""

    number: int
    time: str
    observations: tuple[Observation, ...]

    def graph(self, stream: str) -> str:
        return f"{SAMPLE}{stream}-{self.number}"


def read_rows(
    path: Path, repository: Repository, *, start: str | None = None, end: str | None = None
) -> list[Row]:
    """The rows of a `.stream` file with start <= TIMESTAMP < end (ISO strings, compared as text)."""
    stream = path.stem
    kind = next((k for k in _KINDS if stream.startswith(k)), None)
    if kind is None:
        raise ValueError(f"{path.name}: not a traffic, weather or pollution stream")
    observed = repository.observed(stream)
    rows: list[Row] = []
    with path.open(encoding="utf-8", newline="") as file:
        for number, record in enumerate(csv.DictReader(file), start=1):
            time = (record.get("TIMESTAMP") or record["timestamp"]).strip().replace(" ", "T")
            if (start is not None and time < start) or (end is not None and time >= end):
                continue
            distance = repository.distances.get(record.get("REPORT_ID", ""), 0.0)
            values = _KINDS[kind](record, distance)
            observations = tuple(
                Observation(f"{SAMPLE}{stream}-{number}-{name}", observed[name], name, values[name])
                for name in sorted(observed)
                if name in values
            )
            rows.append(Row(number, time, observations))
    return rows


def quads(stream: str, rows: Sequence[Row]) -> Iterator[ox.Quad]:
    sensor = ox.NamedNode(stream_iri(stream))
    double, long = ox.NamedNode(XSD + "double"), ox.NamedNode(XSD + "long")
    for row in rows:
        graph = ox.NamedNode(row.graph(stream))
        for observation in row.observations:
            obs = ox.NamedNode(observation.iri)
            yield ox.Quad(obs, ox.NamedNode(RDF_TYPE), ox.NamedNode(SSN + "Observation"), graph)
            yield ox.Quad(obs, ox.NamedNode(SSN + "observedBy"), sensor, graph)
            yield ox.Quad(obs, ox.NamedNode(SSN + "observedProperty"), ox.NamedNode(observation.prop), graph)
            yield ox.Quad(
                obs,
                ox.NamedNode(SAO + "hasValue"),
                ox.Literal(
                    repr(observation.value), datatype=long if isinstance(observation.value, int) else double
                ),
                graph,
            )
        time = ox.Literal(row.time, datatype=ox.NamedNode(XSD + "dateTime"))
        yield ox.Quad(graph, ox.NamedNode(PROV_GENERATED_AT), time, ox.DefaultGraph())


def convert(
    path: Path, repository: Repository | None = None, *, start: str | None = None, end: str | None = None
) -> str:
    """TriG text of a CityBench `.stream` file (rows with start <= TIMESTAMP < end)."""
    repository = repository or Repository.load(path.resolve().parents[1] / "dataset")
    rows = read_rows(path, repository, start=start, end=end)
    data = ox.serialize(list(quads(path.stem, rows)), format=ox.RdfFormat.TRIG)
    return (data or b"").decode()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/citybench.py", description=__doc__.split("\n")[0])
    parser.add_argument("stream", type=Path, metavar="FILE.stream")
    parser.add_argument("--start", help="first TIMESTAMP to keep (e.g. 2014-08-01T08:00:00)")
    parser.add_argument("--end", help="first TIMESTAMP to drop")
    args = parser.parse_args(argv)
    sys.stdout.write(convert(args.stream, start=args.start, end=args.end))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
