"""Durable file writes, the few ways every part of rsep that keeps state on disk makes them.

A file replaced whole (`write_atomically`: a temporary file, fsynced, renamed over the old one,
its folder fsynced) is the old one or the new one after a crash, never a mix; `fsync_path`
makes a file's data or a folder's entries durable (a new file's name needs its folder synced).
"""

from __future__ import annotations

import os
from pathlib import Path


def fsync_path(path: Path) -> None:
    """fsync a file or a folder by its path."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def write_atomically(path: Path, data: bytes) -> None:
    """Write `data` to `path` so that a crash leaves the old file or the new
    one, never a mix: temporary file, fsync, rename, fsync of the folder."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    fsync_path(path.parent)
