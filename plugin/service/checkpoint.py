"""Atomic, verified checkpoints, one folder per query: `DATA/checkpoints/<id>/`.

Each checkpoint is a new file `<sequence>.ckpt` (a header, the SHA-256 of the
payload, the payload), written to a temporary file, fsynced, renamed and the
folder fsynced. The newest few are kept: if the latest is missing, truncated or
corrupt, `load` falls back to the one before, and the engine replays the log
from there (match writes are idempotent, so a replayed batch changes nothing).
"""

from __future__ import annotations

import hashlib
import shutil
import threading
from pathlib import Path

from rsep.plugin.service.registry import fsync_directory, write_atomically

MAGIC = b"RSEPCKPT1\n"
_DIGEST = 32


class CheckpointStore:
    """Checkpoint payloads (bytes) per query id."""

    def __init__(self, root: Path, keep: int = 2) -> None:
        if keep < 1:
            raise ValueError("keep at least one checkpoint")
        self.root = root
        self.keep = keep
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def save(self, query_id: str, payload: bytes) -> Path:
        """Write a new checkpoint; older ones beyond `keep` are removed after."""
        with self._lock:
            folder = self.root / query_id
            created = not folder.exists()
            folder.mkdir(parents=True, exist_ok=True)
            if created:
                fsync_directory(self.root)
            existing = self._files(folder)
            sequence = existing[-1][0] + 1 if existing else 0
            path = folder / f"{sequence:012d}.ckpt"
            write_atomically(path, MAGIC + hashlib.sha256(payload).digest() + payload)
            for _, old in existing[: max(0, len(existing) + 1 - self.keep)]:
                old.unlink(missing_ok=True)
            return path

    def load(self, query_id: str) -> bytes | None:
        """The newest intact checkpoint's payload, or None."""
        folder = self.root / query_id
        for _, path in reversed(self._files(folder)):
            payload = _verified(path)
            if payload is not None:
                return payload
        return None

    def remove(self, query_id: str) -> None:
        with self._lock:
            folder = self.root / query_id
            if folder.exists():
                shutil.rmtree(folder)
                fsync_directory(self.root)

    def query_ids(self) -> list[str]:
        """The queries that have a checkpoint folder."""
        return sorted(p.name for p in self.root.iterdir() if p.is_dir())

    def paths(self, query_id: str) -> list[Path]:
        """The checkpoint files of a query, oldest first."""
        return [path for _, path in self._files(self.root / query_id)]

    @staticmethod
    def _files(folder: Path) -> list[tuple[int, Path]]:
        if not folder.is_dir():
            return []
        found = []
        for path in folder.glob("*.ckpt"):
            if path.stem.isdigit():
                found.append((int(path.stem), path))
        return sorted(found)


def _verified(path: Path) -> bytes | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + _DIGEST:
        return None
    digest = data[len(MAGIC) : len(MAGIC) + _DIGEST]
    payload = data[len(MAGIC) + _DIGEST :]
    return payload if hashlib.sha256(payload).digest() == digest else None
