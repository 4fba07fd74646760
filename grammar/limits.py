"""Bounds on how deep a query or update nests, checked before any parser sees it.

Oxigraph parses and evaluates recursively: 3,000 nested `{`, 10,000 nested parentheses, or a
chain of 10,000 `+`, `UNION`, `OPTIONAL`, `/` or `.` overflows its native stack and kills the
process (no exception reaches Python). So every text rsep reads (`parse_with`, dialect
detection), and therefore every text that reaches Oxigraph, is first scanned here: one regular
expression pass that skips strings, IRIs and comments and measures

- the nesting depth: open `{`, `(` and `[`, and runs of prefix `!`, each a level (`MAX_DEPTH`);
- the chain length: operators and separators (`||`, `&&`, comparisons, `+ - * /`, path `/ | ^`,
  `.`, `;`, `,`, `UNION`, `OPTIONAL`, `MINUS`) and, inside parentheses, terms side by side (a
  collection's items) within one bracket (`MAX_CHAIN`); the list of `IN (...)` is flat everywhere and
  exempt, as is a `VALUES` data block of terms (read flat by every parser, rsep's included: it is
  one token, sparql11.lark D11), which is skipped in one match as two levels of nesting;
- the weight: a bracket's chain length plus the heaviest bracket inside it, which bounds the
  depth of the expression and pattern trees the text makes (`MAX_WEIGHT`).

A text past a bound is a `QueryTooComplex` (`rsep.grammar.parser`; a static `SparqlSyntaxError`:
400, never passed on) at the bracket or operator where the bound was passed. The limits sit far
above what people write (the W3C test suites nest under 20) and far below what overflows an
8 MiB stack.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

MAX_DEPTH = 128
MAX_CHAIN = 1_000
MAX_WEIGHT = 2_000

_STRING = (
    r'"""(?:[^"\\]|\\.|"(?!""))*"""'
    r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"(?:[^"\\\n\r]|\\.)*"'
    r"|'(?:[^'\\\n\r]|\\.)*'"
)
_IRI = r'<[^<>"{}|^`\\\x00-\x20]*>'
_WORD = r"[^\s(){}\#\"'<]++"
_TERM = rf"(?:(?:{_STRING})(?:\^\^(?:{_IRI}|{_WORD}))?|{_IRI}|{_WORD})"
_SPACE = r"(?:\s|\#[^\n\r]*)*+"
_VAR = r"[?$][^\s(){}\#]++"
_VALUES_BLOCK = (
    rf"(?<![\w@:])(?i:VALUES){_SPACE}(?:{_VAR}|\({_SPACE}(?:{_VAR}{_SPACE})*+\))"
    rf"{_SPACE}\{{(?:{_SPACE}(?:\({_SPACE}(?:{_TERM}{_SPACE})*+\)|{_TERM}))*+{_SPACE}\}}"
)
"""`VALUES` and its data block of terms (rows of terms, or terms), whatever the terms are; possessive,
so that a block that does not match fails in one pass (`<a\\u0041>` is no IRI here)."""

_TOKENS = re.compile(
    r"(?P<block>"
    + _VALUES_BLOCK
    + r""")
    | (?P<skip>
          \"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"      # long strings
        | '''(?:[^'\\]|\\.|'(?!''))*'''
        | "(?:[^"\\\n\r]|\\.)*"                   # strings
        | '(?:[^'\\\n\r]|\\.)*'
        | <[^<>"{}|^`\\\x00-\x20]*>               # IRIs
        | \#[^\n\r]*                               # comments
        | [?$][\w\u00b7\u0300-\u036f\u203f-\u2040]*  # variables
        | [A-Za-z_\u00c0-\U000effff][\w.:\-%\\\u00b7\u00c0-\U000effff]*  # names, keywords
        | :[\w.:\-%\\\u00b7\u00c0-\U000effff]*     # names in the default prefix
        | \d+(?:\.\d*)?(?:[eE][+-]?\d+)?           # numbers
      )
    | (?P<open>[{(\[])
    | (?P<close>[})\]])
    | (?P<bang>!(?!=))
    | (?P<op>\|\||&&|!=|<=|>=|[=<>+\-*/|^.;,])
    """,
    re.VERBOSE,
)
_CHAINING_WORDS = frozenset({"UNION", "OPTIONAL", "MINUS"})


@dataclass(slots=True)
class _Bracket:
    kind: str
    offset: int
    listing: bool = False
    """An `IN (...)` list: flat in every engine, so its terms and commas make no chain."""
    chain: int = 0
    heaviest: int = 0
    """The weight of the heaviest bracket closed inside this one."""


@functools.lru_cache(maxsize=16)
def first_violation(text: str) -> tuple[int, str] | None:
    """Where the text first passes a bound, and which; cached, since a text is read by several
    grammars (SPARQL 1.1 and each dialect's detection)."""
    stack = [_Bracket("", 0)]
    bangs = 0
    after_in = after_term = False
    position = 0
    while (match := _TOKENS.search(text, position)) is not None:
        position, kind, top = match.end(), match.lastgroup, stack[-1]
        if kind == "block":
            if len(stack) + 2 <= MAX_DEPTH:  # its braces and rows: as deep as the block goes
                bangs, after_in, after_term = 0, False, True
                top.heaviest = max(top.heaviest, 2)
                continue
            position, kind = match.start() + len("VALUES"), "skip"  # read the block token by token
        if kind == "skip":
            word = text[match.start() : position].upper()
            if word.startswith("#"):
                continue
            # terms side by side in parentheses: a collection's items, a list of variables
            if (top.kind == "(" and not top.listing and after_term) or word in _CHAINING_WORDS:
                top.chain += 1
            bangs, after_in, after_term = 0, word == "IN", word not in _CHAINING_WORDS
        elif kind == "open":
            if len(stack) + bangs > MAX_DEPTH:
                return match.start(), f"nested more than {MAX_DEPTH} levels deep"
            stack.append(_Bracket(match.group(), match.start(), listing=after_in))
            after_in = after_term = False
            continue
        elif kind == "close":
            bangs, after_in, after_term = 0, False, True
            if len(stack) > 1:
                closed = stack.pop()
                weight = closed.chain + closed.heaviest + 1
                if weight > MAX_WEIGHT:
                    return closed.offset, (
                        f"too complex: the expressions and patterns inside this bracket nest "
                        f"{weight} operations deep (at most {MAX_WEIGHT})"
                    )
                stack[-1].heaviest = max(stack[-1].heaviest, weight)
            continue
        elif kind == "bang":
            bangs += 1
            after_in = after_term = False
            if len(stack) + bangs > MAX_DEPTH:
                return match.start(), f"nested more than {MAX_DEPTH} levels deep"
            continue
        else:
            bangs, after_in, after_term = 0, False, False
            if not top.listing:
                top.chain += 1
        if top.chain > MAX_CHAIN:
            return match.start(), f"more than {MAX_CHAIN} operators, terms or patterns in one bracket"
    root = stack[0]
    if root.chain + root.heaviest > MAX_WEIGHT:
        weight = root.chain + root.heaviest
        return 0, f"too complex: the text nests {weight} operations deep (at most {MAX_WEIGHT})"
    return None
