"""XPath regular expressions (F&O 3.1 §5.6) translated to Python `re`.

SPARQL's REGEX and REPLACE use XPath's dialect of XML Schema regular
expressions, which differs from Python's in ways that change results:
`.` excludes CR as well as LF, `$` matches only at the very end (Python's
also before a final newline), `\\s` is only [ \\t\\n\\r], `\\w` is "not
punctuation, separator or other" (so it excludes `_` and includes `$`),
`\\i`/`\\c` are XML name characters, `\\p{..}` are Unicode categories, classes
may subtract (`[a-z-[aeiou]]`), and syntax Python accepts (`\\b`, `(?i)`,
`{,3}`, unescaped `{`) is an error. The translator parses the XPath syntax
and emits an equivalent Python pattern, so invalid patterns are errors too.

Not supported: Unicode block escapes (`\\p{IsBasicLatin}`): an error.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache
from typing import Final, TypeAlias, Union

from rsep.plugin.expr.errors import ExprError

_SINGLE_ESCAPES: Final = {"n": "\n", "r": "\r", "t": "\t"} | {c: c for c in "\\|.-^?*+{}()[]$"}
_XML_WHITESPACE: Final = " \t\n\r"
_DIGITS: Final = frozenset("0123456789")
_ANY: Final = r"[\s\S]"

# XML 1.0 (5th edition) NameStartChar / NameChar, for \i and \c.
_NAME_START: Final = (
    ":A-Z_a-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02ff\u0370-\u037d\u037f-\u1fff\u200c-\u200d"
    "\u2070-\u218f\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf\ufdf0-\ufffd\U00010000-\U000effff"
)
_NAME_CHAR: Final = _NAME_START + r"\-.0-9\u00b7\u0300-\u036f\u203f-\u2040"


@lru_cache(maxsize=1)
def _category_ranges() -> dict[str, list[tuple[int, int]]]:
    """Code point ranges of each two-letter Unicode general category."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    start = 0
    current = unicodedata.category(chr(0))
    for code in range(1, 0x110000):
        category = unicodedata.category(chr(code))
        if category != current:
            ranges.setdefault(current, []).append((start, code - 1))
            start = code
            current = category
    ranges.setdefault(current, []).append((start, 0x10FFFF))
    return ranges


def _class_char(char: str) -> str:
    """A character escaped for use inside a Python [...] class."""
    return "\\" + char if char.isascii() and not char.isalnum() else char


@lru_cache(maxsize=64)
def _category_class(name: str) -> str:
    """The inside of a [...] class for \\p{name} (a category or a one-letter group)."""
    table = _category_ranges()
    if len(name) == 1:
        selected = [ranges for category, ranges in table.items() if category[0] == name]
        if not selected:
            raise ExprError(f"unknown Unicode category \\p{{{name}}}")
        merged = sorted(item for ranges in selected for item in ranges)
    elif name in table:
        merged = table[name]
    elif name.startswith("Is"):
        raise ExprError(f"Unicode block escapes are not supported: \\p{{{name}}}")
    else:
        raise ExprError(f"unknown Unicode category \\p{{{name}}}")
    parts = []
    for low, high in merged:
        start = _class_char(chr(low))
        parts.append(start if low == high else f"{start}-{_class_char(chr(high))}")
    return "".join(parts)


def _word_complement() -> str:
    """\\w is every character except punctuation (P), separators (Z) and others (C)."""
    return _category_class("P") + _category_class("Z") + _category_class("C")


def _multi_escape(letter: str) -> tuple[bool, str]:
    """(positive, class inside) of a multi-character escape letter."""
    if letter in "sS":
        return letter == "s", r" \t\n\r"
    if letter in "dD":  # Python's \d on str is exactly the Nd category
        return letter == "d", r"\d"
    if letter in "wW":
        return letter == "W", _word_complement()
    if letter in "iI":
        return letter == "i", _NAME_START
    return letter == "c", _NAME_CHAR


def _strip_whitespace(pattern: str) -> str:
    """The x flag: drop whitespace outside character classes (F&O 3.1 §5.6.2)."""
    out = []
    depth = 0
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            out.append(pattern[index : index + 2])
            index += 2
            continue
        if char == "[":
            depth += 1
        elif char == "]" and depth:
            depth -= 1
        if depth or char not in _XML_WHITESPACE:
            out.append(char)
        index += 1
    return "".join(out)


class _Translator:
    def __init__(self, pattern: str, dot_all: bool, multi_line: bool) -> None:
        self.pattern = pattern
        self.index = 0
        self.dot_all = dot_all
        self.multi_line = multi_line
        self.opened = 0
        self.closed: set[int] = set()

    def error(self, message: str) -> ExprError:
        return ExprError(f"invalid regular expression {self.pattern!r}: {message}")

    def peek(self, offset: int = 0) -> str:
        position = self.index + offset
        return self.pattern[position] if position < len(self.pattern) else ""

    def take(self) -> str:
        char = self.peek()
        if not char:
            raise self.error("unexpected end")
        self.index += 1
        return char

    def translate(self) -> str:
        result = self.regexp()
        if self.index != len(self.pattern):
            raise self.error(f"unexpected {self.peek()!r}")
        return result

    def regexp(self) -> str:
        branches = [self.branch()]
        while self.peek() == "|":
            self.index += 1
            branches.append(self.branch())
        return "|".join(branches)

    def branch(self) -> str:
        pieces = []
        while self.peek() and self.peek() not in "|)":
            pieces.append(self.piece())
        return "".join(pieces)

    def piece(self) -> str:
        atom = self.atom()
        quantifier = self.quantifier()
        if not quantifier:
            return atom
        return f"(?:{atom}){quantifier}"

    def quantifier(self) -> str:
        char = self.peek()
        if char in ("?", "*", "+") and char:
            self.index += 1
            result = char
        elif char == "{":
            self.index += 1
            low = self.digits()
            if low is None:
                raise self.error("a quantifier needs a minimum")
            result = "{" + str(low)
            if self.peek() == ",":
                self.index += 1
                high = self.digits()
                if high is not None and high < low:
                    raise self.error("quantifier maximum below minimum")
                result += "," + ("" if high is None else str(high))
            if self.take() != "}":
                raise self.error("unterminated quantifier")
            result += "}"
        else:
            return ""
        if self.peek() == "?":
            self.index += 1
            result += "?"
        return result

    def digits(self) -> int | None:
        start = self.index
        while self.peek() in _DIGITS:
            self.index += 1
        return int(self.pattern[start : self.index]) if self.index > start else None

    def atom(self) -> str:
        char = self.take()
        if char == "(":
            if self.peek() == "?":
                if self.peek(1) != ":":
                    raise self.error("only (?: groups are allowed")
                self.index += 2
                inner = self.regexp()
                if self.take() != ")":
                    raise self.error("unbalanced parenthesis")
                return f"(?:{inner})"
            self.opened += 1
            number = self.opened
            inner = self.regexp()
            if self.take() != ")":
                raise self.error("unbalanced parenthesis")
            self.closed.add(number)
            return f"({inner})"
        if char == "[":
            return self.char_class()
        if char == ".":
            return _ANY if self.dot_all else r"[^\n\r]"
        if char == "^":
            return "^" if self.multi_line else r"\A"
        if char == "$":
            return "$" if self.multi_line else r"\Z"
        if char == "\\":
            return self.escape()
        if char in "?*+{}]":
            raise self.error(f"unexpected {char!r}")
        return re.escape(char)

    def escape(self) -> str:
        letter = self.take()
        if letter in _SINGLE_ESCAPES:
            return re.escape(_SINGLE_ESCAPES[letter])
        if letter in "sSdDwWiIcC":
            positive, inside = _multi_escape(letter)
            return f"[{inside}]" if positive else f"[^{inside}]"
        if letter in "pP":
            inside = _category_class(self.property_name())
            return f"[{inside}]" if letter == "p" else f"[^{inside}]"
        if letter in _DIGITS and letter != "0":
            number = int(letter)
            # the longest digit run naming a group closed before this point (F&O §5.6.1)
            while self.peek() in _DIGITS and int(f"{number}{self.peek()}") in self.closed:
                number = int(f"{number}{self.take()}")
            if number not in self.closed:
                raise self.error(f"back-reference to a group that is not closed: \\{number}")
            return f"(?:\\{number})"
        raise self.error(f"invalid escape \\{letter}")

    def property_name(self) -> str:
        if self.take() != "{":
            raise self.error("\\p needs {name}")
        end = self.pattern.find("}", self.index)
        if end < 0:
            raise self.error("unterminated \\p{")
        name = self.pattern[self.index : end]
        self.index = end + 1
        return name

    def class_char(self) -> str | None:
        """One character of a class (possibly escaped); None if the next item is a multi-char escape."""
        char = self.peek()
        if char == "\\":
            letter = self.peek(1)
            if letter in _SINGLE_ESCAPES:
                self.index += 2
                return _SINGLE_ESCAPES[letter]
            return None
        if char in ("[", "]", ""):
            return None
        self.index += 1
        return char

    def char_class(self) -> str:
        negated = self.peek() == "^"
        if negated:
            self.index += 1
        positive: list[str] = []
        complemented: list[str] = []
        subtraction = None
        while True:
            char = self.peek()
            if not char:
                raise self.error("unterminated character class")
            if char == "]":
                self.index += 1
                break
            if char == "-":
                if self.peek(1) == "[":
                    self.index += 2
                    subtraction = self.char_class()
                    if self.take() != "]":
                        raise self.error("a class subtraction must end the class")
                    break
                if (positive or complemented) and self.peek(1) != "]":
                    raise self.error("'-' must be escaped inside a class")
                self.index += 1
                positive.append(r"\-")
                continue
            if char == "[":
                raise self.error("'[' must be escaped inside a class")
            if char == "\\" and self.peek(1) not in _SINGLE_ESCAPES:
                self.index += 1
                letter = self.take()
                if letter in "pP":
                    inside = _category_class(self.property_name())
                    is_positive = letter == "p"
                elif letter in "sSdDwWiIcC":
                    is_positive, inside = _multi_escape(letter)
                else:
                    raise self.error(f"invalid escape \\{letter} in a class")
                (positive if is_positive else complemented).append(inside)
                continue
            low = self.class_char()
            assert low is not None
            if self.peek() == "-" and self.peek(1) not in ("]", "["):
                self.index += 1
                high = self.class_char()
                if high is None:
                    raise self.error("invalid character range")
                if ord(high) < ord(low):
                    raise self.error(f"invalid character range {low}-{high}")
                positive.append(f"{_class_char(low)}-{_class_char(high)}")
            else:
                positive.append(_class_char(low))
        if not positive and not complemented:
            raise self.error("empty character class")
        if not complemented and subtraction is None:
            return ("[^" if negated else "[") + "".join(positive) + "]"
        alternatives = [f"[{''.join(positive)}]"] if positive else []
        alternatives.extend(f"[^{inside}]" for inside in complemented)
        result = "(?:" + "|".join(alternatives) + ")"
        if negated:
            result = f"(?:(?!{result}){_ANY})"
        if subtraction is not None:
            result = f"(?:(?!{subtraction}){result})"
        return result


@lru_cache(maxsize=4096)
def compile_regex(pattern: str, flags: str = "") -> re.Pattern[str]:
    """Compile an XPath pattern with XPath flags (s, m, i, x, q); ExprError if invalid."""
    if any(flag not in "smixq" for flag in flags):
        raise ExprError(f"invalid regular expression flags {flags!r}")
    options = re.IGNORECASE if "i" in flags else 0
    if "q" in flags:
        python = re.escape(pattern)
    else:
        if "x" in flags:
            pattern = _strip_whitespace(pattern)
        python = _Translator(pattern, "s" in flags, "m" in flags).translate()
        if "m" in flags:
            options |= re.MULTILINE
    try:
        return re.compile(python, options)
    except (re.error, OverflowError, RecursionError) as error:
        raise ExprError(f"invalid regular expression {pattern!r}: {error}") from None


ReplacementPart: TypeAlias = Union[str, int]


@lru_cache(maxsize=4096)
def _replacement_parts(replacement: str, groups: int) -> tuple[ReplacementPart, ...]:
    """Parse an fn:replace replacement string: `$N` group references, `\\$`
    and `\\\\` escapes; any other `$` or `\\` is an error (err:FORX0004)."""
    parts: list[ReplacementPart] = []
    text: list[str] = []
    index = 0
    while index < len(replacement):
        char = replacement[index]
        if char == "\\":
            following = replacement[index + 1 : index + 2]
            if following not in ("\\", "$"):
                raise ExprError(f"invalid replacement string {replacement!r}")
            text.append(following)
            index += 2
        elif char == "$":
            end = index + 1
            while end < len(replacement) and replacement[end] in "0123456789":
                end += 1
            if end == index + 1:
                raise ExprError(f"invalid replacement string {replacement!r}")
            digits = replacement[index + 1 : end]
            # F&O fn:replace: the longest digit prefix that names a group (or is <= 9)
            while len(digits) > 1 and int(digits) > groups and int(digits) > 9:
                digits = digits[:-1]
            if text:
                parts.append("".join(text))
                text = []
            number = int(digits)
            parts.append(number if number <= groups else "")
            index += 1 + len(digits)
        else:
            text.append(char)
            index += 1
    if text:
        parts.append("".join(text))
    return tuple(parts)


def replacer(regex: re.Pattern[str], replacement: str, flags: str) -> Callable[[re.Match[str]], str]:
    """The function `re.sub` calls for each match of fn:replace."""
    if "q" in flags:
        return lambda match: replacement
    parts = _replacement_parts(replacement, regex.groups)
    if len(parts) == 1 and isinstance(parts[0], str):
        constant = parts[0]
        return lambda match: constant

    def replace(match: re.Match[str]) -> str:
        return "".join(part if isinstance(part, str) else (match.group(part) or "") for part in parts)

    return replace


@lru_cache(maxsize=4096)
def matches_empty(regex: re.Pattern[str]) -> bool:
    """fn:replace rejects a pattern that matches the empty string (err:FORX0003)."""
    return regex.search("") is not None
