"""Registered continuous queries, one JSON file each under `DATA/queries/`.

A registration is the query text plus what is needed to compile it the same
way again after a restart (dialect, options) and where in the event log it
starts. Files are written atomically (temporary file, fsync, rename, fsync of
the folder), so a crash leaves either the old or the new registration. A file
that is not a registration (damaged on disk, edited by hand) is never skipped,
which would drop its query without a word: `RegistrationUnreadable` names it,
and `rsep serve` refuses to start until it is restored or removed.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rsep.plugin.durable import fsync_path, write_atomically
from rsep.plugin.errors import EngineUnavailable
from rsep.plugin.vocabulary import QUERY_IRI_PREFIX

ACTIVE = "active"
FAILED = "failed"
_ID = re.compile(r"^[0-9a-f]{16}$")


class RegistrationUnreadable(EngineUnavailable):
    """A registration file that cannot be read as one: the message names the file and says
    what to do (the query's checkpoints, if any, are left alone)."""


@dataclass(frozen=True, slots=True)
class RegisteredQuery:
    """A continuous query as registered. `start` is the log position of the
    first event it reads; `status` is `active` or `failed` (with `error`); `t0`
    is the registration's time in stream time (seconds), the log's newest event
    time before `start`, None when no event preceded it (window queries open
    their windows from it: docs/semantics.md)."""

    id: str
    text: str
    dialect: str
    streams: tuple[str, ...]
    start: int
    created: str
    options: Mapping[str, str] = field(default_factory=dict)
    status: str = ACTIVE
    error: str | None = None
    t0: float | None = None

    @property
    def iri(self) -> str:
        return QUERY_IRI_PREFIX + self.id

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["streams"] = list(self.streams)
        data["options"] = dict(self.options)
        data["iri"] = self.iri
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RegisteredQuery:
        """The registration `to_json` wrote; raises ValueError, KeyError or TypeError for data
        of another shape (the fields a query is compiled and resumed from are checked)."""
        _expect(data, "text", str)
        _expect(data, "streams", list)
        _expect(data, "options", dict, optional=True)
        if type(data.get("start")) is not int or data["start"] < 0:
            raise ValueError(f"start is {data.get('start')!r}, not a log position")
        return cls(
            id=str(data["id"]),
            text=data["text"],
            dialect=str(data["dialect"]),
            streams=tuple(str(s) for s in data["streams"]),
            start=data["start"],
            created=str(data["created"]),
            options={str(k): str(v) for k, v in dict(data.get("options", {})).items()},
            status=str(data.get("status", ACTIVE)),
            error=None if data.get("error") is None else str(data["error"]),
            t0=None if data.get("t0") is None else float(data["t0"]),
        )


def _expect(data: Mapping[str, Any], key: str, kind: type, *, optional: bool = False) -> None:
    if optional and key not in data:
        return
    if not isinstance(data[key], kind):
        raise TypeError(f"{key} is {type(data[key]).__name__}, not {kind.__name__}")


def is_query_id(text: str) -> bool:
    return bool(_ID.match(text))


def query_iri(query_id: str) -> str | None:
    """The IRI of the query `query_id` names (registered or not any more), None for a text that
    is no query id."""
    return QUERY_IRI_PREFIX + query_id if is_query_id(query_id) else None


class Registry:
    """The registered queries of one data directory (thread-safe)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def create(
        self,
        text: str,
        dialect: str,
        streams: tuple[str, ...],
        start: int,
        options: Mapping[str, str],
        t0: float | None = None,
    ) -> RegisteredQuery:
        """Persist a new registration under a fresh id (`t0`: the log's time at `start`)."""
        with self._lock:
            query_id = secrets.token_hex(8)
            while self._path(query_id).exists():
                query_id = secrets.token_hex(8)
            created = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            query = RegisteredQuery(query_id, text, dialect, streams, start, created, dict(options), t0=t0)
            self._write(query)
            return query

    def get(self, query_id: str) -> RegisteredQuery | None:
        if not is_query_id(query_id):
            return None
        path = self._path(query_id)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            query = RegisteredQuery.from_json(data)
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, AttributeError) as error:  # JSON, a field, a type
            reason = f"{type(error).__name__}: {error}" if isinstance(error, KeyError) else str(error)
            raise RegistrationUnreadable(
                f"registration {path}: not a registered query ({reason}); restore the file from a "
                "backup, or remove it to drop that query"
            ) from None
        if query.id != query_id:
            raise RegistrationUnreadable(f"registration {path}: holds the query {query.id}, not {query_id}")
        return query

    def all(self) -> list[RegisteredQuery]:
        """Every registration, oldest first."""
        found = [self.get(path.stem) for path in self.directory.glob("*.json")]
        return sorted((q for q in found if q is not None), key=lambda q: (q.created, q.id))

    def set_status(self, query_id: str, status: str, error: str | None = None) -> RegisteredQuery | None:
        with self._lock:
            query = self.get(query_id)
            if query is None:
                return None
            if (query.status, query.error) != (status, error):
                query = replace(query, status=status, error=error)
                self._write(query)
            return query

    def remove(self, query_id: str) -> bool:
        with self._lock:
            if not is_query_id(query_id):
                return False
            try:
                self._path(query_id).unlink()
            except FileNotFoundError:
                return False
            fsync_path(self.directory)
            return True

    def _path(self, query_id: str) -> Path:
        return self.directory / f"{query_id}.json"

    def _write(self, query: RegisteredQuery) -> None:
        text = json.dumps(query.to_json(), ensure_ascii=False, indent=2) + "\n"
        write_atomically(self._path(query.id), text.encode("utf-8"))
