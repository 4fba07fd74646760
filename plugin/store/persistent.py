"""The on-disk Oxigraph store of an endpoint."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox


def open_store(path: Path) -> ox.Store:
    """Open (creating if needed) the store at `path`; one per process."""
    path.mkdir(parents=True, exist_ok=True)
    return ox.Store(str(path))
