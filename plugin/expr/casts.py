"""XPath constructor functions: `xsd:integer(?x)` and the other casts (§17.5).

SPARQL 1.1 imports the XPath casting rules (F&O §19): a string is
whitespace-collapsed and read in the target's lexical space, numbers convert
between the numeric types, booleans become 1/0, and the date/time and
duration types convert among themselves. The derived integer types
(xsd:int, xsd:byte, ...) are casts to xsd:integer plus a range check.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal
from typing import Final

from rsep.plugin.algebra.sparql import XSD_STRING
from rsep.plugin.expr import temporal
from rsep.plugin.expr.decimals import EXACT
from rsep.plugin.expr.errors import ExprError
from rsep.plugin.expr.values import (
    BNODE,
    BOOLEAN,
    DATE,
    DATETIME,
    DECIMAL,
    DOUBLE,
    DT_DURATION,
    DURATION,
    DURATION_KINDS,
    FALSE,
    FLOAT,
    INTEGER,
    INTEGER_TYPES,
    IRI,
    KIND_DATATYPE,
    LANG,
    OTHER,
    STRING,
    TIME,
    TRUE,
    XSD_BOOLEAN,
    XSD_DATE,
    XSD_DATETIME,
    XSD_DECIMAL,
    XSD_DOUBLE,
    XSD_DT_DURATION,
    XSD_DURATION,
    XSD_FLOAT,
    XSD_INTEGER,
    XSD_TIME,
    XSD_YM_DURATION,
    YM_DURATION,
    Value,
    format_double,
    format_float,
    in_integer_range,
    parse_boolean_lexical,
    parse_decimal_lexical,
    parse_double_lexical,
    parse_integer_lexical,
    string,
    to_double,
    to_f32,
    to_float32,
)

Cast = Callable[[Value], Value]


_XML_WHITESPACE: Final = " \t\n\r"


def _cast_source(value: Value) -> str | None:
    """The whitespace-collapsed text of a string being cast (XPath §19.1.1), or None."""
    if value.k == STRING:
        return str(value.v).strip(_XML_WHITESPACE)
    return None


def _xpath_double_string(value: float, to_text: Callable[[float], str]) -> str:
    """XPath's xs:double/xs:float to xs:string cast: plain decimal notation in
    [1e-6, 1e6), the canonical "1.0E7" scientific form otherwise."""
    text = to_text(value)
    if value != value or value in (math.inf, -math.inf) or value == 0 or 1e-6 <= abs(value) < 1e6:
        return text
    mantissa, _, exponent = f"{Decimal(text).normalize(EXACT):E}".partition("E")
    if "." not in mantissa:
        mantissa += ".0"
    return f"{mantissa}E{int(exponent)}"


def cast_string(value: Value) -> Value:
    k = value.k
    if k == IRI:
        return string(value.v)
    if k == BNODE:
        raise ExprError("cannot cast a blank node")
    if k in (STRING, LANG, OTHER):
        return string(value.lex)
    if k == DOUBLE:
        return string(_xpath_double_string(value.v, format_double))
    if k == FLOAT:
        return string(_xpath_double_string(value.v, format_float))
    return string(Value(k, value.v, KIND_DATATYPE[k]).lex)


def _to_integer(value: Value) -> int:
    k = value.k
    if k == INTEGER:
        return int(value.v)
    if k == DECIMAL:
        return int(value.v)
    if k in (DOUBLE, FLOAT):
        x = value.v
        if math.isnan(x) or math.isinf(x):
            raise ExprError(f"cannot cast {value.nt} to an integer")
        return int(x)
    if k == BOOLEAN:
        return 1 if value.v else 0
    text = _cast_source(value)
    number = None if text is None else parse_integer_lexical(text)
    if number is None:
        raise ExprError(f"cannot cast {value.nt} to an integer")
    return number


def _integer_cast(datatype: str) -> Cast:
    def cast(value: Value) -> Value:
        number = _to_integer(value)
        if datatype != XSD_INTEGER and not in_integer_range(number, datatype):
            raise ExprError(f"{number} is out of the range of <{datatype}>")
        return Value(INTEGER, number, datatype)

    return cast


def cast_decimal(value: Value) -> Value:
    k = value.k
    if k in (DECIMAL, INTEGER):
        return Value(DECIMAL, Decimal(value.v), XSD_DECIMAL)
    if k in (DOUBLE, FLOAT):
        x = value.v
        if math.isnan(x) or math.isinf(x):
            raise ExprError(f"cannot cast {value.nt} to a decimal")
        # The shortest decimal that reads back as the same double (a float is
        # read as the double it equals): "0.1" for 0.1e0, as Oxigraph does,
        # rather than the exact binary value XPath's "numerically closest" asks
        # for with unlimited precision (0.1000000000000000055511...).
        return Value(DECIMAL, Decimal(repr(float(x))), XSD_DECIMAL)
    if k == BOOLEAN:
        return Value(DECIMAL, Decimal(1 if value.v else 0), XSD_DECIMAL)
    text = _cast_source(value)
    number = None if text is None else parse_decimal_lexical(text)
    if number is None:
        raise ExprError(f"cannot cast {value.nt} to a decimal")
    return Value(DECIMAL, number, XSD_DECIMAL)


def _to_double(value: Value) -> float:
    k = value.k
    if k <= DOUBLE:
        return to_double(k, value.v)
    if k == BOOLEAN:
        return 1.0 if value.v else 0.0
    text = _cast_source(value)
    number = None if text is None else parse_double_lexical(text)
    if number is None:
        raise ExprError(f"cannot cast {value.nt} to a floating point number")
    return number


def cast_double(value: Value) -> Value:
    return Value(DOUBLE, _to_double(value), XSD_DOUBLE)


def cast_float(value: Value) -> Value:
    if value.k <= DOUBLE:
        return Value(FLOAT, to_float32(value.k, value.v), XSD_FLOAT)
    return Value(FLOAT, to_f32(_to_double(value)), XSD_FLOAT)


def cast_boolean(value: Value) -> Value:
    k = value.k
    if k == BOOLEAN:
        return TRUE if value.v else FALSE
    if k <= DOUBLE:
        x = value.v
        return TRUE if x and x == x else FALSE
    text = _cast_source(value)
    flag = None if text is None else parse_boolean_lexical(text)
    if flag is None:
        raise ExprError(f"cannot cast {value.nt} to a boolean")
    return TRUE if flag else FALSE


def _temporal_cast(kind: int) -> Cast:
    """Casts to dateTime/date/time: from a string, or between dateTime and
    date (dateTime -> date/time, date -> dateTime)."""
    index = kind - DATETIME
    sources = {DATETIME: (DATETIME, DATE), DATE: (DATE, DATETIME), TIME: (TIME, DATETIME)}[kind]

    def cast(value: Value) -> Value:
        k = value.k
        if k in sources:
            return Value(kind, temporal.convert(value.v, k - DATETIME, index), KIND_DATATYPE[kind])
        text = _cast_source(value)
        parsed = None if text is None else temporal.parse_temporal(index, text)
        if parsed is None:
            raise ExprError(f"cannot cast {value.nt} to <{KIND_DATATYPE[kind]}>")
        return Value(kind, parsed, KIND_DATATYPE[kind])

    return cast


def _duration_cast(kind: int) -> Cast:
    """Casts between the duration types drop the part the target cannot hold
    (XPath §19.1.6)."""
    restriction = {DURATION: None, YM_DURATION: "ym", DT_DURATION: "dt"}[kind]

    def cast(value: Value) -> Value:
        if value.k in DURATION_KINDS:
            months, seconds = value.v
            if kind == YM_DURATION:
                seconds = 0
            elif kind == DT_DURATION:
                months = 0
            return Value(kind, (months, seconds), KIND_DATATYPE[kind])
        text = _cast_source(value)
        parsed = None if text is None else temporal.parse_duration(text, restriction)
        if parsed is None:
            raise ExprError(f"cannot cast {value.nt} to <{KIND_DATATYPE[kind]}>")
        return Value(kind, parsed, KIND_DATATYPE[kind])

    return cast


CASTS: Final[dict[str, Cast]] = {
    XSD_STRING: cast_string,
    **{datatype: _integer_cast(datatype) for datatype in INTEGER_TYPES},
    XSD_DECIMAL: cast_decimal,
    XSD_DOUBLE: cast_double,
    XSD_FLOAT: cast_float,
    XSD_BOOLEAN: cast_boolean,
    XSD_DATETIME: _temporal_cast(DATETIME),
    XSD_DATE: _temporal_cast(DATE),
    XSD_TIME: _temporal_cast(TIME),
    XSD_DURATION: _duration_cast(DURATION),
    XSD_YM_DURATION: _duration_cast(YM_DURATION),
    XSD_DT_DURATION: _duration_cast(DT_DURATION),
}
"""XPath constructor functions, called as `xsd:integer(?x)` etc."""
