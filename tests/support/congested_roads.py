"""C-SPARQL's REGISTER STREAM over the construct-tumbling fixture (tests/csparql/fixtures): cars on
roads, and the stream of congested roads a registered CONSTRUCT derives from them."""

from __future__ import annotations

from tests.support.paths import REPO

TUMBLING = REPO / "tests" / "csparql" / "fixtures" / "construct-tumbling"
EX = "http://example.org/"
CONGESTED = f"{EX}CongestedRoads"
PRODUCER = f"""REGISTER STREAM <{CONGESTED}> AS
PREFIX : <{EX}>
CONSTRUCT {{ ?road :congestedWith ?n }}
FROM STREAM <{EX}cars> [RANGE 10s TUMBLING]
WHERE {{
  {{ SELECT ?road (COUNT(?car) AS ?n) WHERE {{ ?car :on ?road }} GROUP BY ?road HAVING (COUNT(?car) >= 2) }}
}}
"""
"""construct-tumbling's query, registered under an IRI: r1 congestedWith 2 at 10, r2 at 20."""
