"""The smart-grid example (examples/smart-grid: the SPAseq paper's Query 1 over three streams and a
background knowledge base), as the endpoint and engine tests post it."""

from __future__ import annotations

from flask import Flask

from rsep.plugin.graph_events import GraphEvent
from rsep.plugin.store.event_reader import read_event_file
from tests.support.paths import REPO

SMART_GRID = REPO / "examples" / "smart-grid"
SMART_GRID_STREAMS = {
    "http://smartgrid.org/mainSource": SMART_GRID / "power.trig",
    "http://smartgrid.org/weather": SMART_GRID / "weather.trig",
    "http://smartgrid.org/storageSource": SMART_GRID / "storage.trig",
}


def load_kb(app: Flask) -> None:
    """The smart-grid example's background knowledge, straight into the store."""
    kb = app.extensions["rsep"].kb
    kb.load(SMART_GRID / "kb.trig")


def smart_grid_events() -> list[GraphEvent]:
    """The example's three streams merged in time order (how they would arrive)."""
    events = [
        e
        for index, (iri, path) in enumerate(SMART_GRID_STREAMS.items())
        for e in read_event_file(path, iri, scope=f"s{index}")
    ]
    return sorted(events, key=lambda e: e.time.seconds)
