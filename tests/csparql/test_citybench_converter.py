"""bench.citybench's CSV -> SSN/SAO mapping checked against CityBench's annotation rules, built
here straight from the CSV text, independently of the converter (which the CityBench oracle in
tests/support/citybench.py shares with rsep, so it cannot check the mapping itself).

The rules are CityBench's stream annotators, `DataWrapper.get*Observation` and
`DataWrapper.get*Statements` (CityBench's `src/org/insight_centre/aceis/io/streams/DataWrapper.java`),
with the payloads of `RDFFileManager.extractEventPayloads`: for each property `?x` a sensor
observes (`<sensor> ssn:observes ?x . ?x a ?type` in dataset/SensorRepository.n3), one
observation `a ssn:Observation ; ssn:observedBy <sensor> ; ssn:observedProperty ?x ;
sao:hasValue v`, v by the property's type:

- traffic (`getAarhusTrafficObservation`): AvgSpeed = avgSpeed, VehicleCount = vehicleCount,
  EstimatedTime = distance / avgSpeed (-1 when avgSpeed is 0), CongestionLevel = vehicleCount /
  distance (-1 when the distance is 0), distance = DISTANCE_IN_METERS of the row's REPORT_ID in
  dataset/MetaData/trafficMetaData.csv; all Java doubles, so xsd:double (Jena `addLiteral(p, double)`);
- weather: Temperature = tempm, WindSpeed = wspdm (doubles), Humidity = hum, parsed as a Java
  int, so xsd:long (Jena `addLiteral(p, long)`);
- pollution: API = the largest of the five pollutant readings (`PollutionObservation`), an int:
  xsd:long.

One departure, recorded in docs/semantics.md: CityBench gives MeasureTime a value only if its
type contains "MeasuredTime", which the repository's ct:MeasureTime does not, so its MeasureTime
observations carry no sao:hasValue; the converter gives them avgMeasuredTime (no CityBench query
reads MeasureTime). Values are compared as numbers: Java and Python print doubles differently.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph as ox
import pytest

from bench.citybench import Repository, convert
from tests.support.citybench import citybench
from tests.support.paths import REPO

pytestmark = pytest.mark.shared_data("citybench")

SAMPLE = "http://www.insight-centre.org/dataset/SampleEventService#"
SSN = "http://purl.oclc.org/NET/ssnx/ssn#"
SAO = "http://purl.oclc.org/NET/sao/"
CT = "http://www.insight-centre.org/citytraffic#"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
PROV_GENERATED_AT = "http://www.w3.org/ns/prov#generatedAtTime"


@dataclass(frozen=True)
class Observed:
    """One observation as the check sees it: what it observes and its value (datatype, number)."""

    prop: str
    datatype: str | None
    value: float | None


def csv_row(stream: str, number: int) -> dict[str, str]:
    """Data row `number` (1-based) of a `.stream` file, read from its text."""
    lines = (citybench() / "streams" / f"{stream}.stream").read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    return dict(zip(header, lines[number].split(","), strict=True))


def observed_properties(stream: str) -> dict[str, str]:
    """Property IRI -> its ct: type, for the sensor `stream` (RDFFileManager.extractEventPayloads)."""
    store = ox.Store()
    store.load(path=str(citybench() / "dataset" / "SensorRepository.n3"), format=ox.RdfFormat.TURTLE)
    query = f"SELECT ?x ?type WHERE {{ <{SAMPLE}{stream}> <{SSN}observes> ?x . ?x a ?type }}"
    return {row[0].value: row[1].value[len(CT) :] for row in store.query(query)}  # type: ignore[union-attr]


def distance(report_id: str) -> float:
    lines = (citybench() / "dataset" / "MetaData" / "trafficMetaData.csv").read_text().splitlines()
    header = lines[0].split(",")
    rows = (dict(zip(header, line.split(","), strict=False)) for line in lines[1:])
    return next(float(row["DISTANCE_IN_METERS"]) for row in rows if row["REPORT_ID"] == report_id)


def citybench_values(stream: str, row: dict[str, str]) -> dict[str, tuple[str, float]]:
    """Type -> (datatype, value) by DataWrapper's rules."""
    double, long = XSD + "double", XSD + "long"
    if stream.startswith("AarhusTrafficData"):
        speed, count, meters = float(row["avgSpeed"]), float(row["vehicleCount"]), distance(row["REPORT_ID"])
        return {
            "AvgSpeed": (double, speed),
            "VehicleCount": (double, count),
            "EstimatedTime": (double, meters / speed if speed != 0 else -1.0),
            "CongestionLevel": (double, count / meters if meters != 0 else -1.0),
            "MeasureTime": (double, float(row["avgMeasuredTime"])),  # the departure, see above
        }
    if stream.startswith("AarhusWeatherData"):
        return {
            "Temperature": (double, float(row["tempm"])),
            "Humidity": (long, int(row["hum"])),
            "WindSpeed": (double, float(row["wspdm"])),
        }
    pollutants = ("ozone", "particullate_matter", "carbon_monoxide", "sulfure_dioxide", "nitrogen_dioxide")
    return {"API": (long, max(int(row[name]) for name in pollutants))}


def expected(stream: str, number: int) -> tuple[str, set[Observed]]:
    row = csv_row(stream, number)
    time = (row.get("TIMESTAMP") or row["timestamp"]).replace(" ", "T")
    values = citybench_values(stream, row)
    observations = {Observed(prop, *values[kind]) for prop, kind in observed_properties(stream).items()}
    return time, observations


def converted(stream: str, time: str) -> tuple[str, set[Observed]]:
    """The converter's one event at `time`: its timestamp and observations, checked to be typed
    ssn:Observation and observed by the stream's sensor."""
    path = citybench() / "streams" / f"{stream}.stream"
    trig = convert(path, Repository.load(citybench() / "dataset"), start=time, end=time + "~")
    quads = list(ox.parse(trig.encode(), format=ox.RdfFormat.TRIG))
    stamps = [q for q in quads if isinstance(q.graph_name, ox.DefaultGraph)]
    assert len(stamps) == 1 and stamps[0].predicate.value == PROV_GENERATED_AT
    stamp = stamps[0].object
    assert isinstance(stamp, ox.Literal) and stamp.datatype.value == XSD + "dateTime"
    by_subject: dict[str, dict[str, ox.NamedNode | ox.Literal]] = {}
    for quad in quads:
        if quad.graph_name == stamps[0].subject:
            by_subject.setdefault(quad.subject.value, {})[quad.predicate.value] = quad.object  # type: ignore[assignment]
    observations = set()
    for properties in by_subject.values():
        assert properties[RDF_TYPE] == ox.NamedNode(SSN + "Observation")
        assert properties[SSN + "observedBy"] == ox.NamedNode(SAMPLE + stream)
        value = properties.get(SAO + "hasValue")
        assert isinstance(value, ox.Literal)
        observations.add(
            Observed(properties[SSN + "observedProperty"].value, value.datatype.value, float(value.value))
        )
    return stamp.value, observations


@pytest.mark.parametrize(
    ("stream", "number"),
    [
        ("AarhusTrafficData182955", 1),
        ("AarhusTrafficData182955", 2),
        ("AarhusTrafficData158505", 3),
        ("AarhusTrafficData158355", 2740),  # avgSpeed 0: EstimatedTime is -1
        ("AarhusWeatherData0", 1),
        ("AarhusWeatherData0", 2),
        ("AarhusPollutionData158324", 1),
    ],
)
def test_the_converter_maps_a_csv_row_as_citybench_annotates_it(stream: str, number: int):
    time, observations = expected(stream, number)
    assert len(observations) == len(citybench_values(stream, csv_row(stream, number)))
    assert converted(stream, time) == (time, observations)


def test_the_check_reads_the_rows_it_means():
    """Spot values from the CSV text, so that a wrong row or column cannot pass unnoticed."""
    assert csv_row("AarhusWeatherData0", 1) == {
        "hum": "56",
        "tempm": "18",
        "wspdm": "7.4",
        "TIMESTAMP": "2014-08-01T00:00:00",
    }
    assert citybench_values("AarhusPollutionData158324", csv_row("AarhusPollutionData158324", 1)) == {
        "API": (XSD + "long", 101)
    }
    zero = csv_row("AarhusTrafficData158355", 2740)
    assert (
        zero["avgSpeed"] == "0"
        and citybench_values("AarhusTrafficData158355", zero)["EstimatedTime"][1] == -1.0
    )
    assert Path(citybench() / "dataset" / "SensorRepository.n3").is_file()


def test_the_converter_runs_by_its_path_from_any_directory(tmp_path: Path):
    """bench/README.md's command, run outside the repository: the same TriG as `convert`."""
    stream = citybench() / "streams" / "AarhusTrafficData182955.stream"
    window = ["--start", "2014-08-01T08:00:00", "--end", "2014-08-01T08:15:00"]
    script = REPO / "bench" / "citybench.py"
    done = subprocess.run(
        [sys.executable, str(script), str(stream), *window], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == convert(stream, start=window[1], end=window[3])
    assert done.stdout.count("generatedAtTime") == 3  # readings at 08:00, 08:05 and 08:10
