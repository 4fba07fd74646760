"""SPARQL 1.1 built-in functions and XSD casts on values (§17.4, §17.5).

Every function here is strict (all arguments evaluated first) and takes and
returns `Value`s, raising ExprError for a type error. The non-strict forms
(BOUND, IF, COALESCE, IN, logical operators) and the non-deterministic ones
(RAND, NOW, UUID, STRUUID, BNODE) are built by the compiler.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Final
from urllib.parse import quote

from rsep.plugin.algebra.sparql import RDF_LANGSTRING
from rsep.plugin.expr import temporal, xpath_regex
from rsep.plugin.expr.decimals import EXACT
from rsep.plugin.expr.errors import ExprError
from rsep.plugin.expr.operators import same_term
from rsep.plugin.expr.values import (
    BNODE,
    DATE,
    DATETIME,
    DECIMAL,
    DOUBLE,
    DT_DURATION,
    EMPTY_STRING,
    FALSE,
    INTEGER,
    IRI,
    KIND_DATATYPE,
    LANG,
    STRING,
    TIME,
    TRUE,
    XSD_DECIMAL,
    XSD_DT_DURATION,
    XSD_INTEGER,
    Value,
    boolean,
    iri,
    string,
    typed_literal,
)

StrictFunction = Callable[..., Value]

# --------------------------------------------------------------------------- argument checks


def string_arg(value: Value) -> tuple[str, str | None]:
    """A "string literal" argument (§17.4.3): simple/xsd:string or language-tagged."""
    k = value.k
    if k == STRING:
        return value.v, None
    if k == LANG:
        return value.v, value.lang
    raise ExprError(f"expected a string literal, got {value.nt}")


def simple_arg(value: Value) -> str:
    """A simple literal (or xsd:string) argument."""
    if value.k == STRING:
        return str(value.v)
    raise ExprError(f"expected a simple literal, got {value.nt}")


def compatible_args(a: Value, b: Value) -> tuple[str, str, str | None]:
    """Argument compatibility (§17.4.3.1.2): both simple, both with the same
    language tag, or a language-tagged first and a simple second argument."""
    text1, lang1 = string_arg(a)
    text2, lang2 = string_arg(b)
    if lang2 is not None and lang1 != lang2:
        raise ExprError(f"incompatible string arguments {a.nt} and {b.nt}")
    return text1, text2, lang1


# --------------------------------------------------------------------------- terms


def fn_str(value: Value) -> Value:
    if value.k == IRI:
        return string(value.v)
    if value.k == BNODE:
        raise ExprError("STR of a blank node")
    return string(value.lex)


def fn_lang(value: Value) -> Value:
    if value.k == IRI or value.k == BNODE:
        raise ExprError(f"LANG of {value.nt}")
    return string(value.lang or "")


def fn_datatype(value: Value) -> Value:
    if value.k == IRI or value.k == BNODE:
        raise ExprError(f"DATATYPE of {value.nt}")
    return iri(value.dt)


_UCSCHAR: Final = "\u00a0-\ud7ff\uf900-\ufdcf\ufdf0-\uffef" + "".join(
    f"{chr(plane << 16)}-{chr((plane << 16) + 0xFFFD)}" for plane in range(1, 15)
)
_IPRIVATE: Final = "\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"
_UNRESERVED: Final = r"A-Za-z0-9\-._~" + _UCSCHAR
_SUB_DELIMS: Final = r"!$&'()*+,;="
_PCT: Final = r"%[0-9A-Fa-f]{2}"
_PCHAR: Final = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}:@]|{_PCT})"
_AUTHORITY: Final = (
    rf"(?:(?:[{_UNRESERVED}{_SUB_DELIMS}:]|{_PCT})*@)?"
    rf"(?:\[[0-9A-Za-z:.+\-]+\]|(?:[{_UNRESERVED}{_SUB_DELIMS}]|{_PCT})*)(?::[0-9]*)?"
)
_ABSOLUTE_IRI: Final = re.compile(
    rf"[A-Za-z][A-Za-z0-9+\-.]*:"
    rf"(?://{_AUTHORITY}(?:/{_PCHAR}*)*|/(?:{_PCHAR}+(?:/{_PCHAR}*)*)?|{_PCHAR}+(?:/{_PCHAR}*)*|)"
    rf"(?:\?(?:{_PCHAR}|[{_IPRIVATE}/?])*)?(?:#(?:{_PCHAR}|[/?])*)?"
)


def fn_iri(value: Value) -> Value:
    """IRI/URI (§17.4.2.8). There is no base IRI here, so only absolute IRIs
    (RFC 3987 syntax) are accepted."""
    if value.k == IRI:
        return value
    text = simple_arg(value)
    if _ABSOLUTE_IRI.fullmatch(text) is None:
        raise ExprError(f"not an absolute IRI: {text!r}")
    return iri(text)


def fn_strdt(lexical: Value, datatype: Value) -> Value:
    text = simple_arg(lexical)
    if datatype.k != IRI:
        raise ExprError(f"STRDT needs a datatype IRI, got {datatype.nt}")
    if datatype.v == RDF_LANGSTRING:
        raise ExprError("STRDT cannot build a language-tagged literal")
    return typed_literal(text, datatype.v)


_LANGUAGE_TAG: Final = re.compile(
    r"(?:(?:[a-z]{2,3}(?:-[a-z]{3}){0,3}|[a-z]{4,8})(?:-[a-z]{4})?(?:-(?:[a-z]{2}|[0-9]{3}))?"
    r"(?:-(?:[a-z0-9]{5,8}|[0-9][a-z0-9]{3}))*(?:-[0-9a-wyz](?:-[a-z0-9]{2,8})+)*(?:-x(?:-[a-z0-9]{1,8})+)?"
    r"|x(?:-[a-z0-9]{1,8})+)",
    re.IGNORECASE,
)


def fn_strlang(lexical: Value, tag: Value) -> Value:
    """STRLANG (§17.4.2.11); the tag must be a well-formed BCP 47 tag."""
    text = simple_arg(lexical)
    language = simple_arg(tag)
    if _LANGUAGE_TAG.fullmatch(language) is None or not language.isascii():
        raise ExprError(f"not a language tag: {language!r}")
    return string(text, language.lower())


def fn_is_iri(value: Value) -> Value:
    return TRUE if value.k == IRI else FALSE


def fn_is_blank(value: Value) -> Value:
    return TRUE if value.k == BNODE else FALSE


def fn_is_literal(value: Value) -> Value:
    return FALSE if value.k == IRI or value.k == BNODE else TRUE


def fn_is_numeric(value: Value) -> Value:
    """isNumeric (§17.4.2.4): a well-formed literal of a numeric datatype."""
    return TRUE if value.k <= DOUBLE else FALSE


def fn_same_term(a: Value, b: Value) -> Value:
    return TRUE if same_term(a, b) else FALSE


# --------------------------------------------------------------------------- strings


def fn_strlen(value: Value) -> Value:
    text, _ = string_arg(value)
    return Value(INTEGER, len(text), XSD_INTEGER)


def _integer_arg(value: Value) -> int:
    if value.k != INTEGER:
        raise ExprError(f"expected an xsd:integer, got {value.nt}")
    return int(value.v)


def fn_substr(source: Value, start: Value, length: Value | None = None) -> Value:
    """SUBSTR (§17.4.3.3, fn:substring): 1-based, characters at positions p
    with start <= p < start + length."""
    text, lang = string_arg(source)
    begin = _integer_arg(start)
    first = max(begin, 1)
    if length is None:
        result = text[first - 1 :]
    else:
        end = begin + _integer_arg(length)
        result = text[first - 1 : end - 1] if end > first else ""
    return string(result, lang)


def fn_ucase(value: Value) -> Value:
    text, lang = string_arg(value)
    return string(text.upper(), lang)


def fn_lcase(value: Value) -> Value:
    text, lang = string_arg(value)
    return string(text.lower(), lang)


def fn_strstarts(a: Value, b: Value) -> Value:
    text, prefix, _ = compatible_args(a, b)
    return TRUE if text.startswith(prefix) else FALSE


def fn_strends(a: Value, b: Value) -> Value:
    text, suffix, _ = compatible_args(a, b)
    return TRUE if text.endswith(suffix) else FALSE


def fn_contains(a: Value, b: Value) -> Value:
    text, part, _ = compatible_args(a, b)
    return TRUE if part in text else FALSE


def fn_strbefore(a: Value, b: Value) -> Value:
    """STRBEFORE (§17.4.3.6): no match gives the empty simple literal."""
    text, part, lang = compatible_args(a, b)
    position = text.find(part)
    if position < 0:
        return EMPTY_STRING
    return string(text[:position], lang)


def fn_strafter(a: Value, b: Value) -> Value:
    text, part, lang = compatible_args(a, b)
    position = text.find(part)
    if position < 0:
        return EMPTY_STRING
    return string(text[position + len(part) :], lang)


def fn_encode_for_uri(value: Value) -> Value:
    text, _ = string_arg(value)
    try:
        return string(quote(text, safe="", encoding="utf-8", errors="strict"))
    except UnicodeEncodeError as error:
        raise ExprError(str(error)) from None


def fn_concat(*values: Value) -> Value:
    """CONCAT (§17.4.3.12): the language tag survives only if all arguments share it."""
    texts = []
    langs = set()
    for value in values:
        text, lang = string_arg(value)
        texts.append(text)
        langs.add(lang)
    lang = langs.pop() if len(langs) == 1 else None
    return string("".join(texts), lang)


def fn_lang_matches(tag: Value, language_range: Value) -> Value:
    """langMatches (§17.4.3.13): RFC 4647 basic filtering, case-insensitive."""
    language = simple_arg(tag).lower()
    pattern = simple_arg(language_range).lower()
    if pattern == "*":
        return boolean(bool(language))
    return boolean(language == pattern or language.startswith(pattern + "-"))


def _hash(algorithm: str) -> StrictFunction:
    def digest(value: Value) -> Value:
        text = simple_arg(value)
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError as error:
            raise ExprError(str(error)) from None
        return string(hashlib.new(algorithm, data).hexdigest())

    return digest


def regex_value(pattern: Value, flags: Value | None) -> tuple[re.Pattern[str], str]:
    text = simple_arg(pattern)
    flag_text = "" if flags is None else simple_arg(flags)
    return xpath_regex.compile_regex(text, flag_text), flag_text


def fn_regex(text: Value, pattern: Value, flags: Value | None = None) -> Value:
    """REGEX (§17.4.3.14, fn:matches)."""
    subject, _ = string_arg(text)
    regex, _ = regex_value(pattern, flags)
    return TRUE if regex.search(subject) is not None else FALSE


def replace_with(regex: re.Pattern[str], flag_text: str, subject: Value, replacement: Value) -> Value:
    text, lang = string_arg(subject)
    replacement_text = simple_arg(replacement)
    if xpath_regex.matches_empty(regex):
        raise ExprError("REPLACE pattern matches the empty string (err:FORX0003)")
    return string(regex.sub(xpath_regex.replacer(regex, replacement_text, flag_text), text), lang)


def fn_replace(subject: Value, pattern: Value, replacement: Value, flags: Value | None = None) -> Value:
    """REPLACE (§17.4.3.15, fn:replace)."""
    regex, flag_text = regex_value(pattern, flags)
    return replace_with(regex, flag_text, subject, replacement)


# --------------------------------------------------------------------------- numerics


def _numeric_arg(value: Value) -> int:
    if value.k > DOUBLE:
        raise ExprError(f"expected a numeric, got {value.nt}")
    return value.k


def fn_abs(value: Value) -> Value:
    k = _numeric_arg(value)
    x = value.v
    if k == DECIMAL:
        return Value(k, EXACT.abs(x), XSD_DECIMAL)
    if k == INTEGER:
        return Value(k, abs(x), XSD_INTEGER)
    return Value(k, math.fabs(x), KIND_DATATYPE[k])


def _float_integral(x: float, rounded: int) -> float:
    """A float result of CEIL/FLOOR/ROUND, keeping a negative zero's sign."""
    result = float(rounded)
    return math.copysign(0.0, x) if result == 0 else result


def fn_ceil(value: Value) -> Value:
    k = _numeric_arg(value)
    x = value.v
    if k == INTEGER:
        return Value(k, x, XSD_INTEGER)
    if k == DECIMAL:
        return Value(k, x.to_integral_value(rounding=ROUND_CEILING, context=EXACT), XSD_DECIMAL)
    if math.isnan(x) or math.isinf(x):
        return Value(k, x, KIND_DATATYPE[k])
    return Value(k, _float_integral(x, math.ceil(x)), KIND_DATATYPE[k])


def fn_floor(value: Value) -> Value:
    k = _numeric_arg(value)
    x = value.v
    if k == INTEGER:
        return Value(k, x, XSD_INTEGER)
    if k == DECIMAL:
        return Value(k, x.to_integral_value(rounding=ROUND_FLOOR, context=EXACT), XSD_DECIMAL)
    if math.isnan(x) or math.isinf(x):
        return Value(k, x, KIND_DATATYPE[k])
    return Value(k, _float_integral(x, math.floor(x)), KIND_DATATYPE[k])


_HALF: Final = Decimal("0.5")


def fn_round(value: Value) -> Value:
    """ROUND (fn:round): halves round towards positive infinity; a negative
    value that rounds to zero gives -0 for float/double."""
    k = _numeric_arg(value)
    x = value.v
    if k == INTEGER:
        return Value(k, x, XSD_INTEGER)
    if k == DECIMAL:
        rounded = EXACT.add(x, _HALF).to_integral_value(rounding=ROUND_FLOOR, context=EXACT)
        return Value(k, rounded, XSD_DECIMAL)
    if math.isnan(x) or math.isinf(x):
        return Value(k, x, KIND_DATATYPE[k])
    rounded = math.floor(x)
    if x - rounded >= 0.5:
        rounded += 1
    return Value(k, _float_integral(x, rounded), KIND_DATATYPE[k])


# --------------------------------------------------------------------------- dates and times


def _temporal_arg(value: Value, kinds: tuple[int, ...]) -> temporal.Temporal:
    if value.k not in kinds:
        raise ExprError(f"expected a date/time value, got {value.nt}")
    result: temporal.Temporal = value.v
    return result


def _field(index: int, kinds: tuple[int, ...]) -> StrictFunction:
    def extract(value: Value) -> Value:
        field = temporal.fields(_temporal_arg(value, kinds))[index]
        if index == 5:
            return Value(DECIMAL, Decimal(field), XSD_DECIMAL)
        return Value(INTEGER, field, XSD_INTEGER)

    return extract


def fn_timezone(value: Value) -> Value:
    """TIMEZONE (§17.4.5.8): an error when the value has no timezone."""
    tz = _temporal_arg(value, (DATETIME, DATE, TIME)).tz
    if tz is None:
        raise ExprError(f"{value.nt} has no timezone")
    return Value(DT_DURATION, (0, tz * 60), XSD_DT_DURATION)


def fn_tz(value: Value) -> Value:
    tz = _temporal_arg(value, (DATETIME, DATE, TIME)).tz
    return EMPTY_STRING if tz is None else string(temporal.format_tz(tz))


# --------------------------------------------------------------------------- the table

BUILTINS: Final[dict[str, tuple[int, int, StrictFunction]]] = {
    # name: (minimum arity, maximum arity, function)
    "STR": (1, 1, fn_str),
    "LANG": (1, 1, fn_lang),
    "DATATYPE": (1, 1, fn_datatype),
    "IRI": (1, 1, fn_iri),
    "URI": (1, 1, fn_iri),
    "STRDT": (2, 2, fn_strdt),
    "STRLANG": (2, 2, fn_strlang),
    "ISIRI": (1, 1, fn_is_iri),
    "ISURI": (1, 1, fn_is_iri),
    "ISBLANK": (1, 1, fn_is_blank),
    "ISLITERAL": (1, 1, fn_is_literal),
    "ISNUMERIC": (1, 1, fn_is_numeric),
    "SAMETERM": (2, 2, fn_same_term),
    "STRLEN": (1, 1, fn_strlen),
    "SUBSTR": (2, 3, fn_substr),
    "UCASE": (1, 1, fn_ucase),
    "LCASE": (1, 1, fn_lcase),
    "STRSTARTS": (2, 2, fn_strstarts),
    "STRENDS": (2, 2, fn_strends),
    "CONTAINS": (2, 2, fn_contains),
    "STRBEFORE": (2, 2, fn_strbefore),
    "STRAFTER": (2, 2, fn_strafter),
    "ENCODE_FOR_URI": (1, 1, fn_encode_for_uri),
    "CONCAT": (0, 1 << 30, fn_concat),
    "LANGMATCHES": (2, 2, fn_lang_matches),
    "REGEX": (2, 3, fn_regex),
    "REPLACE": (3, 4, fn_replace),
    "ABS": (1, 1, fn_abs),
    "ROUND": (1, 1, fn_round),
    "CEIL": (1, 1, fn_ceil),
    "FLOOR": (1, 1, fn_floor),
    "YEAR": (1, 1, _field(0, (DATETIME, DATE))),
    "MONTH": (1, 1, _field(1, (DATETIME, DATE))),
    "DAY": (1, 1, _field(2, (DATETIME, DATE))),
    "HOURS": (1, 1, _field(3, (DATETIME, TIME))),
    "MINUTES": (1, 1, _field(4, (DATETIME, TIME))),
    "SECONDS": (1, 1, _field(5, (DATETIME, TIME))),
    "TIMEZONE": (1, 1, fn_timezone),
    "TZ": (1, 1, fn_tz),
    "MD5": (1, 1, _hash("md5")),
    "SHA1": (1, 1, _hash("sha1")),
    "SHA256": (1, 1, _hash("sha256")),
    "SHA384": (1, 1, _hash("sha384")),
    "SHA512": (1, 1, _hash("sha512")),
}
