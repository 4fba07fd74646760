"""The algebra printer gives a readable, resolved dump of a parsed query."""

from pathlib import Path

from rsep.grammar import parse_event_query
from rsep.plugin.algebra.printer import dump

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "smart-grid" / "query.rq"


def test_dump_of_the_smart_grid_example():
    lines = dump(parse_event_query(EXAMPLE.read_text())).splitlines()
    assert lines[:6] == [
        "spaseq: SELECT ?house ?fr1 ?fr2 ?house2 ?city ?oname ?sp",
        "WITHIN 1800 s",
        "STREAM S1 <http://smartgrid.org/mainSource>",
        "STREAM S2 <http://smartgrid.org/weather>",
        "STREAM S3 <http://smartgrid.org/storageSource>",
        "CONSUMPTION unrestricted",
    ]
    assert lines[6:9] == ["MATCH", "  SEQ", lines[8]]
    assert lines[8].startswith("    EVENT A ON <http://smartgrid.org/mainSource> { ?house ")
    assert lines[9:11] == ["    ';'", "    PLUS iterations ','"]
    assert lines[11].startswith("      EVENT B ON <http://smartgrid.org/weather> {")
    assert lines[12] == "    ','"
    assert lines[13].endswith("FILTER (?fr2 < ?fr1) }")
