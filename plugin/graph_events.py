"""Graph events and their timestamps (SPAseq Def. 1, RSEP-QL Def. 1).

An event is a named graph with a timestamp on a named stream. Its triples
travel as canonical N-Triples text: that is what the event log stores, what
Spark rows carry, and what Oxigraph bulk-loads fastest, and it keeps the pure
core free of any RDF library.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from rsep.plugin.algebra.sparql import XSD
from rsep.plugin.algebra.terms import literal_nt
from rsep.plugin.errors import InvalidInput
from rsep.plugin.vocabulary import PROV_GENERATED_AT, PROV_STARTED_AT

XSD_DATETIME = XSD + "dateTime"
XSD_DATETIMESTAMP = XSD + "dateTimeStamp"
"""An event's interval start, `<graph> prov:startedAtTime S` beside its generatedAtTime T: the
event spans [S, T] (docs/semantics.md, "Interval-stamped events")."""
_INTEGER_TYPES = frozenset(
    XSD + name
    for name in (
        "integer", "int", "long", "short", "byte", "nonNegativeInteger", "positiveInteger",
        "nonPositiveInteger", "negativeInteger", "unsignedLong", "unsignedInt", "unsignedShort",
        "unsignedByte",
    )
)  # fmt: skip
_NUMBER_TYPES = _INTEGER_TYPES | {XSD + "decimal", XSD + "double", XSD + "float"}
MAX_NUMERIC_TIME = 1e300
"""The largest magnitude of a number read as a time: windows count time in microseconds
(`seconds * TICKS_PER_SECOND`, which overflows a double past about 1.8e302), so a larger time
made a window query fail and a REGISTER STREAM producer answer every ingest with a 500."""
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
"""RFC 8259's number syntax."""


class TimestampError(InvalidInput):
    """A timestamp literal that is neither an xsd:dateTime nor a number."""


@dataclass(frozen=True, slots=True)
class Timestamp:
    """A point in time: `seconds` for arithmetic (epoch seconds for dateTimes,
    the number itself for abstract time units), the lexical form as the input
    wrote it, and whether that form is a number (printed as a JSON number)."""

    seconds: float
    lexical: str
    numeric: bool

    @classmethod
    def from_literal(cls, lexical: str, datatype: str) -> Timestamp:
        """Read `prov:generatedAtTime`'s object: an xsd:dateTime (a missing
        timezone is read as UTC) or any xsd numeric type (seconds)."""
        if datatype in (XSD_DATETIME, XSD_DATETIMESTAMP):
            return cls(_datetime_seconds(lexical), lexical, False)
        if datatype in _NUMBER_TYPES:
            try:
                seconds = float(lexical)
            except ValueError as error:
                raise TimestampError(f"{lexical!r} is not a valid number") from error
            if not math.isfinite(seconds):
                raise TimestampError(f"{lexical!r} is not a finite number")
            if abs(seconds) > MAX_NUMERIC_TIME:
                raise TimestampError(f"{lexical!r} is too large: rsep reads numbers up to 1e300 as times")
            return cls(seconds, lexical, True)
        raise TimestampError(
            f"a timestamp is an xsd:dateTime or a number, not a literal of type <{datatype}>"
        )

    @classmethod
    def parse(cls, text: str) -> Timestamp:
        """A time as a user writes it outside RDF (`rsep run --t0`): a number, or else an
        xsd:dateTime."""
        try:
            float(text)
        except ValueError:
            return cls.from_literal(text, XSD_DATETIME)
        return cls.from_literal(text, XSD + "decimal")

    @classmethod
    def now(cls) -> Timestamp:
        """Arrival time, for events posted without a timestamp."""
        moment = datetime.now(UTC)
        return cls(moment.timestamp(), moment.isoformat().replace("+00:00", "Z"), False)

    @classmethod
    def at(cls, seconds: float, numeric: bool) -> Timestamp:
        """A time rsep computes (a watermark), of the given kind: a number's shortest form, or an
        xsd:dateTime in UTC."""
        if numeric:
            lexical = str(int(seconds)) if seconds.is_integer() else repr(seconds)
            return cls(seconds, lexical, True)
        moment = datetime.fromtimestamp(seconds, UTC)
        return cls(seconds, moment.isoformat().replace("+00:00", "Z"), False)

    @property
    def kind(self) -> str:
        """The kind of time, for messages: epoch seconds and abstract units do not compare."""
        return "a number" if self.numeric else "an xsd:dateTime"

    def json(self) -> int | float | str:
        """As a JSON value: the number for numbers, the ISO string otherwise (`json_text` keeps
        a number's lexical form)."""
        if not self.numeric:
            return self.lexical
        try:
            return int(self.lexical)
        except ValueError:
            return float(self.lexical)

    def json_text(self) -> str:
        """As JSON text, the way the input wrote it: a number's lexical form verbatim when it is
        JSON number syntax (`1.50` stays `1.50`, `1e3` stays `1e3`), otherwise the number it
        denotes (`+3` is `3`, `.5` is `0.5`, `0004.000` is `4.0`); a dateTime as its string."""
        lexical = self.lexical.strip()
        if self.numeric and _JSON_NUMBER.fullmatch(lexical):
            return lexical
        return json.dumps(self.json(), ensure_ascii=False)


def _datetime_seconds(lexical: str) -> float:
    text = lexical.strip()
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as error:
        raise TimestampError(
            f"{lexical!r} is not a valid xsd:dateTime (rsep reads years 0001 to 9999)"
        ) from error
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        moment.astimezone(UTC)
    except OverflowError:
        raise TimestampError(
            f"{lexical!r} is outside years 0001 to 9999 in UTC, the times rsep reads (docs/endpoint.md)"
        ) from None
    return moment.timestamp()


@dataclass(frozen=True, slots=True)
class GraphEvent:
    """One event: the stream it arrived on, its graph name (N-Triples text of an
    IRI or blank node, as in the input), its timestamp and its triples."""

    stream: str
    name: str
    time: Timestamp
    ntriples: str
    start: Timestamp | None = None
    """The start of the interval the event spans (`prov:startedAtTime` in an event file, or a
    derived event of an EP-SPARQL CONSTRUCT rule); `time` is its end. None for an instantaneous
    event."""

    def nquads(self) -> str:
        """The event as a client posts it: its triples in its graph, and its timestamp
        (`prov:generatedAtTime`, and `prov:startedAtTime` when it spans an interval) in the
        default graph, as N-Quads."""
        body = "".join(f"{line[:-2]} {self.name} .\n" for line in self.ntriples.splitlines() if line.strip())
        body += f"{self.name} <{PROV_GENERATED_AT}> {timestamp_nt(self.time)} .\n"
        if self.start is not None and self.start.seconds < self.time.seconds:
            body += f"{self.name} <{PROV_STARTED_AT}> {timestamp_nt(self.start)} .\n"
        return body

    @property
    def begins(self) -> Timestamp:
        return self.time if self.start is None else self.start


def timestamp_nt(time: Timestamp) -> str:
    """A timestamp as a typed literal: xsd:dateTime, or the number's datatype
    as its lexical form reads (integer, decimal or double)."""
    if not time.numeric:
        return literal_nt(time.lexical, XSD_DATETIME)
    lexical = time.lexical.strip()
    if re.fullmatch(r"[+-]?\d+", lexical):
        datatype = "integer"
    elif re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+)", lexical):
        datatype = "decimal"
    else:
        datatype = "double"
    return literal_nt(lexical, XSD + datatype)
