"""Ingest while a large continuous query registers (issue 15, items 1 and 4).

rsep's grammar is pure Python: compiling a query of hundreds of kilobytes takes it seconds, and
on a server thread that time is taken from ingest, whose requests wait for the interpreter's lock
every few milliseconds. `rsep serve --query-isolation process` (the default) compiles a text over
64 KiB in a forked child (rsep.endpoint.plans); `thread` compiles it in the server. For each, the
script starts `rsep serve --engine inprocess` on a fresh folder, registers a small query, posts
one event per request at `--rate` events/s from one client, and after `--before` seconds
registers an EP-SPARQL query of `--size` bytes (bench/bench_parse.py's "ep filter": a FILTER with
a long `IN` list, its slowest shape per byte that compiles at any size). It prints:

- `compile`: one `compile_text` of that query in this process, the floor of a registration;
- `register`: POST /queries of it, and its ratio to one compile (a registration used to compile
  it twice in the server: the request, then the engine);
- ingest latency p50 / p99 / max before the registration and while it runs, and the ratio of the
  p99s (thread / process) in the same run.

    .venv/bin/python -m bench.bench_register [--size 400000] [--rate 100] [--before 3]
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.bench_latency import Client, Server, paced, percentile
from bench.bench_parse import epsparql_filter
from bench.common import latencies
from rsep.compiler import compile_text

SMALL = """PREFIX ex: <http://example.org/>
SELECT ?x WITHIN 10 SECONDS FROM STREAM S1 <http://example.org/s>
WHERE { SEQ (A; B) DEFINE GPM A ON S1 { ?x ex:p "1" } DEFINE GPM B ON S1 { ?x ex:p "2" } }"""
SPARQL_QUERY = {"Content-Type": "application/sparql-query"}
N_QUADS = {"Content-Type": "application/n-quads"}


@dataclass
class Run:
    isolation: str
    register_s: float = 0.0
    status: int = 0
    before: list[float] = field(default_factory=list)
    during: list[float] = field(default_factory=list)


def run(isolation: str, text: str, rate: float, before: float) -> Run:
    outcome = Run(isolation)
    with tempfile.TemporaryDirectory(prefix="rsep-register-") as folder:
        server = Server("inprocess", Path(folder) / "data", "local[1]", ("--query-isolation", isolation))
        try:
            status, _ = Client(server.port).request("POST", "/queries", SMALL.encode(), SPARQL_QUERY)
            assert status == 201, status
            registering = threading.Event()
            done = threading.Event()
            sender = threading.Thread(target=_send, args=(server.port, rate, outcome, registering, done))
            sender.start()
            time.sleep(before)
            registering.set()
            began = time.perf_counter()
            outcome.status, _ = Client(server.port).request("POST", "/queries", text.encode(), SPARQL_QUERY)
            outcome.register_s = time.perf_counter() - began
            done.set()
            sender.join()
        finally:
            server.stop()
    return outcome


def _send(port: int, rate: float, outcome: Run, registering: threading.Event, done: threading.Event) -> None:
    client = Client(port)
    for index in paced(1 / rate, stop=done):
        name = f"<http://example.org/e{index}>"
        body = f'{name} <http://example.org/p> "{index % 3}" {name} .\n'.encode()
        during = registering.is_set()
        began = time.perf_counter()
        status, _ = client.request("POST", "/streams?stream=http://example.org/s", body, N_QUADS)
        assert status == 202, status
        (outcome.during if during else outcome.before).append(time.perf_counter() - began)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=400_000)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--before", type=float, default=3.0)
    args = parser.parse_args(argv)
    text = epsparql_filter(args.size).text
    began = time.perf_counter()
    compile_text(text)
    compile_s = time.perf_counter() - began
    print(f"query: {len(text.encode())} bytes (ep filter); compile in this process {compile_s:.2f} s")
    runs = {isolation: run(isolation, text, args.rate, args.before) for isolation in ("thread", "process")}
    for found in runs.values():
        print(f"--query-isolation {found.isolation}: register {found.register_s:.2f} s "
              f"({found.register_s / compile_s:.2f}x one compile), status {found.status}")  # fmt: skip
        print(f"  ingest before:  {latencies(found.before)}")
        print(f"  ingest during:  {latencies(found.during)}")
    ratio = percentile(runs["thread"].during, 99) / percentile(runs["process"].during, 99)
    print(f"ingest p99 while registering: thread / process = {ratio:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
