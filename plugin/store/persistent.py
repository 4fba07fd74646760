"""The on-disk Oxigraph store of an endpoint."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox

from rsep.plugin.errors import EngineUnavailable


class StoreUnreadable(EngineUnavailable):
    """The store's files are damaged (RocksDB reports a corruption): the message names the folder
    and what RocksDB found."""


def open_store(path: Path) -> ox.Store:
    """Open (creating if needed) the store at `path`; one per process. A damaged store is
    `StoreUnreadable` (pyoxigraph raises a bare RuntimeError); a locked one stays an OSError."""
    path.mkdir(parents=True, exist_ok=True)
    try:
        return ox.Store(str(path))
    except RuntimeError as error:
        raise StoreUnreadable(
            f"store {path}: cannot be opened ({error}); restore the folder from a backup (it holds the "
            "background knowledge, the match graphs and the late events)"
        ) from None
