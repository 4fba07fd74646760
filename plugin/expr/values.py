"""Typed RDF term values for the expression evaluator.

A solution mapping holds N-Triples strings; evaluation needs their values
(SPARQL 1.1 §17.1: operand data types). `parse_term` turns one string into a
`Value` once (memoised per distinct string), and `Value.nt` turns a computed
value back into the canonical N-Triples text Oxigraph prints, so results
compare as strings with what Oxigraph returns.

Numeric kinds are the small integers 0..3 in promotion order (integer <
decimal < float < double, https://www.w3.org/TR/xpath20/#promotion), so the
promoted type of two numerics is `max(k1, k2)` and `k <= DOUBLE` tests for a
numeric.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Context, Decimal
from fractions import Fraction
from functools import lru_cache
from typing import Any, Final

from rsep.plugin.algebra.sparql import RDF_LANGSTRING, XSD, XSD_STRING
from rsep.plugin.algebra.terms import escape_string, needs_escape
from rsep.plugin.expr import temporal
from rsep.plugin.expr.decimals import EXACT, format_decimal

# --------------------------------------------------------------------------- kinds

INTEGER: Final = 0
DECIMAL: Final = 1
FLOAT: Final = 2
DOUBLE: Final = 3
BOOLEAN: Final = 4
STRING: Final = 5  # simple literal == xsd:string (RDF 1.1)
LANG: Final = 6  # rdf:langString
DATETIME: Final = 7
DATE: Final = 8
TIME: Final = 9
DURATION: Final = 10
YM_DURATION: Final = 11
DT_DURATION: Final = 12
OTHER: Final = 13  # a literal of an unsupported datatype, or an ill-formed one
IRI: Final = 14
BNODE: Final = 15

TEMPORAL_KINDS: Final = frozenset({DATETIME, DATE, TIME})
DURATION_KINDS: Final = frozenset({DURATION, YM_DURATION, DT_DURATION})

XSD_INTEGER: Final = XSD + "integer"
XSD_DECIMAL: Final = XSD + "decimal"
XSD_FLOAT: Final = XSD + "float"
XSD_DOUBLE: Final = XSD + "double"
XSD_BOOLEAN: Final = XSD + "boolean"
XSD_DATETIME: Final = XSD + "dateTime"
XSD_DATE: Final = XSD + "date"
XSD_TIME: Final = XSD + "time"
XSD_DURATION: Final = XSD + "duration"
XSD_YM_DURATION: Final = XSD + "yearMonthDuration"
XSD_DT_DURATION: Final = XSD + "dayTimeDuration"

# xsd:integer and the types derived from it, with their value ranges (XSD 1.1 §3.4.13-3.4.25).
INTEGER_TYPES: Final[dict[str, tuple[int | None, int | None]]] = {
    XSD_INTEGER: (None, None),
    XSD + "nonPositiveInteger": (None, 0),
    XSD + "negativeInteger": (None, -1),
    XSD + "long": (-(2**63), 2**63 - 1),
    XSD + "int": (-(2**31), 2**31 - 1),
    XSD + "short": (-(2**15), 2**15 - 1),
    XSD + "byte": (-(2**7), 2**7 - 1),
    XSD + "nonNegativeInteger": (0, None),
    XSD + "unsignedLong": (0, 2**64 - 1),
    XSD + "unsignedInt": (0, 2**32 - 1),
    XSD + "unsignedShort": (0, 2**16 - 1),
    XSD + "unsignedByte": (0, 2**8 - 1),
    XSD + "positiveInteger": (1, None),
}
NUMERIC_DATATYPES: Final = frozenset({*INTEGER_TYPES, XSD_DECIMAL, XSD_FLOAT, XSD_DOUBLE})

KIND_DATATYPE: Final[dict[int, str]] = {
    INTEGER: XSD_INTEGER,
    DECIMAL: XSD_DECIMAL,
    FLOAT: XSD_FLOAT,
    DOUBLE: XSD_DOUBLE,
    BOOLEAN: XSD_BOOLEAN,
    STRING: XSD_STRING,
    LANG: RDF_LANGSTRING,
    DATETIME: XSD_DATETIME,
    DATE: XSD_DATE,
    TIME: XSD_TIME,
    DURATION: XSD_DURATION,
    YM_DURATION: XSD_YM_DURATION,
    DT_DURATION: XSD_DT_DURATION,
}


# --------------------------------------------------------------------------- the value


class Value:
    """One RDF term with its parsed value.

    `k` is the kind, `v` the Python value (int, Decimal, float, bool, str for
    strings/IRIs/labels/unknown lexical forms, a temporal object), `dt` the
    datatype IRI ("" for IRIs and blank nodes; derived integer types keep
    theirs, e.g. xsd:int), `lang` the language tag of an rdf:langString.
    The lexical form and the N-Triples text are computed on demand for
    computed values and kept from the input for parsed terms.
    """

    __slots__ = ("_lex", "_nt", "dt", "k", "lang", "v")

    def __init__(
        self, k: int, v: Any, dt: str, lang: str | None = None, lex: str | None = None, nt: str | None = None
    ) -> None:
        self.k = k
        self.v = v
        self.dt = dt
        self.lang = lang
        self._lex = lex
        self._nt = nt

    @property
    def lex(self) -> str:
        """The lexical form (the canonical one for computed values)."""
        lex = self._lex
        if lex is None:
            lex = self._lex = _format_lexical(self)
        return lex

    @property
    def nt(self) -> str:
        """The N-Triples text (`str(term)` in pyoxigraph)."""
        nt = self._nt
        if nt is None:
            nt = self._nt = _format_nt(self)
        return nt

    def __repr__(self) -> str:
        return f"Value({self.nt})"


TRUE: Final = Value(BOOLEAN, True, XSD_BOOLEAN, None, "true", f'"true"^^<{XSD_BOOLEAN}>')
FALSE: Final = Value(BOOLEAN, False, XSD_BOOLEAN, None, "false", f'"false"^^<{XSD_BOOLEAN}>')
EMPTY_STRING: Final = Value(STRING, "", XSD_STRING, None, "", '""')


def boolean(flag: bool) -> Value:
    return TRUE if flag else FALSE


def string(text: str, lang: str | None = None) -> Value:
    """A simple literal, or a language-tagged one when `lang` is given."""
    if lang is None:
        return Value(STRING, text, XSD_STRING, None, text)
    return Value(LANG, text, RDF_LANGSTRING, lang, text)


def iri(value: str) -> Value:
    return Value(IRI, value, "", None, value)


def bnode(label: str) -> Value:
    return Value(BNODE, label, "", None, label)


# --------------------------------------------------------------------------- numbers

_F32: Final = struct.Struct("f")
_F32_BITS: Final = struct.Struct("I")


def to_f32(value: float) -> float:
    """Round a double to the nearest xsd:float (IEEE binary32) value."""
    try:
        result: float = _F32.unpack(_F32.pack(value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)
    return result


def int_to_double(value: int) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def to_double(kind: int, value: Any) -> float:
    """Promote a numeric value of `kind` to xsd:double."""
    if kind == INTEGER:
        return int_to_double(value)
    return float(value)


def to_float32(kind: int, value: Any) -> float:
    """Promote a numeric value of `kind` to xsd:float."""
    if kind == FLOAT:
        return float(value)
    return to_f32(to_double(kind, value))


_half_up_contexts: dict[int, Context] = {}


def _positional(value: float, shortest: str) -> str:
    """Shortest round-trip digits written without exponent, as Rust's `{}`
    prints floats (what Oxigraph outputs). `shortest` is Python's shortest
    repr, which breaks a tie between two equally close shortest candidates
    to even; Rust rounds the tie half up (131072.625f32 prints as
    131072.63), so a tie is re-rounded from the exact binary value."""
    digits = Decimal(shortest).normalize(EXACT)
    exact = Decimal(value).normalize(EXACT)
    length = len(digits.as_tuple().digits)
    exact_digits = exact.as_tuple().digits
    if len(exact_digits) == length + 1 and exact_digits[-1] == 5:
        context = _half_up_contexts.get(length)
        if context is None:
            context = _half_up_contexts[length] = Context(prec=length, rounding=ROUND_HALF_UP)
        digits = context.plus(exact).normalize(EXACT)
    return format(digits, "f")


def format_double(value: float) -> str:
    """Oxigraph's xsd:double form: shortest round-trip digits, no exponent."""
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "INF" if value > 0 else "-INF"
    return _positional(value, repr(value))


def shortest_f32(value: float) -> str:
    """The shortest decimal string that reads back as the same binary32 value."""
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        if to_f32(float(text)) == value:
            return text
    return repr(value)


def format_float(value: float) -> str:
    """Oxigraph's xsd:float form: shortest binary32 round-trip digits, no exponent."""
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "INF" if value > 0 else "-INF"
    return _positional(value, shortest_f32(value))


# --------------------------------------------------------------------------- formatting


def _format_lexical(value: Value) -> str:
    k = value.k
    v = value.v
    if k == INTEGER:
        return str(v)
    if k == DECIMAL:
        return format_decimal(v)
    if k == DOUBLE:
        return format_double(v)
    if k == FLOAT:
        return format_float(v)
    if k == BOOLEAN:
        return "true" if v else "false"
    if k in TEMPORAL_KINDS:
        return temporal.format_temporal(k - DATETIME, v)
    if k in DURATION_KINDS:
        months, seconds = v
        return temporal.format_duration(months, seconds, year_month=k == YM_DURATION)
    return str(v)


def _format_nt(value: Value) -> str:
    k = value.k
    if k == IRI:
        return f"<{value.v}>"
    if k == BNODE:
        return f"_:{value.v}"
    body = f'"{escape_string(value.lex)}"'
    if k == STRING:
        return body
    if k == LANG:
        return f"{body}@{value.lang}"
    return f"{body}^^<{value.dt}>"


# --------------------------------------------------------------------------- parsing

_INTEGER_LEX: Final = re.compile(r"[+-]?[0-9]+")
_DECIMAL_LEX: Final = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
_UNESCAPE: Final = re.compile(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)", re.S)
_SIMPLE_UNESCAPES: Final = {
    "t": "\t",
    "b": "\b",
    "n": "\n",
    "r": "\r",
    "f": "\f",
    '"': '"',
    "'": "'",
    "\\": "\\",
}


def _unescape_char(match: re.Match[str]) -> str:
    code = match.group(1)
    if code[0] in "uU" and len(code) > 1:
        return chr(int(code[1:], 16))
    return _SIMPLE_UNESCAPES.get(code, code)


def parse_integer_lexical(text: str) -> int | None:
    if not (text.isdigit() and text.isascii()) and _INTEGER_LEX.fullmatch(text) is None:
        return None
    try:
        return int(text)
    except ValueError:  # beyond Python's int/str digit limit
        return None


def parse_decimal_lexical(text: str) -> Decimal | None:
    # Decimal() also reads exponents, NaN, Infinity, underscores and non-ASCII
    # digits: the cheap character check rules those out, the regex the rest.
    if text.strip("0123456789.+-") or _DECIMAL_LEX.fullmatch(text) is None:
        return None
    return Decimal(text)


_DOUBLE_SPECIALS: Final = {"INF": math.inf, "+INF": math.inf, "-INF": -math.inf, "NaN": math.nan}


def parse_double_lexical(text: str) -> float | None:
    """XSD float/double lexical forms (values beyond the range round to ±INF)."""
    if text.strip("0123456789.eE+-"):  # float() also reads "inf", "nan", "1_0", " 1", "١"
        return _DOUBLE_SPECIALS.get(text)
    try:
        return float(text)
    except ValueError:
        return None


def parse_boolean_lexical(text: str) -> bool | None:
    if text in ("true", "1"):
        return True
    if text in ("false", "0"):
        return False
    return None


def in_integer_range(value: int, datatype: str) -> bool:
    low, high = INTEGER_TYPES[datatype]
    return (low is None or value >= low) and (high is None or value <= high)


def typed_literal(lex: str, datatype: str, nt: str | None = None) -> Value:
    """The value of `"lex"^^<datatype>`: an ill-formed lexical form or an
    unsupported datatype gives an OTHER value (SPARQL 1.1 §17.3 treats both
    as literals it cannot compare except by term equality)."""
    if datatype == XSD_STRING:
        return Value(STRING, lex, XSD_STRING, None, lex, None)
    entry = _TYPED_PARSERS.get(datatype)
    if entry is not None:
        kind, parse = entry
        value = parse(lex)
        if value is not None:
            return Value(kind, value, datatype, None, lex, nt)
    return Value(OTHER, lex, datatype, None, lex, nt)


def _integer_parser(datatype: str) -> Callable[[str], int | None]:
    if datatype == XSD_INTEGER:
        return parse_integer_lexical

    def parse(lex: str) -> int | None:
        number = parse_integer_lexical(lex)
        return number if number is not None and in_integer_range(number, datatype) else None

    return parse


def _parse_float(lex: str) -> float | None:
    number = parse_double_lexical(lex)
    return None if number is None else to_f32(number)


def _temporal_parser(kind: int) -> Callable[[str], temporal.Temporal | None]:
    index = kind - DATETIME
    return lambda lex: temporal.parse_temporal(index, lex)


def _duration_parser(kind: int) -> Callable[[str], temporal.Duration | None]:
    restriction = {DURATION: None, YM_DURATION: "ym", DT_DURATION: "dt"}[kind]
    return lambda lex: temporal.parse_duration(lex, restriction)


_TYPED_PARSERS: Final[dict[str, tuple[int, Callable[[str], Any]]]] = {
    **{datatype: (INTEGER, _integer_parser(datatype)) for datatype in INTEGER_TYPES},
    XSD_DECIMAL: (DECIMAL, parse_decimal_lexical),
    XSD_DOUBLE: (DOUBLE, parse_double_lexical),
    XSD_FLOAT: (FLOAT, _parse_float),
    XSD_BOOLEAN: (BOOLEAN, parse_boolean_lexical),
    XSD_DATETIME: (DATETIME, _temporal_parser(DATETIME)),
    XSD_DATE: (DATE, _temporal_parser(DATE)),
    XSD_TIME: (TIME, _temporal_parser(TIME)),
    XSD_DURATION: (DURATION, _duration_parser(DURATION)),
    XSD_YM_DURATION: (YM_DURATION, _duration_parser(YM_DURATION)),
    XSD_DT_DURATION: (DT_DURATION, _duration_parser(DT_DURATION)),
}
"""datatype IRI -> (kind, lexical form parser returning None when ill-formed)."""


TERM_CACHE_SIZE: Final = 1 << 14
"""Entries of `parse_term`'s cache. Every distinct term an expression reads stays until the cache
is full (a running query's event times, values: ~640 bytes a dateTime), so its size is memory a
long-running server keeps: 16,384 entries, ~10 MB (131,072 held ~80 MB and took hours to fill in
the soak of issue 15, a creep that looked unbounded); the terms that repeat (one event tested
against many partial matches) are the recent ones (bench/README.md "Soak")."""


@lru_cache(maxsize=TERM_CACHE_SIZE)
def parse_term(nt: str) -> Value:
    """Parse one N-Triples term (memoised: each distinct recent string is parsed once).

    Raises ValueError for text that is not an N-Triples term: that is a bug
    in the caller, not a SPARQL evaluation error.
    """
    if nt:
        first = nt[0]
        if first == '"':
            end = nt.rfind('"')
            if end > 0:
                lex = nt[1:end]
                if "\\" in lex:
                    lex = _UNESCAPE.sub(_unescape_char, lex)
                if end == len(nt) - 1:
                    return Value(STRING, lex, XSD_STRING, None, lex, nt)
                if nt[end + 1] == "@" and end + 2 < len(nt):
                    lang = nt[end + 2 :]
                    lower = lang.lower()
                    return Value(LANG, lex, RDF_LANGSTRING, lower, lex, nt if lang == lower else None)
                if nt.startswith("^^<", end + 1) and nt[-1] == ">":
                    datatype = nt[end + 4 : -1]
                    return typed_literal(lex, datatype, nt if datatype != XSD_STRING else None)
        elif first == "<" and nt[-1] == ">":
            iri = nt[1:-1]
            return Value(IRI, iri, "", None, iri, nt)
        elif first == "_" and nt.startswith("_:"):
            label = nt[2:]
            return Value(BNODE, label, "", None, label, nt)
    raise ValueError(f"not an N-Triples term: {nt!r}")


# --------------------------------------------------------------------------- stored form
# What Oxigraph's store keeps of a literal (its `EncodedTerm::from(LiteralRef)`): a literal of a
# datatype it encodes natively comes back in that type's canonical form when its own parser reads
# the lexical form, and exactly as written otherwise; every other literal comes back as written.

_I64: Final = (-(2**63), 2**63 - 1)  # Oxigraph keeps an xsd:integer in an i64 (= xsd:long)
_I128: Final = (-(2**127), 2**127 - 1)
_DECIMAL_SCALE: Final = 18
"""Oxigraph's xsd:decimal is an i128 count of 10^-18."""
_RUST_FLOAT: Final = re.compile(
    r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?i:inf|infinity|nan))"
)
"""What Rust's `f64::from_str` (Oxigraph's float/double parser) accepts: `inf` and `nan` too."""
_TZ_LEX: Final = temporal.TZ
_GREGORIAN: Final[dict[str, tuple[re.Pattern[str], str, Callable[[str], str]]]] = {
    XSD + "gYear": (re.compile(r"(-?[0-9]{4,})" + _TZ_LEX), "{0}-01-01", lambda d: d[:-6]),
    XSD + "gYearMonth": (re.compile(r"(-?[0-9]{4,})-([0-9]{2})" + _TZ_LEX), "{0}-{1}-01", lambda d: d[:-3]),
    XSD + "gMonthDay": (
        re.compile(r"--([0-9]{2})-([0-9]{2})" + _TZ_LEX),
        "2000-{0}-{1}",
        lambda d: "-" + d[-6:],
    ),
    XSD + "gMonth": (re.compile(r"--([0-9]{2})" + _TZ_LEX), "2000-{0}-01", lambda d: "-" + d[-6:-3]),
    XSD + "gDay": (re.compile(r"---([0-9]{2})" + _TZ_LEX), "2000-01-{0}", lambda d: "--" + d[-3:]),
}
"""gX datatype -> (lexical form, the xsd:date it is checked as (2000 is a leap year, so --02-29
is valid), the gX form of that date's canonical form). Timezones are canonical as for dates."""


def _stored_integer(lex: str) -> str | None:
    """Oxigraph reads every integer type as an i64 xsd:integer (no check of the type's range)."""
    number = parse_integer_lexical(lex)
    return None if number is None or not _I64[0] <= number <= _I64[1] else str(number)


def _stored_decimal(lex: str) -> str | None:
    """An exact i128 multiple of 10^-18, or None: Oxigraph keeps `1.0000000000000000001` as written."""
    value = parse_decimal_lexical(lex)
    if value is None:
        return None
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    units = int("".join(map(str, digits)))
    while exponent < -_DECIMAL_SCALE and units and units % 10 == 0:
        units //= 10
        exponent += 1
    if units and exponent < -_DECIMAL_SCALE:
        return None
    scaled = units * 10 ** (exponent + _DECIMAL_SCALE) if units else 0
    if not _I128[0] <= (-scaled if sign else scaled) <= _I128[1]:
        return None
    return format_decimal(value)


def _rust_float(lex: str) -> float | None:
    return float(lex) if _RUST_FLOAT.fullmatch(lex) else None


def _stored_double(lex: str) -> str | None:
    number = _rust_float(lex)
    return None if number is None else format_double(number)


def _f32_neighbour(value: float, toward: float) -> float:
    """The binary32 value next to `value` (a finite binary32) in the direction of `toward`."""
    if value == 0:
        return math.copysign(2.0**-149, toward)
    bits: int = _F32_BITS.unpack(_F32.pack(value))[0]
    away_from_zero = (toward > value) == (value > 0)
    result: float = _F32.unpack(_F32_BITS.pack(bits + 1 if away_from_zero else bits - 1))[0]
    return result


def _stored_float(lex: str) -> str | None:
    """Rust rounds the text to binary32 once; rounding it to a double first can land exactly
    on the midpoint of two binary32 values the text is not on (then the exact text decides)."""
    number = _rust_float(lex)
    if number is None:
        return None
    single = to_f32(number)
    if single != number and math.isfinite(single):
        other = _f32_neighbour(single, number)
        if (single + other) / 2 == number:
            exact = Fraction(lex)
            if exact != number:
                single = max(single, other) if exact > number else min(single, other)
    return format_float(single)


def _stored_boolean(lex: str) -> str | None:
    flag = parse_boolean_lexical(lex)
    return None if flag is None else ("true" if flag else "false")


_FRACTION: Final = re.compile(r"\.([0-9]+)")


def _seconds_fit(lex: str) -> bool:
    """Oxigraph keeps seconds as an xsd:decimal: at most 18 fractional digits."""
    match = _FRACTION.search(lex)
    return match is None or len(match.group(1).rstrip("0")) <= _DECIMAL_SCALE


def _stored_temporal(kind: int) -> Callable[[str], str | None]:
    def stored(lex: str) -> str | None:
        if not _seconds_fit(lex):
            return None
        value = temporal.parse_temporal(kind - DATETIME, lex)
        return None if value is None else temporal.format_temporal(kind - DATETIME, value)

    return stored


def _stored_duration(kind: int) -> Callable[[str], str | None]:
    parse = _duration_parser(kind)

    def stored(lex: str) -> str | None:
        value = parse(lex) if _seconds_fit(lex) else None
        return None if value is None else temporal.format_duration(*value, year_month=kind == YM_DURATION)

    return stored


def _stored_gregorian(datatype: str) -> Callable[[str], str | None]:
    pattern, as_date, from_date = _GREGORIAN[datatype]

    def stored(lex: str) -> str | None:
        match = pattern.fullmatch(lex)
        if match is None:
            return None
        *parts, tz = match.groups()
        if parts == ["02", "29"] and tz not in (None, "Z"):
            return None  # Oxigraph rejects --02-29 with a numeric offset (its check uses a non-leap year)
        value = temporal.parse_temporal(temporal.DATE_INDEX, as_date.format(*parts) + (tz or ""))
        if value is None:
            return None
        zone = "" if value.tz is None else temporal.format_tz(value.tz)
        date = temporal.format_temporal(temporal.DATE_INDEX, value)
        return from_date(date[: len(date) - len(zone)]) + zone

    return stored


_STORED: Final[dict[str, tuple[str, Callable[[str], str | None]]]] = {
    **{datatype: (XSD_INTEGER, _stored_integer) for datatype in INTEGER_TYPES},
    XSD_DECIMAL: (XSD_DECIMAL, _stored_decimal),
    XSD_DOUBLE: (XSD_DOUBLE, _stored_double),
    XSD_FLOAT: (XSD_FLOAT, _stored_float),
    XSD_BOOLEAN: (XSD_BOOLEAN, _stored_boolean),
    XSD_DATETIME: (XSD_DATETIME, _stored_temporal(DATETIME)),
    XSD + "dateTimeStamp": (XSD_DATETIME, _stored_temporal(DATETIME)),
    XSD_DATE: (XSD_DATE, _stored_temporal(DATE)),
    XSD_TIME: (XSD_TIME, _stored_temporal(TIME)),
    XSD_DURATION: (XSD_DURATION, _stored_duration(DURATION)),
    XSD_YM_DURATION: (XSD_YM_DURATION, _stored_duration(YM_DURATION)),
    XSD_DT_DURATION: (XSD_DT_DURATION, _stored_duration(DT_DURATION)),
    **{datatype: (datatype, _stored_gregorian(datatype)) for datatype in _GREGORIAN},
}
"""datatype IRI -> (the datatype Oxigraph stores it as, canonical lexical form or None)."""


_STORED_ENDINGS: Final = tuple(f'"^^<{datatype}>' for datatype in _STORED)
"""How a literal of a datatype in `_STORED` ends (its datatype IRIs hold no `"`)."""
_XSD_STRING_ENDING: Final = f"^^<{XSD_STRING}>"


def _kept_as_written(nt: str) -> str | None:
    """`stored_nt` of the common terms, read off the text without parsing it (None: others):
    IRIs, blank nodes, and literals with nothing to escape that are plain, xsd:string,
    lower-case tagged or of a datatype Oxigraph does not encode. Reads `nt` as `parse_term`
    does, so text that is not a term still reaches its error."""
    first = nt[:1]
    if first == "<":
        return nt if nt[-1] == ">" else None
    if first == "_":
        return nt if nt.startswith("_:") else None
    if first != '"' or nt.endswith(_STORED_ENDINGS):
        return None
    end = nt.rfind('"')
    if end <= 0:
        return None
    tail = nt[end + 1 :]
    kept: str | None
    if not tail:
        kept = nt
    elif tail[0] == "@":
        kept = nt if len(tail) > 1 and tail == tail.lower() else None
    elif tail.startswith("^^<") and tail[-1] == ">":
        kept = nt[: end + 1] if tail == _XSD_STRING_ENDING else nt
    else:
        return None
    return None if kept is None or needs_escape(nt[1:end]) else kept


@lru_cache(maxsize=1 << 12)
def stored_nt(nt: str) -> str:
    """The N-Triples text Oxigraph gives back for a term it stored (see `_STORED`): what a
    term written in a query (VALUES, a BIND constant) or computed by BIND must be to join
    the stream's terms. A term Oxigraph gave back is its own stored form, so a BIND that
    copies a term passes it through unchanged. IRIs and blank nodes are kept as given."""
    kept = _kept_as_written(nt)
    if kept is not None:
        return kept
    value = parse_term(nt)
    k = value.k
    if k in (IRI, BNODE):
        return nt
    if k in (STRING, LANG):  # "x"^^xsd:string is "x"; tags are lower case
        return _format_nt(Value(k, value.v, value.dt, value.lang, value.lex))
    entry = _STORED.get(value.dt)
    if entry is not None:
        datatype, canonical = entry
        lex = canonical(value.lex)
        if lex is not None:
            return f'"{escape_string(lex)}"^^<{datatype}>'
    return _format_nt(Value(OTHER, value.lex, value.dt, None, value.lex))
