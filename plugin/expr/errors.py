"""The two ways an expression can fail."""

from __future__ import annotations

from rsep.plugin.algebra.sparql import SourcePosition
from rsep.plugin.errors import InternalError, InvalidInput


class ExprError(InternalError):
    """A SPARQL expression evaluation error (§17.2: unbound variable, type
    error, ...). FILTER treats it as false; `&&`, `||`, IF, COALESCE and IN
    handle it as §17.2 prescribes."""


class UnsupportedExpression(InvalidInput):
    """Raised at compile time for what cannot be evaluated on a solution
    mapping alone: EXISTS, aggregates, unknown extension functions; `position`
    is where the construct is written, when the parser recorded it."""

    def __init__(self, message: str, position: SourcePosition | None = None) -> None:
        super().__init__(message)
        self.position = position
