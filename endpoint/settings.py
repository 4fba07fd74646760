"""What `rsep serve` reads from its environment and its flags.

Each setting is a key of the application's configuration (`create_app`), set by the
environment variable of the same name and overridden by its flag, so that a service is
configured either way (a unit file or container by variables, a shell by flags; a token kept
out of the process list by `RSEP_TOKEN`). Unset, the application's default applies
(`rsep.endpoint.app.DEFAULTS`). Bad values are errors that name the variable or the flag.

This module imports neither Flask nor the engines: `rsep run` builds the same parser.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rsep.plugin import InvalidInput

ENGINE_NAMES = ("spark", "inprocess")
"""The names of `rsep.endpoint.engines.ENGINES` (a test holds them equal)."""


def _one_of(names: tuple[str, ...]) -> Callable[[str], str]:
    def choose(text: str) -> str:
        if text not in names:
            raise InvalidInput(f"expected one of {', '.join(names)}, got {text!r}")
        return text

    return choose


def _text(text: str) -> str:
    if not text.strip():
        raise InvalidInput("expected a value, got nothing")
    return text


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise InvalidInput(f"expected a number of seconds (0 or more), got {text!r}")
    return value


_DURATION = re.compile(
    r"P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?"
)


def duration(text: str) -> float:
    """Seconds (`5`, `0.5`) or an xsd:dayTimeDuration (`PT5S`, `PT1M30S`, `P1DT2H`): a lateness
    or a timeout, as the command line, the environment and the `max-lateness=` parameter give it:
    ASCII digits only (float() and the regex's \\d also read `١` as 1, and float() `1_000`)."""
    if not text.isascii() or "_" in text:
        raise InvalidInput(f"expected seconds (5) or a duration (PT5S), got {text!r}")
    found = _DURATION.fullmatch(text.strip())
    if found is not None and any(found.groups()) and not text.strip().endswith("T"):
        days, hours, minutes, seconds = (float(part or 0) for part in found.groups())
        return days * 86_400 + hours * 3_600 + minutes * 60 + seconds
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (value >= 0 and value != float("inf")):
        raise InvalidInput(f"expected seconds (5) or a duration (PT5S), got {text!r}")
    return value


def _positive_duration(text: str) -> float:
    value = duration(text)
    if value == 0:
        raise InvalidInput(f"expected a duration above 0, got {text!r}")
    return value


def _positive_seconds(text: str) -> float:
    value = _seconds(text)
    if value == 0:
        raise InvalidInput(f"expected a number of seconds above 0, got {text!r}")
    return value


def _boolean(text: str) -> bool:
    value = text.strip().lower()
    if value not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
        raise InvalidInput(f"expected true or false, got {text!r}")
    return value in ("1", "true", "yes", "on")


QUERY_ISOLATION = ("process", "thread")
"""Where a SPARQL query runs: a forked child the server can stop, or a thread it cannot
(rsep.endpoint.workers)."""

LATE_MODES = ("refuse", "side")
"""What ingest does with an event older than the watermark (rsep.plugin.service.ingest)."""

ACCESS_MODES = ("same-origin", "open", "writes-token", "read-only")
"""The modes of `rsep.endpoint.access`."""


def _hosts(text: str) -> tuple[str, ...]:
    hosts = tuple(host.strip() for host in text.split(",") if host.strip())
    if not hosts:
        raise InvalidInput("expected host names separated by commas, got nothing")
    return hosts


_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}


def _bytes(text: str) -> int:
    """A size: bytes, or with K, M or G (binary: 64M is 64 MiB)."""
    number = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = number[-1:] if number[-1:] in ("K", "M", "G") else ""
    try:
        value = int(float(number.removesuffix(unit)) * _UNITS[unit])
    except ValueError:
        value = 0
    if value <= 0:
        raise InvalidInput(f"expected a size in bytes above 0 (e.g. 65536, 64K, 64M), got {text!r}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise InvalidInput(f"expected a whole number above 0, got {text!r}")
    return value


@dataclass(frozen=True, slots=True)
class Setting:
    """A configuration key (= its environment variable) and its flag (a switch when `parse` is
    `_boolean`: the flag takes no value, the variable true or false)."""

    key: str
    flag: str
    parse: Callable[[str], Any]
    metavar: str
    help: str


SETTINGS = (
    Setting("RSEP_ENGINE", "--engine", _one_of(ENGINE_NAMES), "|".join(ENGINE_NAMES),
            "spark (default): continuous queries on Spark Structured Streaming; inprocess: the same "
            "runtime without Spark"),
    Setting("RSEP_MASTER", "--master", _text, "URL", "Spark master URL (default local[*])"),
    Setting("RSEP_TOKEN", "--token", _text, "TOKEN",
            "require Authorization: Bearer TOKEN on every request but /"),
    Setting("RSEP_ACCESS", "--access", _one_of(ACCESS_MODES), "|".join(ACCESS_MODES),
            "who may write (docs/endpoint.md, Access): same-origin (default: writes from the "
            "endpoint's page and non-browser clients), open, writes-token, read-only"),
    Setting("RSEP_ALLOWED_HOSTS", "--allowed-host", _hosts, "NAME[,NAME...]",
            "Host names served besides localhost, IP addresses and --host (* for any)"),
    Setting("RSEP_ALLOW_REMOTE", "--allow-remote", _hosts, "HOST[,HOST...]",
            "hosts SERVICE and LOAD may fetch from over http(s) (default none; * for any)"),
    Setting("RSEP_SERVICE_TIMEOUT", "--service-timeout", _positive_seconds, "SECONDS",
            "longest a SERVICE or LOAD waits for its remote (default 10; 504 past it)"),
    Setting("RSEP_MAX_BODY", "--max-body", _bytes, "BYTES",
            "largest request body, e.g. 64M (default 64M; 413 past it)"),
    Setting("RSEP_MAX_QUERY_SIZE", "--max-query-size", _bytes, "BYTES",
            "largest query or update text (default 1M; 413 past it)"),
    Setting("RSEP_MAX_LITERAL", "--max-literal", _bytes, "BYTES",
            "longest literal in an ingest or Graph Store payload (default 4M, at most 16M)"),
    Setting("RSEP_MAX_QUERIES", "--max-queries", _count, "N",
            "most continuous queries registered at once (default 1000)"),
    Setting("RSEP_QUERY_TIMEOUT", "--query-timeout", _positive_seconds, "SECONDS",
            "longest a SPARQL query runs (default 30; 503 past it, the query stopped)"),
    Setting("RSEP_QUERY_ISOLATION", "--query-isolation", _one_of(QUERY_ISOLATION), "|".join(QUERY_ISOLATION),
            "run each SPARQL query in a forked child, stopped at the timeout or when its client "
            "leaves (not while a Spark engine is in the process), or on a thread, which cannot be "
            "stopped but costs no fork (default process)"),
    Setting("RSEP_MAX_RUNNING_QUERIES", "--max-running-queries", _count, "N",
            "SPARQL queries evaluated at once (default 4; 503 past it)"),
    Setting("RSEP_MAX_LISTENERS", "--max-listeners", _count, "N",
            "event streams (SSE) open at once (default 256; 503 past it)"),
    Setting("RSEP_CHECKPOINT_INTERVAL", "--checkpoint-interval", _seconds, "SECONDS",
            "seconds between checkpoints of in-process queries (window queries too), 0 after every "
            "batch (default 1)"),
    Setting("RSEP_SSE_HEARTBEAT", "--sse-heartbeat", _positive_seconds, "SECONDS",
            "seconds between heartbeat comments on idle event streams (default 15)"),
    Setting("RSEP_SPARK_TRIGGER_INTERVAL", "--trigger-interval", _seconds, "SECONDS",
            "Spark engine: seconds between looks at the event log when idle (default 0.1)"),
    Setting("RSEP_CHECKPOINT_LOCATION", "--checkpoint-location", _text, "URI",
            "Spark engine: where the streaming job's checkpoint (offsets, commits, state store) "
            "lives, a path or a URI every executor and a restarted driver reach (default "
            "DATA/spark/checkpoint)"),
    Setting("RSEP_MAX_LATENESS", "--max-lateness", duration, "SECONDS",
            "accept events out of time order by up to this many seconds (or PT5S), held in a "
            "durable reorder buffer and released in time order (default: in order only)"),
    Setting("RSEP_IDLE_TIMEOUT", "--idle-timeout", _positive_duration, "SECONDS",
            "a stream silent this long stops holding the watermark back; all silent, the "
            "watermark moves on with processing time (default: never)"),
    Setting("RSEP_LATE", "--late", _one_of(LATE_MODES), "|".join(LATE_MODES),
            "an event older than the watermark: refused (400), or kept in the graph "
            "<urn:rsep:late> (default refuse)"),
    Setting("RSEP_CORS", "--cors", _boolean, "",
            "allow cross-origin requests from any origin (Access-Control-Allow-Origin: *; default off)"),
    Setting("RSEP_UNION_DEFAULT_GRAPH", "--union-default-graph", _boolean, "",
            "SPARQL queries without a dataset read the union of all graphs as their default graph "
            "(default off: the default graph alone)"),
)  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The settings' flags; each defaults to None (not given), so the environment can apply."""
    for setting in SETTINGS:
        if setting.parse is _boolean:
            parser.add_argument(setting.flag, dest=setting.key, action="store_const", const=True,
                                default=None, help=f"{setting.help}; or {setting.key}=true")  # fmt: skip
            continue
        parser.add_argument(
            setting.flag,
            dest=setting.key,
            type=_argument_type(setting),
            default=None,
            metavar=setting.metavar,
            help=f"{setting.help}; or {setting.key}",
        )


def _argument_type(setting: Setting) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            return setting.parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    parse.__name__ = setting.flag  # argparse names the type in its own messages
    return parse


def configuration(args: argparse.Namespace, environ: Mapping[str, str]) -> dict[str, Any]:
    """The configuration keys the flags (first) or the environment set; a bad variable is a
    ValueError that names it."""
    config: dict[str, Any] = {}
    for setting in SETTINGS:
        given = getattr(args, setting.key, None)
        if given is not None:
            config[setting.key] = given
        elif setting.key in environ:
            try:
                config[setting.key] = setting.parse(environ[setting.key])
            except ValueError as error:
                raise InvalidInput(f"rsep: {setting.key}: {error}") from None
    return config
