"""Checkpoints: the one payload format every engine writes, and the files that hold them.

**Files** (`CheckpointStore`), one folder per query: `DATA/checkpoints/<id>/`. Each checkpoint
is a new file `<sequence>.ckpt` (a header, the SHA-256 of the payload, the payload), written to a
temporary file, fsynced, renamed and the folder fsynced. The newest few are kept: if the latest is
missing, truncated or corrupt, `load` falls back to the one before, and the engine replays the
log from there (match writes are idempotent, so a replayed batch changes nothing).

**Payloads** (`encode`/`decode`): `HEADER`, then a pickle of `(FORMAT, kind, body)` where the
body is plain data only (dicts, lists, tuples, strings, numbers, sets; no class of rsep's, so a
module rename never breaks a checkpoint and reading one runs no code: `decode` refuses any
class). The kinds are the in-process runner's (`runner`), a window query's (`window`), the Spark
engine's driver part (`spark-driver`) and a Spark partition key's state in Spark's state store
(`keyed`). The formats before this one (a runner's `(2, fields, states)` pickle naming rsep's
classes, the window runner's `("rsep-window-runner", 1, fields)`, the Spark driver's
`rsep-spark-driver/1` pickle) are read by the `legacy` reader each kind passes, through
`load_pickle`, so existing data directories keep working.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import shutil
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rsep.plugin.durable import fsync_path
from rsep.plugin.errors import InternalError

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
        return self.save_many([(query_id, payload)])[0]

    def save_many(self, payloads: Sequence[tuple[str, bytes]]) -> list[Path]:
        """A new checkpoint for each query, as `save` writes one, with the syncs done together:
        every file is written, then every file fsynced, then all renamed and their folders
        fsynced. A crash still leaves each query its old checkpoint or its new one; and on common
        file systems the first fsync commits the others' data too, so a hundred queries cost
        about one commit instead of two each. Older files beyond `keep` are removed after."""
        with self._lock:
            staged: list[tuple[Path, Path, list[tuple[int, Path]]]] = []
            created = False
            for query_id, payload in payloads:
                folder = self.root / query_id
                if not folder.exists():
                    folder.mkdir(parents=True, exist_ok=True)
                    created = True
                existing = self._files(folder)
                sequence = existing[-1][0] + 1 if existing else 0
                path = folder / f"{sequence:012d}.ckpt"
                temporary = path.with_name(f".{path.name}.tmp")
                temporary.write_bytes(MAGIC + hashlib.sha256(payload).digest() + payload)
                staged.append((temporary, path, existing))
            for temporary, _, _ in staged:
                fsync_path(temporary)
            if created:
                fsync_path(self.root)
            for temporary, path, _ in staged:
                os.replace(temporary, path)
            for folder in dict.fromkeys(path.parent for _, path, _ in staged):
                fsync_path(folder)
            for _, _, existing in staged:
                for _, old in existing[: max(0, len(existing) + 1 - self.keep)]:
                    old.unlink(missing_ok=True)
            return [path for _, path, _ in staged]

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
                fsync_path(self.root)

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


# ---------------------------------------------------------------------- payloads

FORMAT = 3
HEADER = b"rsep-checkpoint\n"


class CheckpointFormatError(InternalError, ValueError):
    """A payload that is not a checkpoint of the kind asked for (the engines then replay the
    query from its registration)."""


def encode(kind: str, body: dict[str, Any]) -> bytes:
    """A checkpoint payload of `kind` (plain data only: `decode` refuses classes)."""
    return HEADER + pickle.dumps((FORMAT, kind, body), protocol=pickle.HIGHEST_PROTOCOL)


def decode(data: bytes, kind: str, legacy: Callable[[bytes], dict[str, Any]] | None = None) -> dict[str, Any]:
    """The body `encode` saved for `kind`; a payload of an older format goes through `legacy`
    (which reads it with `load_pickle`), and any other is refused."""
    if data.startswith(HEADER):
        try:
            found = _PlainUnpickler(io.BytesIO(data[len(HEADER) :])).load()
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as error:
            raise CheckpointFormatError(f"an unreadable {kind} checkpoint ({error})") from None
        if not (isinstance(found, tuple) and len(found) == 3 and found[0] == FORMAT):
            raise CheckpointFormatError(f"not a checkpoint of format {FORMAT}")
        if found[1] != kind:
            raise CheckpointFormatError(f"a {found[1]} checkpoint, not a {kind} one")
        body: dict[str, Any] = found[2]
        return body
    if legacy is None:
        raise CheckpointFormatError(f"not a {kind} checkpoint")
    try:
        return legacy(data)
    except CheckpointFormatError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError) as error:
        raise CheckpointFormatError(f"not a {kind} checkpoint of an older format ({error})") from None


class _PlainUnpickler(pickle.Unpickler):
    """Plain data only: a checkpoint of this format names no class."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"a checkpoint names {module}.{name}: not plain data")


# ---------------------------------------------------------------------- reading older pickles

RENAMED_MODULES = {
    "rsep.plugin.events": "rsep.plugin.graph_events",
    "rsep.plugin.store.gpm": "rsep.plugin.store.gpm_stage",
    "rsep.plugin.terms": "rsep.plugin.algebra.terms",
}
"""Modules whose classes older checkpoints (and Spark's background snapshots) name, and where
those classes live now."""


class _LegacyUnpickler(pickle.Unpickler):
    """Reads what an older rsep pickled: classes of rsep's own modules (under their names of
    today) and of the standard library's data types; anything else is refused, so a checkpoint
    file cannot make the endpoint import arbitrary code."""

    def find_class(self, module: str, name: str) -> Any:
        module = RENAMED_MODULES.get(module, module)
        if module.startswith("rsep.") or module in ("builtins", "collections", "datetime", "decimal"):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"a checkpoint names {module}.{name}, which rsep never pickles")


def load_pickle(data: bytes) -> Any:
    """`pickle.loads` for data rsep wrote to disk in this or an older version."""
    return _LegacyUnpickler(io.BytesIO(data)).load()
