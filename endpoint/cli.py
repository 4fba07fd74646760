"""The `rsep` command line.

`rsep run QUERY_FILE --stream IRI=FILE ... [--kb FILE] [--rule FILE] [--policy P] [--base IRI]
[--closure-rounds N] [--closure-events N]
[--format jsonl|srj|trig] [--master URL]`
replays a query over finite event files and prints every match. Failures
print nothing on stdout and exit 2 with one line on stderr that says where:
`QUERY_FILE:line:col: ...` for a bad query, the file and position for bad data.

`rsep post URL --stream IRI=FILE ... [--token T] [--batch N] [--speed X | --rate N] [--quiet]`
posts event files to a running endpoint, merged by time (paced in event time with --speed).

`rsep run` and `rsep post` draw a progress bar on stderr when stdout and stderr are terminals
(`rsep.endpoint.progress`); `rsep --version` prints the installed version.

`rsep serve [--host H] [--port P] [--data DIR] [--master URL] [--engine E] [--token T] ...` runs
the endpoint under waitress, says where it listens in one line on stderr, and stops cleanly on
SIGTERM or SIGINT; every setting but host, port and data is also read from its environment
variable (`rsep.endpoint.settings`).
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import signal
import sys
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import replace
from importlib import metadata
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn

from rsep.endpoint import collector, settings
from rsep.endpoint.progress import Progress
from rsep.endpoint.progress import wanted as progress_wanted
from rsep.endpoint.run_command import KbFile, RunRequest, StreamedRun, StreamFile, start, write
from rsep.endpoint.settings import duration
from rsep.grammar import DIALECTS
from rsep.plugin import (
    REGIMES,
    ClosureLimits,
    ConsumptionPolicy,
    InvalidInput,
    RsepError,
    Timestamp,
    WindowStream,
    is_absolute_iri,
)

if TYPE_CHECKING:
    from flask import Flask

EXIT_FAILURE = 2
QUIET_HELP = "no progress bar (there is one only when stdout and stderr are terminals)"
CONNECTION_HEADROOM = 100
"""Connections waitress accepts beyond its threads (its default limit, 100 in all, would turn
away the 101st event-stream client while threads were free)."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: {message}\n")
        raise SystemExit(EXIT_FAILURE)


def _stream(text: str) -> StreamFile:
    iri, sep, path = text.partition("=")
    if not sep or not iri or not path:
        raise argparse.ArgumentTypeError(f"expected IRI=FILE, got {text!r}")
    return StreamFile(iri.strip("<>"), Path(path), text)  # re-split by the query's IRIs


def _lateness(text: str) -> float:
    """`--max-lateness`: seconds or an xsd:dayTimeDuration (`rsep.endpoint.settings.duration`)."""
    try:
        return duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _time(text: str) -> Timestamp:
    """A number or an xsd:dateTime (`--t0`)."""
    try:
        return Timestamp.parse(text)
    except InvalidInput as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _base(text: str) -> str:
    """An absolute IRI (`<...>` optional): relative IRIs resolve against it."""
    iri = text.strip("<>")
    if not is_absolute_iri(iri):
        raise argparse.ArgumentTypeError(f"expected an absolute IRI, got {text!r}")
    return iri


def _kb(text: str) -> KbFile:
    """FILE, or GRAPH_IRI=FILE to load a triples file into a named graph."""
    graph, sep, path = text.partition("=")
    if sep and ":" in graph and not Path(text).exists():
        return KbFile(Path(path), graph.strip("<>"))
    return KbFile(Path(text))


def version() -> str:
    """The installed distribution's version (pyproject.toml's, for an editable install too)."""
    try:
        return metadata.version("rsep")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="rsep", description="Complex event processing over RDF streams.")
    parser.add_argument("--version", action="version", version=f"rsep {version()}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run_cmd = commands.add_parser("run", help="replay a query over event files and print every match")
    run_cmd.add_argument("query", type=Path, metavar="QUERY_FILE")
    run_cmd.add_argument("--stream", type=_stream, action="append", default=[], metavar="IRI=FILE",
                         help="events of the stream IRI (as in FROM STREAM), TriG or N-Quads")  # fmt: skip
    run_cmd.add_argument("--kb", type=_kb, action="append", default=[], metavar="FILE",
                         help="background knowledge (TriG, N-Quads, Turtle; GRAPH=FILE)")  # fmt: skip
    run_cmd.add_argument("--rule", type=Path, action="append", default=[], metavar="FILE",
                         help="an EP-SPARQL CONSTRUCT rule or a C-SPARQL REGISTER STREAM")  # fmt: skip
    run_cmd.add_argument("--policy", choices=[p.value for p in ConsumptionPolicy])
    run_cmd.add_argument("--closure-rounds", type=_positive, default=ClosureLimits().rounds, metavar="N",
                         help="rounds of CONSTRUCT rules at one timestamp before the closure is "
                         "taken to diverge (default %(default)s)")  # fmt: skip
    run_cmd.add_argument("--closure-events", type=_positive, default=ClosureLimits().events_per_input,
                         metavar="N", help="events CONSTRUCT rules may derive at one timestamp per "
                         "input event there (default %(default)s)")  # fmt: skip
    run_cmd.add_argument("--entailment", choices=REGIMES,
                         help="match under RDFS entailment with the --kb schema (default: none)")  # fmt: skip
    run_cmd.add_argument("--max-lateness", type=_lateness, metavar="SECONDS",
                         help="how far out of time order an event file may be, in seconds or as an "
                              "xsd:dayTimeDuration (PT5S); default: by 1,000 events")  # fmt: skip
    run_cmd.add_argument("--dialect", choices=list(DIALECTS),
                         help="the query's dialect (default: whichever dialect's grammar claims it, which "
                              "reads the query with each of them)")  # fmt: skip
    run_cmd.add_argument("--match-limit", type=_positive, metavar="N",
                         help="matches one timestamp of one partition key may report where runs are "
                              "enumerated from the shared buffer (default 10000; a warning says when "
                              "it cuts)")  # fmt: skip
    run_cmd.add_argument("--t0", type=_time, metavar="TIME",
                         help="when a window query (C-SPARQL) was registered, a number or an "
                              "xsd:dateTime at or before the first event: its windows open from then "
                              "on (default: the first event)")  # fmt: skip
    run_cmd.add_argument("--format", choices=["jsonl", "srj", "trig"], default="jsonl",
                         help="trig: a window or EP-SPARQL CONSTRUCT's output as events")  # fmt: skip
    run_cmd.add_argument("--base", type=_base, metavar="IRI",
                         help="base of relative IRIs (default: each file's address)")  # fmt: skip
    run_cmd.add_argument("--master", default="local[*]", help="Spark master URL (default local[*])")
    run_cmd.add_argument("--engine", choices=["spark", "inprocess"], default="spark",
                         help="spark (default), or inprocess: the same runtime without Spark")  # fmt: skip
    run_cmd.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    run_cmd.set_defaults(handler=_run)
    serve_cmd = commands.add_parser("serve", help="run the SPARQL endpoint and the event-query service")
    serve_cmd.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve_cmd.add_argument("--port", type=_port, default=7878, help="port to listen on (default 7878)")
    serve_cmd.add_argument("--data", type=Path, default=Path("rsep-data"), metavar="DIR",
                           help="where the store and the event log live (default ./rsep-data)")  # fmt: skip
    settings.add_arguments(serve_cmd)  # --engine, --master, --token, ...: flag or environment
    serve_cmd.set_defaults(handler=_serve)
    post_cmd = commands.add_parser("post", help="post event files to a running endpoint, merged by time")
    post_cmd.add_argument(
        "url", type=_endpoint_url, metavar="URL", help="the endpoint, e.g. http://127.0.0.1:7878/"
    )
    post_cmd.add_argument("--stream", type=_stream, action="append", required=True, metavar="IRI=FILE",
                          help="events of the stream IRI, TriG or N-Quads")  # fmt: skip
    post_cmd.add_argument("--token", help="sent as Authorization: Bearer TOKEN")
    post_cmd.add_argument("--batch", type=_positive, default=500, help="events per request (default 500)")
    pace = post_cmd.add_mutually_exclusive_group()
    pace.add_argument("--speed", type=_positive_number, metavar="X",
                      help="replay in event time, X times faster than real time (1: real time)")  # fmt: skip
    pace.add_argument("--rate", type=_positive_number, metavar="N", help="post N events per second")
    post_cmd.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    post_cmd.set_defaults(handler=_post)
    return parser


def _endpoint_url(text: str) -> str:
    """An endpoint's base URL: http(s), a host, no query or fragment (`/streams?...` is appended
    to it; urllib raised a ValueError traceback on what it cannot open)."""
    try:
        parts = urllib.parse.urlsplit(text)
        parts.port  # noqa: B018 -- raises ValueError on a port that is not a number
    except ValueError:
        parts = None
    if (
        parts is None
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.query
        or parts.fragment
    ):
        raise argparse.ArgumentTypeError(
            f"expected the endpoint's http(s) URL, e.g. http://127.0.0.1:7878/, got {text!r}"
        )
    return text


def _port(text: str) -> int:
    """A TCP port: the socket takes a larger number modulo 65536 (99999 listened on 34463)."""
    if not (text.isascii() and text.isdigit() and int(text) <= 65535):
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, got {text!r}")
    return int(text)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _positive_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text!r}")
    return value


def _post(args: argparse.Namespace) -> int:
    from rsep.endpoint.post import PostRequest, post

    request = PostRequest(args.url, args.stream, args.token, args.batch, rate=args.rate, speed=args.speed)
    progress = Progress(progress_wanted(args.quiet), "posted")
    try:
        accepted = post(request, progress)
    finally:
        progress.close()
    sys.stderr.write(f"rsep: {accepted} events accepted by {args.url}\n")
    return 0


def _run(args: argparse.Namespace) -> int:
    request = RunRequest(
        query_file=args.query,
        streams=[replace(stream, lateness=args.max_lateness, read_ahead=True) for stream in args.stream],
        kb=args.kb,
        policy=ConsumptionPolicy(args.policy) if args.policy else None,
        engine=args.engine,
        master=args.master,
        rules=args.rule,
        entailment=args.entailment,
        base=args.base,
        match_limit=args.match_limit,
        dialect=args.dialect,
        closure=ClosureLimits(args.closure_rounds, args.closure_events),
        t0=args.t0,
    )

    def warn() -> None:
        for warning in request.warnings:
            sys.stderr.write(f"rsep: warning: {args.query}: {warning}\n")

    shown = progress_wanted(args.quiet)
    progress = Progress(False, "")
    try:
        outcome = start(request)
        collector.tune()
        if isinstance(outcome, StreamedRun):  # counted as the files are read
            progress = Progress(shown, "read")
            outcome.sources = [progress.counted(source) for source in outcome.sources]
        elif isinstance(outcome, WindowStream):  # files read: counted as they are evaluated
            progress = Progress(shown, "evaluated", unit="evaluations")
            outcome.evaluations = progress.counted(outcome.evaluations)
        write(outcome, args.format, sys.stdout, before=warn, batch=progress.clear)
    finally:
        progress.close()
    return 0


def _serve(args: argparse.Namespace) -> int:
    from waitress.server import create_server  # the web stack only for `serve`

    from rsep.endpoint.app import create_app
    from rsep.endpoint.workers import serve_threads

    began = time.monotonic()
    _log_to_stderr()
    config = {"RSEP_DATA_DIR": str(args.data), "RSEP_BIND_HOST": args.host,
              **settings.configuration(args, os.environ)}  # fmt: skip
    try:
        app = create_app(config)
    except OSError as error:  # e.g. the store is locked by another `rsep serve`
        raise InvalidInput(f"rsep: cannot open the data directory {args.data}: {error}") from None
    collector.tune()  # before waitress starts its threads: a signal must find `run` (below) at once
    try:
        threads = serve_threads(app.config)
        server = create_server(app, host=args.host, port=args.port, threads=threads, ident="rsep",
                               max_request_body_size=app.config["RSEP_MAX_BODY"],
                               channel_request_lookahead=1,  # a client that leaves is seen: its query stops
                               connection_limit=threads + CONNECTION_HEADROOM)  # fmt: skip
    except (OSError, ValueError) as error:  # ValueError: waitress cannot resolve the host
        _shut_down(app)
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise InvalidInput(f"rsep: cannot listen on {args.host}:{args.port}: {reason}") from None
    _stop_on_signals(lambda: _shut_down(app))
    url = _url(server)
    ready = time.monotonic() - began
    sys.stderr.write(f"rsep: listening on {url} (SPARQL endpoint {url}sparql), ready in {ready:.1f} s\n")
    sys.stderr.flush()
    server.run()  # returns when a signal handler raises SystemExit
    return 0


def _log_to_stderr() -> None:
    """What rsep's own loggers say (the engine starting, a query failing) goes to stderr, one
    line each, as `rsep: ...`."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("rsep: %(message)s"))
    logger = logging.getLogger("rsep")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def _url(server: Any) -> str:
    """The first address waitress listens on (a name like `localhost` may give several)."""
    listening = getattr(server, "effective_listen", None)
    host, port = listening[0] if listening else (server.effective_host, server.effective_port)
    return f"http://[{host}]:{port}/" if ":" in str(host) else f"http://{host}:{port}/"


def _stop_on_signals(shut_down: Callable[[], None]) -> None:
    """SIGTERM and SIGINT stop the server: the app's shutdown hooks run first (so that open
    event streams end and their request threads can finish), then SystemExit ends waitress's
    loop, which joins the request threads."""
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        if not stopping:
            stopping = True
            shut_down()
        raise SystemExit(0)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, stop)


def _shut_down(app: Flask) -> None:
    """Run the callables registered under app.extensions["rsep.shutdown"] (one or a list),
    then flush the store to disk."""
    hooks = app.extensions.get("rsep.shutdown") or []
    for hook in hooks if isinstance(hooks, list | tuple) else [hooks]:
        try:
            hook()
        except Exception as error:  # one failing hook must not keep the others from running
            sys.stderr.write(f"rsep: shutdown: {_one_line(error)}\n")
    resources = app.extensions.get("rsep")
    if resources is not None:
        resources.kb.flush()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
        return code
    except InvalidInput as error:  # bad input: its message starts with where it is
        sys.stderr.write(f"{_one_line(error)}\n")
        return int(error.exit_status)
    except RsepError as error:  # the engine (Spark, Java) or what the input names
        sys.stderr.write(f"rsep: {_one_line(error)}\n")
        return int(error.exit_status)
    except OSError as error:  # the machine: a file, a socket
        sys.stderr.write(f"rsep: {_one_line(error)}\n")
    return EXIT_FAILURE


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split("\n")[0].split()) or type(error).__name__


if __name__ == "__main__":
    raise SystemExit(main())
