"""The IRIs rsep writes and reads: its own namespace, the vocabularies its graphs use, and the
names of the graphs and resources it mints. Constants only, below every other module of the
core, so that the store adapter and the service layer name them from one place."""

from __future__ import annotations

RSEP = "https://w3id.org/rsep#"
"""rsep's own vocabulary (`rsep:Match`, `rsep:start`, time functions such as `rsep:duration`)."""
RS = "http://www.w3.org/2001/sw/DataAccess/tests/result-set#"
"""The W3C result-set vocabulary: how a match graph holds its solution."""
PROV = "http://www.w3.org/ns/prov#"
PROV_GENERATED_AT = PROV + "generatedAtTime"
"""An event's timestamp (the end of its interval)."""
PROV_STARTED_AT = PROV + "startedAtTime"
"""The start of an event's interval, for an event that spans one."""
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"

MATCHES_GRAPH = "urn:rsep:matches"
"""The graph of every match graph's metadata."""
MATCH_IRI_PREFIX = "urn:rsep:match:"
"""Match graphs and window evaluation graphs are named under it."""
WATERMARK_STREAM = "urn:rsep:watermark"
"""The log's own stream of watermark marks: an event with no triple at time W says that no event
before W comes any more (rsep.plugin.service.reorder). No query reads it; no client posts to it."""
LATE_GRAPH = "urn:rsep:late"
"""The graph that lists the late events kept under `--late side`."""
LATE_IRI_PREFIX = "urn:rsep:late:"
"""A late event kept under `--late side` is the graph of this prefix and a number."""
EVENT_IRI_PREFIX = "urn:rsep:event:"
"""Events named by a blank node are cited as this prefix and their log position."""
QUERY_IRI_PREFIX = "urn:rsep:query:"
"""A registered query's IRI is this prefix and its id."""
