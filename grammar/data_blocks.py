"""A VALUES data block the lexer read as one DATA_BLOCK token (sparql11.lark, D11), split again;
the same for an expression list of plain values read as one VALUE_LIST token (D12).

Lark's LALR parser costs tens of microseconds of Python per token, and a VALUES block is the usual
way a query grows to megabytes; its grammar is flat. So the lexer reads a block whose values are
plain tokens as one token (one regular expression), and `Block.pieces` cuts it again with another:
the token matched the grammar's own terminals, so only where each value starts and ends, and which
terminal it is, is left to find. The transformer builds each value with the same rule methods the
parse tree would reach (`iri`, `string`, `rdf_literal`, ...), so values, static checks and error
messages are those of a block read token by token; a value's line and column are counted only
when a rule refuses it (`Block.token`), since counting them for every value costs as much again.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from lark import Token

_PIECES = re.compile(
    r"""
      [\x20\t\r\n]+ | \#[^\r\n]* | [{}]
    | (?P<open>\((?:[\x20\t\r\n]*\))?)
    | (?P<close>\))
    | (?P<var>[?$][^\x20\t\r\n)#(?${]+)
    | (?P<iri><[^>]*>)
    | (?P<string>\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"|'''(?:[^'\\]|\\.|'(?!''))*'''
        |"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
      (?:(?P<lang>@[^\x20\t\r\n)#}]+)|\^\^(?P<datatype><[^>]*>|(?:\\.|[^\x20\t\r\n)#}\\])+))?
    | (?P<number>[+-]?[0-9.][^\x20\t\r\n)#}]*)
    | (?P<word>(?:\\.|[^\x20\t\r\n)#}\\])+)
    """,
    re.VERBOSE,
)
r"""The pieces of a DATA_BLOCK token (D11); a prefixed name may hold `\)` (PN_LOCAL_ESC)."""
_LIST_PIECES = re.compile(
    r"""
      [\x20\t\r\n,]+ | \#[^\r\n]* | [()]
    | (?P<iri><[^>]*>)
    | (?P<string>\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"|'''(?:[^'\\]|\\.|'(?!''))*'''
        |"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
      (?:(?P<lang>@[^\x20\t\r\n),#]+)|\^\^(?P<datatype><[^>]*>|(?:\\.|[^\x20\t\r\n),#\\])+))?
    | (?P<number>[+-]?[0-9.][^\x20\t\r\n),#]*)
    | (?P<word>(?:\\.|[^\x20\t\r\n),#\\])+)
    """,
    re.VERBOSE,
)
r"""The pieces of a VALUE_LIST token (D12): values between `(`, `,` and `)`; a prefixed name may
hold `\,` or `\)` (PN_LOCAL_ESC)."""
_SIGNS = {"+": "_POSITIVE", "-": "_NEGATIVE"}


class Block:
    """A DATA_BLOCK token's text and where it stands, to split it and to place its pieces."""

    def __init__(self, token: Token) -> None:
        self.text = str(token)
        self.start = token.start_pos or 0
        self._line, self._line_start = token.line or 1, 1 - (token.column or 1)
        self._counted = 0

    def pieces(self) -> Iterator[tuple[str, re.Match[str]]]:
        """(kind, match) of its variables, row brackets (`open`: `(` or an empty `()`; `close`) and
        values (`iri`, `string` with its `lang` or `datatype`, `number`, `word`), in order."""
        for match in _PIECES.finditer(self.text):
            kind = match.lastgroup
            if kind is not None:
                yield ("string" if kind in ("lang", "datatype") else kind), match

    def list_values(self) -> Iterator[tuple[str, re.Match[str]]]:
        """(kind, match) of a VALUE_LIST's values (`iri`, `string`, `number`, `word`), in order."""
        for match in _LIST_PIECES.finditer(self.text):
            kind = match.lastgroup
            if kind is not None:
                yield ("string" if kind in ("lang", "datatype") else kind), match

    def position(self, offset: int) -> tuple[int, int]:
        """(line, column) in the text of an offset in the block, offsets asked in increasing order."""
        text, counted = self.text, self._counted
        newlines = text.count("\n", counted, offset)
        if newlines:
            self._line += newlines
            self._line_start = text.rfind("\n", counted, offset) + 1
        self._counted = offset
        return self._line, offset - self._line_start + 1

    def token(self, kind: str, value: str, offset: int | None) -> Token:
        """A lark token of the piece's terminal; placed in the text when `offset` is given."""
        if offset is None:
            return Token(kind, value)
        line, column = self.position(offset)
        return Token(kind, value, self.start + offset, line, column)


def terminal_of(kind: str, text: str) -> str:
    """The grammar's terminal for a piece of a kind of `Block.pieces` other than `string`."""
    if kind == "var":
        return "VAR1" if text[0] == "?" else "VAR2"
    if kind == "iri":
        return "IRIREF"
    if kind == "number":
        base = "DOUBLE" if "e" in text or "E" in text else "DECIMAL" if "." in text else "INTEGER"
        return base + _SIGNS.get(text[0], "")
    if ":" in text:
        return iri_terminal(text)
    return text.upper()  # TRUE, FALSE, UNDEF


def iri_terminal(text: str) -> str:
    if text.startswith("<"):
        return "IRIREF"
    return "PNAME_NS" if text.endswith(":") and text.count(":") == 1 else "PNAME_LN"


def string_terminal(text: str) -> str:
    if text[:3] in ('"""', "'''"):
        return "STRING_LITERAL_LONG2" if text[0] == '"' else "STRING_LITERAL_LONG1"
    return "STRING_LITERAL2" if text[0] == '"' else "STRING_LITERAL1"
