"""How long a literal a payload may carry (`rsep serve --max-literal`), checked as the quads of
an ingest or Graph Store payload are read.

Oxigraph's parser refuses a token over its 16 MiB buffer with a `MemoryError`, which reached
clients as a 500; below that, one literal can still hold most of a body. So a literal longer
than the limit (default 4 MiB, never above the parser's buffer) is bad input, and so is what
the parser itself cannot buffer. One limit per process, like the store.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyoxigraph as ox

from rsep.plugin.errors import InvalidInput

PARSER_BUFFER = 16 * 2**20
"""Oxigraph's parser buffer: no token may be longer."""

_limit = 4 * 2**20


class LiteralTooLong(InvalidInput):
    """A literal (or a token) longer than the process takes."""


def limit_literals(size: int) -> None:
    """Set the process's limit in bytes (at most the parser's buffer)."""
    global _limit
    _limit = min(size, PARSER_BUFFER)


def bounded(quads: Iterable[ox.Quad], *, source: str) -> Iterator[ox.Quad]:
    """The quads, refusing a literal object over the limit, and what the parser cannot buffer."""
    try:
        for quad in quads:
            term = quad.object
            if isinstance(term, ox.Literal) and len(term.value) > _limit // 4:
                size = len(term.value.encode("utf-8"))
                if size > _limit:
                    raise LiteralTooLong(
                        f"a literal of {size} bytes (object of <{quad.subject}> <{quad.predicate.value}>); "
                        f"literals may be {_limit} bytes at most (rsep serve --max-literal)",
                        source=source,
                    )
            yield quad
    except MemoryError as error:
        raise LiteralTooLong(
            f"a literal or IRI over the parser's {PARSER_BUFFER} bytes ({error})", source=source
        ) from None
