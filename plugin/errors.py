"""rsep's errors: one root, and the few kinds the edges tell apart.

Every exception rsep raises on purpose derives from `RsepError`, through one of the kinds below;
the HTTP layer (`rsep.endpoint.http_errors`) maps these kinds to status codes in one place, so a
new error class only picks its kind. The command line (`rsep.endpoint.cli`) prints any of them in
one line and exits with `exit_status`, 2, as argparse does for a bad argument: exit 1 is left to
what rsep did not foresee (a traceback is a bug). The kinds also derive from the built-in class
they always were (`ValueError` for bad input, `RuntimeError` for the engine), so code that catches
those keeps working.

| kind               | means                                                    | HTTP |
|--------------------|----------------------------------------------------------|------|
| `InvalidInput`     | a query, event, file or parameter is wrong (positioned)  | 400  |
| `NotFoundError`    | it names something that does not exist                   | 404  |
| `Unrepresentable`  | a valid answer has no form the client accepts            | 406  |
| `RemoteFailure`    | a remote service the request names failed (SERVICE)      | 502  |
| `EngineUnavailable`| the engine cannot run as configured (Spark, Java)        | 503  |
| `StorageFailure`   | what a valid request asks could not be stored (disk full)| 507  |
| `EngineFailure`    | the engine failed while serving a valid request          | 500  |

`InternalError` is for conditions a caller handles itself (an expression's type error, a
checkpoint written for another automaton, a stopped query): they never reach an edge.
"""

from __future__ import annotations


class RsepError(Exception):
    """The root of every error rsep raises on purpose. `source`, `line` and `column` locate it
    in the input where that is known (the parameter or file, 1-based line and column); the edges
    show them as `source:line:column: message`."""

    http_status = 500
    exit_status = 2
    source: str | None = None
    line: int | None = None
    column: int | None = None

    def __init__(
        self,
        message: str = "",
        *,
        source: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if source is not None:
            self.source = source
        if line is not None:
            self.line, self.column = line, column

    @property
    def detail(self) -> str:
        """The message without the location (subclasses that format `str()` with one override)."""
        return str(getattr(self, "message", None) or self)


class InvalidInput(RsepError, ValueError):
    """What the user gave is wrong: a query, an event, a file, a parameter. The message says
    what and, where the input has one, where (`source:line:column: ...`)."""

    http_status = 400


class NotFoundError(RsepError, LookupError):
    """The request names something that does not exist (a registered query, a graph, a file)."""

    http_status = 404


class Unrepresentable(RsepError, ValueError):
    """A valid answer has no representation the client accepts (e.g. a blank node in CSV)."""

    http_status = 406


class RemoteFailure(RsepError, RuntimeError):
    """A remote service the request itself names failed or answered what cannot be read."""

    http_status = 502


class EngineUnavailable(RsepError, RuntimeError):
    """The engine cannot run as configured: no Java, a master Spark does not accept or reach."""

    http_status = 503


class StorageFailure(RsepError, OSError):
    """What a valid request asks could not be written (a full disk, an I/O error): nothing of
    it is stored, and the request may be sent again once there is room."""

    http_status = 507


class EngineFailure(RsepError, RuntimeError):
    """The engine failed while running a valid request (a Spark job failed)."""

    http_status = 500


class InternalError(RsepError):
    """A condition one part of rsep raises and another handles (never shown to a user as is)."""
