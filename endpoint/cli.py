"""The `rsep` command line.

`rsep run QUERY_FILE --stream IRI=FILE ... [--kb FILE] [--policy P] [--format jsonl|srj] [--master URL]`
replays a query over finite event files and prints every match. Failures
print nothing on stdout and exit 2 with one line on stderr that says where:
`QUERY_FILE:line:col: ...` for a bad query, the file and position for bad data.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from rsep.endpoint.replay import KbFile, RunRequest, StreamFile, UsageError, run
from rsep.plugin.algebra.events import ConsumptionPolicy

EXIT_FAILURE = 2


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: {message}\n")
        raise SystemExit(EXIT_FAILURE)


def _stream(text: str) -> StreamFile:
    iri, sep, path = text.partition("=")
    if not sep or not iri or not path:
        raise argparse.ArgumentTypeError(f"expected IRI=FILE, got {text!r}")
    return StreamFile(iri.strip("<>"), Path(path))


def _kb(text: str) -> KbFile:
    """FILE, or GRAPH_IRI=FILE to load a triples file into a named graph."""
    graph, sep, path = text.partition("=")
    if sep and ":" in graph and not Path(text).exists():
        return KbFile(Path(path), graph.strip("<>"))
    return KbFile(Path(text))


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="rsep", description="Complex event processing over RDF streams.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run_cmd = commands.add_parser("run", help="replay a query over event files and print every match")
    run_cmd.add_argument("query", type=Path, metavar="QUERY_FILE")
    run_cmd.add_argument("--stream", type=_stream, action="append", default=[], metavar="IRI=FILE",
                         help="events of the stream IRI (as in FROM STREAM), TriG or N-Quads")  # fmt: skip
    run_cmd.add_argument("--kb", type=_kb, action="append", default=[], metavar="FILE",
                         help="background knowledge (TriG, N-Quads, Turtle; GRAPH=FILE)")  # fmt: skip
    run_cmd.add_argument("--policy", choices=[p.value for p in ConsumptionPolicy])
    run_cmd.add_argument("--format", choices=["jsonl", "srj"], default="jsonl")
    run_cmd.add_argument("--master", default="local[*]", help="Spark master URL (default local[*])")
    run_cmd.add_argument("--engine", choices=["spark", "inprocess"], default="spark",
                         help="spark (default), or inprocess: the same runtime without Spark")  # fmt: skip
    run_cmd.set_defaults(handler=_run)
    return parser


def _run(args: argparse.Namespace) -> int:
    request = RunRequest(
        query_file=args.query,
        streams=args.stream,
        kb=args.kb,
        policy=ConsumptionPolicy(args.policy) if args.policy else None,
        engine=args.engine,
        master=args.master,
    )
    result = run(request)
    for warning in request.warnings:
        sys.stderr.write(f"rsep: warning: {args.query}: {warning}\n")
    sys.stdout.write(result.jsonl() if args.format == "jsonl" else result.srj())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
        return code
    except (ValueError, UsageError) as error:  # every user-facing error derives from ValueError
        sys.stderr.write(f"{_one_line(error)}\n")
        return EXIT_FAILURE


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split("\n")[0].split()) or type(error).__name__


if __name__ == "__main__":
    raise SystemExit(main())
