"""RDF terms as N-Triples strings, the runtime's currency.

Solution mappings in the NFA, in Spark rows and in the CLI output hold RDF
terms as their canonical N-Triples text (`<iri>`, `"lex"^^<dt>`, `"lex"@lang`,
`_:label`). Equal terms have equal strings (the form Oxigraph prints with
`str(term)`), so compatibility checks are string comparisons, mappings hash
and pickle cheaply, and no RDF library is needed on Spark executors.
"""

from __future__ import annotations

import re
from functools import lru_cache

from rsep.plugin.algebra.sparql import (
    IRI,
    RDF_LANGSTRING,
    XSD_STRING,
    BNode,
    Literal,
    Term,
)

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\x7f]')


def _escape_char(match: re.Match[str]) -> str:
    char = match.group(0)
    return _ESCAPES.get(char) or f"\\u{ord(char):04X}"


def escape_string(text: str) -> str:
    """Escape a literal's lexical form the way Oxigraph's N-Triples writer does."""
    return _NEEDS_ESCAPE.sub(_escape_char, text)


def needs_escape(text: str) -> bool:
    """Would `escape_string` change `text`?"""
    return _NEEDS_ESCAPE.search(text) is not None


def iri_nt(value: str) -> str:
    return f"<{value}>"


def literal_nt(lexical: str, datatype: str = XSD_STRING, language: str | None = None) -> str:
    body = f'"{escape_string(lexical)}"'
    if language is not None:
        return f"{body}@{language.lower()}"
    if datatype == XSD_STRING:
        return body
    return f"{body}^^<{datatype}>"


def term_to_nt(term: Term) -> str:
    """The N-Triples text of a syntax-tree term."""
    if isinstance(term, IRI):
        return iri_nt(term.value)
    if isinstance(term, Literal):
        return literal_nt(term.lexical, term.datatype, term.language)
    if isinstance(term, BNode):
        return f"_:{term.label}"
    raise TypeError(f"not an RDF term: {term!r}")


_LITERAL = re.compile(r'^"((?:[^"\\]|\\.)*)"(?:@([A-Za-z0-9-]+)|\^\^<([^>]*)>)?$', re.S)
_UNESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)", re.S)
_SIMPLE_UNESCAPES = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}


def _unescape_char(match: re.Match[str]) -> str:
    code = match.group(1)
    if code[0] in "uU" and len(code) > 1:
        return chr(int(code[1:], 16))
    return _SIMPLE_UNESCAPES.get(code, code)


@lru_cache(maxsize=65536)
def nt_to_term(text: str) -> Term:
    """Parse one N-Triples term (as produced by `term_to_nt` or Oxigraph)."""
    if text.startswith("<") and text.endswith(">"):
        return IRI(text[1:-1])
    if text.startswith("_:"):
        return BNode(text[2:])
    match = _LITERAL.match(text)
    if match is None:
        raise ValueError(f"not an N-Triples term: {text!r}")
    lexical = _UNESCAPE.sub(_unescape_char, match.group(1))
    if match.group(2) is not None:
        return Literal(lexical, RDF_LANGSTRING, match.group(2).lower())
    return Literal(lexical, match.group(3) or XSD_STRING)
