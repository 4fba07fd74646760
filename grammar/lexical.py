"""Lexical helpers: terminal names, escapes and IRI resolution (RFC 3986)."""

from __future__ import annotations

import re

from lark import Token


def terminal_name(token: Token) -> str:
    """The terminal's name without the namespace a dialect import adds (`sparql11__VAR1` -> `VAR1`)."""
    return token.type.rsplit("__", 1)[-1]


_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.S)
_ECHARS = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}


def _decode_escape(match: re.Match[str]) -> str:
    code = match.group(1) or match.group(2)
    if code is None:
        return _ECHARS[match.group(3)]
    point = int(code, 16)
    if 0xD800 <= point <= 0xDFFF or point > 0x10FFFF:
        raise ValueError(f"\\u{code} is not a Unicode scalar value")
    return chr(point)


def unescape(text: str) -> str:
    """Decode ECHAR and UCHAR escapes in one pass (so an escaped backslash never starts another escape)."""
    return _ESCAPE.sub(_decode_escape, text) if "\\" in text else text


_LOCAL_ESCAPE = re.compile(r"\\(.)")


def unescape_local_name(local: str) -> str:
    """The local part of a prefixed name with its `\\` escapes removed (PN_LOCAL_ESC)."""
    return _LOCAL_ESCAPE.sub(r"\1", local)


_IRI_SPLIT = re.compile(
    r"^(?:([A-Za-z][A-Za-z0-9+.\-]*):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$", re.S
)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4."""
    output: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if len(output) > 1:
                output.pop()
        elif segment != ".":
            output.append(segment)
    if path.startswith("/") and (not output or output[0] != ""):
        output.insert(0, "")
    if path.split("/")[-1] in (".", ".."):
        output.append("")
    return "/".join(output)


def _merge(base_authority: str | None, base_path: str, path: str) -> str:
    if base_authority is not None and base_path == "":
        return "/" + path
    return base_path[: base_path.rfind("/") + 1] + path


def resolve_iri(base: str | None, reference: str) -> str:
    """Resolve `reference` against `base` (RFC 3986 §5.2.2). urllib's urljoin is not used because it
    leaves references alone for schemes it does not know (`BASE <base:>`, `urn:`, `tag:`)."""
    scheme, authority, path, query, fragment = _IRI_SPLIT.match(reference).groups()  # type: ignore[union-attr]
    if scheme is not None or base is None:
        return reference
    b_scheme, b_authority, b_path, b_query, _ = _IRI_SPLIT.match(base).groups()  # type: ignore[union-attr]
    if authority is not None:
        path = _remove_dot_segments(path)
    elif path == "":
        authority, path = b_authority, b_path
        query = b_query if query is None else query
    else:
        authority = b_authority
        path = _remove_dot_segments(path if path.startswith("/") else _merge(b_authority, b_path, path))
    text = f"{b_scheme}:" if b_scheme is not None else ""
    text += f"//{authority}" if authority is not None else ""
    text += path
    text += f"?{query}" if query is not None else ""
    return text + (f"#{fragment}" if fragment is not None else "")
