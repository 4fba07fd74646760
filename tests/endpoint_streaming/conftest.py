"""Fixtures of the continuous-query endpoint tests: applications on a data
folder in tmp (in-process engine, checkpoint after every batch, short SSE
heartbeats), shut down after the test, and helpers to post events."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from rsep.endpoint.app import create_app
from rsep.endpoint.engines import Streaming
from rsep.plugin.graph_events import GraphEvent
from rsep.plugin.store.event_reader import read_event_file
from tests.paths import REPO

SMART_GRID = REPO / "examples" / "smart-grid"
SMART_GRID_STREAMS = {
    "http://smartgrid.org/mainSource": SMART_GRID / "power.trig",
    "http://smartgrid.org/weather": SMART_GRID / "weather.trig",
    "http://smartgrid.org/storageSource": SMART_GRID / "storage.trig",
}


def config(data: Path, **overrides: Any) -> dict[str, Any]:
    return {
        "RSEP_DATA_DIR": str(data),
        "RSEP_ENGINE": "inprocess",
        "RSEP_CHECKPOINT_INTERVAL": 0,
        "RSEP_SSE_HEARTBEAT": 0.2,
        "TESTING": True,
        **overrides,
    }


def shut_down(app: Flask) -> None:
    for hook in app.extensions.get("rsep.shutdown", []):
        hook()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def make_app(data_dir: Path) -> Iterator[Callable[..., Flask]]:
    """Apps on the test's data folder; each is shut down (cleanly) at the end."""
    apps: list[Flask] = []

    def make(**overrides: Any) -> Flask:
        app = create_app(config(data_dir, **overrides))
        apps.append(app)
        return app

    yield make
    for app in apps:
        shut_down(app)


@pytest.fixture
def app(make_app: Callable[..., Flask]) -> Flask:
    return make_app()


def service(app: Flask) -> Streaming:
    found: Streaming = app.extensions["rsep.streaming"]
    return found


def wait_for(predicate: Callable[[], object], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the engine")
        time.sleep(0.02)


def caught_up(app: Flask) -> Callable[[], bool]:
    """Every registered query has read the whole log."""

    def check() -> bool:
        found = service(app)
        head = found.log.next_position
        for query in found.registry.all():
            progress = found.engine.progress(query.id)
            if progress is None or progress.position < head:
                return False
        return True

    return check


def load_kb(app: Flask) -> None:
    """The smart-grid example's background knowledge, straight into the store."""
    kb = app.extensions["rsep"].kb
    kb.load(SMART_GRID / "kb.trig")


def nquads_of(event: GraphEvent) -> str:
    """An event as the N-Quads a client posts (graph + prov:generatedAtTime)."""
    return event.nquads()


def smart_grid_events() -> list[GraphEvent]:
    """The example's three streams merged in time order (how they would arrive)."""
    events = [
        e
        for index, (iri, path) in enumerate(SMART_GRID_STREAMS.items())
        for e in read_event_file(path, iri, scope=f"s{index}")
    ]
    return sorted(events, key=lambda e: e.time.seconds)
