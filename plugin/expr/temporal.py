"""xsd:dateTime, xsd:date, xsd:time and the xsd:duration family.

A date/time value is a point on the XSD time line
(https://www.w3.org/TR/xmlschema11-2/#vp-dt-timeOnTimeline): seconds since
1970-01-01T00:00:00, normalised to UTC when the value has a timezone and
taken as local time when it has none, plus the timezone offset in minutes.
xsd:date is its midnight, xsd:time sits on the reference day 1972-12-31
(as XPath and Oxigraph do). The proleptic Gregorian calendar has a year 0
(XSD 1.1), and years are unbounded.

A duration is (months, seconds); yearMonthDuration and dayTimeDuration are
the durations with one of the two parts zero.

Order between a value with and one without timezone follows XSD 1.1's
partial order (§3.3.7.3): determinate only when the two differ by more than
14 hours, which is what Oxigraph implements; `=` is then false and `<`/`>`
an error. Durations use the XSD partial order with four reference dateTimes.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Final, Union

from rsep.plugin.expr.decimals import EXACT, floor_int, format_decimal

Seconds = Union[int, Decimal]
Duration = tuple[int, Seconds]

DATETIME_INDEX: Final = 0
DATE_INDEX: Final = 1
TIME_INDEX: Final = 2

_FOURTEEN_HOURS: Final = 14 * 3600


class Temporal:
    """A dateTime/date/time value: `ts` seconds on the time line, `tz` minutes or None."""

    __slots__ = ("ts", "tz")

    def __init__(self, ts: Seconds, tz: int | None) -> None:
        self.ts = ts
        self.tz = tz

    def __repr__(self) -> str:
        return f"Temporal({self.ts!r}, {self.tz!r})"


# --------------------------------------------------------------------------- calendar


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """The (year, month, day) of a day count since 1970-01-01."""
    days += 719468
    era = days // 146097
    doe = days - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


_REFERENCE_TIME_DAY: Final = days_from_civil(1972, 12, 31)


def _add(a: Seconds, b: Seconds) -> Seconds:
    if type(a) is int and type(b) is int:
        return a + b
    return EXACT.add(a, b)


def _sub(a: Seconds, b: Seconds) -> Seconds:
    if type(a) is int and type(b) is int:
        return a - b
    return EXACT.subtract(a, b)


def _abs(seconds: Seconds) -> Seconds:
    return abs(seconds) if isinstance(seconds, int) else EXACT.abs(seconds)


def _split(seconds: Seconds) -> tuple[int, int, int, int, Seconds]:
    """(days, hour, minute, whole seconds, fractional part) of a local time-line value."""
    if isinstance(seconds, int):
        whole = seconds
        fraction: Seconds = 0
    else:
        whole = floor_int(seconds)
        fraction = EXACT.subtract(seconds, whole)
    days, rest = divmod(whole, 86400)
    hour, rest = divmod(rest, 3600)
    minute, second = divmod(rest, 60)
    return days, hour, minute, second, fraction


def local(value: Temporal) -> Seconds:
    """The value's local time-line position (its own timezone applied)."""
    return value.ts if value.tz is None else _add(value.ts, value.tz * 60)


def fields(value: Temporal) -> tuple[int, int, int, int, int, Seconds]:
    """Local (year, month, day, hour, minute, second) of a value."""
    days, hour, minute, second, fraction = _split(local(value))
    year, month, day = civil_from_days(days)
    return year, month, day, hour, minute, _add(second, fraction)


# --------------------------------------------------------------------------- parsing

_YEAR = r"(-?)([0-9]{4,})"
_TIME = r"([0-9]{2}):([0-9]{2}):([0-9]{2}(?:\.[0-9]+)?)"
TZ = r"(Z|[+-][0-9]{2}:[0-9]{2})?"
_LEXICAL: Final = (
    re.compile(rf"{_YEAR}-([0-9]{{2}})-([0-9]{{2}})T{_TIME}{TZ}"),
    re.compile(rf"{_YEAR}-([0-9]{{2}})-([0-9]{{2}}){TZ}"),
    re.compile(rf"{_TIME}{TZ}"),
)


def _parse_tz(text: str | None) -> int | bool | None:
    """Offset minutes, None when absent, False when invalid."""
    if text is None:
        return None
    if text == "Z":
        return 0
    hours = int(text[1:3])
    minutes = int(text[4:6])
    if minutes > 59 or hours > 14 or (hours == 14 and minutes):
        return False
    offset = hours * 60 + minutes
    return -offset if text[0] == "-" else offset


def _parse_year(sign: str, digits: str) -> int | None:
    if len(digits) > 4 and digits[0] == "0":
        return None
    return -int(digits) if sign else int(digits)


def _parse_time(hour_text: str, minute_text: str, second_text: str) -> Seconds | None:
    """Seconds since local midnight; 24:00:00 is the next midnight."""
    hour = int(hour_text)
    minute = int(minute_text)
    second: Seconds = Decimal(second_text) if "." in second_text else int(second_text)
    if minute > 59 or second >= 60 or hour > 24 or (hour == 24 and (minute or second)):
        return None
    return _add(hour * 3600 + minute * 60, second)


def parse_temporal(index: int, text: str) -> Temporal | None:
    """Parse the lexical form of a dateTime (0), date (1) or time (2); None if ill-formed."""
    match = _LEXICAL[index].fullmatch(text)
    if match is None:
        return None
    groups = match.groups()
    tz = _parse_tz(groups[-1])
    if tz is False:
        return None
    assert tz is not True
    if index == TIME_INDEX:
        seconds = _parse_time(groups[0], groups[1], groups[2])
        if seconds is None:
            return None
        # 24:00:00 is 00:00:00 of the same (reference) day for xsd:time
        if seconds == 86400:
            seconds = 0
        base: Seconds = _REFERENCE_TIME_DAY * 86400 + seconds
    else:
        year = _parse_year(groups[0], groups[1])
        month = int(groups[2])
        day = int(groups[3])
        if year is None or not 1 <= month <= 12 or not 1 <= day <= days_in_month(year, month):
            return None
        base = days_from_civil(year, month, day) * 86400
        if index == DATETIME_INDEX:
            seconds = _parse_time(groups[4], groups[5], groups[6])
            if seconds is None:
                return None
            base = _add(base, seconds)
    return Temporal(base if tz is None else _sub(base, tz * 60), tz)


# --------------------------------------------------------------------------- formatting


def format_tz(tz: int) -> str:
    if tz == 0:
        return "Z"
    sign = "-" if tz < 0 else "+"
    hours, minutes = divmod(abs(tz), 60)
    return f"{sign}{hours:02d}:{minutes:02d}"


def _format_seconds(second: Seconds) -> str:
    text = format_decimal(second)
    return "0" + text if second < 10 else text


def format_temporal(index: int, value: Temporal) -> str:
    """Canonical form as Oxigraph prints it (fractional seconds without trailing zeros)."""
    year, month, day, hour, minute, second = fields(value)
    parts = []
    if index != TIME_INDEX:
        parts.append(f"{'-' if year < 0 else ''}{abs(year):04d}-{month:02d}-{day:02d}")
        if index == DATETIME_INDEX:
            parts.append("T")
    if index != DATE_INDEX:
        parts.append(f"{hour:02d}:{minute:02d}:{_format_seconds(second)}")
    if value.tz is not None:
        parts.append(format_tz(value.tz))
    return "".join(parts)


# --------------------------------------------------------------------------- comparison and arithmetic


def _sign(a: Seconds, b: Seconds) -> int:
    return -1 if a < b else (1 if a > b else 0)


def compare(a: Temporal, b: Temporal) -> int | None:
    """-1/0/1, or None when the XSD partial order leaves them incomparable."""
    if (a.tz is None) == (b.tz is None):
        return _sign(a.ts, b.ts)
    if b.tz is None:
        plus = _sign(a.ts, _add(b.ts, _FOURTEEN_HOURS))
        minus = _sign(a.ts, _sub(b.ts, _FOURTEEN_HOURS))
    else:
        plus = _sign(_add(a.ts, _FOURTEEN_HOURS), b.ts)
        minus = _sign(_sub(a.ts, _FOURTEEN_HOURS), b.ts)
    return plus if plus == minus else None


def equal(a: Temporal, b: Temporal) -> bool:
    """op:dateTime-equal as Oxigraph implements it: false across timezone presence."""
    return (a.tz is None) == (b.tz is None) and a.ts == b.ts


def subtract(a: Temporal, b: Temporal) -> Seconds | None:
    """op:subtract-dateTimes (and -dates, -times): seconds, None across timezone presence."""
    if (a.tz is None) != (b.tz is None):
        return None
    return _sub(a.ts, b.ts)


def _normalize_month(year: int, month: int) -> tuple[int, int]:
    shift, month0 = divmod(month - 1, 12)
    return year + shift, month0 + 1


def add_duration(index: int, value: Temporal, months: int, seconds: Seconds) -> Temporal:
    """dateTimePlusDuration (XSD 1.1 Appendix E.3.3): months first, with the day
    clamped to the month's length, then seconds. A date keeps its date part
    (op:add-dayTimeDuration-to-date), a time its time of day."""
    if months:
        year, month, day, hour, minute, second = fields(value)
        year, month = _normalize_month(year, month + months)
        day = min(day, days_in_month(year, month))
        position = _add(days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60, second)
    else:
        position = local(value)
    position = _add(position, seconds)
    if index == DATE_INDEX:
        days = _split(position)[0]
        position = days * 86400
    elif index == TIME_INDEX:
        days, hour, minute, second, fraction = _split(position)
        position = _add(_REFERENCE_TIME_DAY * 86400 + hour * 3600 + minute * 60 + second, fraction)
    tz = value.tz
    return Temporal(position if tz is None else _sub(position, tz * 60), tz)


def convert(value: Temporal, source: int, target: int) -> Temporal:
    """XPath casts between dateTime, date and time (§19.1.5 casting to date/time types)."""
    if source == target:
        return value
    year, month, day, hour, minute, second = fields(value)
    if target == DATETIME_INDEX:  # from a date: its midnight
        position: Seconds = days_from_civil(year, month, day) * 86400
    elif target == DATE_INDEX:
        position = days_from_civil(year, month, day) * 86400
    else:
        position = _add(_REFERENCE_TIME_DAY * 86400 + hour * 3600 + minute * 60, second)
    tz = value.tz
    return Temporal(position if tz is None else _sub(position, tz * 60), tz)


# --------------------------------------------------------------------------- durations

_DURATION: Final = re.compile(
    r"(-)?P(?:([0-9]+)Y)?(?:([0-9]+)M)?(?:([0-9]+)D)?"
    r"(?:(T)(?:([0-9]+)H)?(?:([0-9]+)M)?(?:([0-9]+(?:\.[0-9]*)?|\.[0-9]+)S)?)?"
)


def parse_duration(text: str, restriction: str | None) -> Duration | None:
    """Parse an xsd:duration ("ym"/"dt" restrict to yearMonth/dayTime durations)."""
    match = _DURATION.fullmatch(text)
    if match is None:
        return None
    sign, years, months, days, t, hours, minutes, seconds = match.groups()
    if t is not None and hours is None and minutes is None and seconds is None:
        return None
    if years is None and months is None and days is None and t is None:
        return None
    if restriction == "ym" and (days is not None or t is not None):
        return None
    if restriction == "dt" and (years is not None or months is not None):
        return None
    total_months = int(years or 0) * 12 + int(months or 0)
    total: Seconds = int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes or 0) * 60
    if seconds is not None:
        total = _add(total, Decimal(seconds) if "." in seconds else int(seconds))
    if sign:
        return -total_months, EXACT.minus(total) if isinstance(total, Decimal) else -total
    return total_months, total


def format_duration(months: int, seconds: Seconds, year_month: bool = False) -> str:
    """Canonical form as Oxigraph prints it ("P1DT12H", "PT0S", "P0M", "-P1Y2M")."""
    if months == 0 and seconds == 0:
        return "P0M" if year_month else "PT0S"
    parts = ["-P" if months < 0 or seconds < 0 else "P"]
    years, rest_months = divmod(abs(months), 12)
    if years:
        parts.append(f"{years}Y")
    if rest_months:
        parts.append(f"{rest_months}M")
    magnitude = _abs(seconds)
    whole = int(magnitude)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    remainder = _sub(magnitude, days * 86400 + hours * 3600 + minutes * 60)
    if days:
        parts.append(f"{days}D")
    if hours or minutes or remainder:
        parts.append("T")
        if hours:
            parts.append(f"{hours}H")
        if minutes:
            parts.append(f"{minutes}M")
        if remainder:
            parts.append(f"{format_decimal(remainder)}S")
    return "".join(parts)


def valid_duration(months: int, seconds: Seconds) -> bool:
    """A duration's two parts must not have opposite signs (XSD 1.1 §3.3.6.1)."""
    return not ((months < 0 < seconds) or (seconds < 0 < months))


_DURATION_REFERENCES: Final = tuple(
    Temporal(days_from_civil(*date) * 86400, 0)
    for date in ((1696, 9, 1), (1697, 2, 1), (1903, 3, 1), (1903, 7, 1))
)


def compare_durations(a: Duration, b: Duration) -> int | None:
    """XSD 1.1 §3.3.6.2 duration order: compare the results of adding both
    to four reference dateTimes; None when they disagree (incomparable)."""
    if a[0] == b[0]:
        return _sign(a[1], b[1])
    if a[1] == b[1]:
        return _sign(a[0], b[0])
    results = {
        _sign(
            add_duration(DATETIME_INDEX, reference, a[0], a[1]).ts,
            add_duration(DATETIME_INDEX, reference, b[0], b[1]).ts,
        )
        for reference in _DURATION_REFERENCES
    }
    return results.pop() if len(results) == 1 else None
