"""Ingest-to-visible latency of continuous queries on a real `rsep serve`.

For each engine it starts `rsep serve --engine E` on a fresh data folder, registers

    SEQ (A; B)   A: ?a b:opens ?k    B: ?b b:closes ?k    (WITHIN 10 SECONDS, key ?k)

and posts events at a steady rate from one client thread: pairs (an event that opens key k_i,
then one that closes it, so the second completes exactly one match), each event its own
`POST /streams` stamped with the wall clock. For every completing event it measures, from the
moment its POST is sent:

- ack: the 202 answer (the event is durable in the log);
- visible: the first `ASK` on /sparql that finds the match (its metadata in `urn:rsep:matches`
  derived from that event, and its graph's solution) answers true. Every outstanding completing
  event is polled every `--poll-ms` ms by a pool of client threads; the time is taken when the
  true answer arrives, so it includes one ASK round trip;
- push: the arrival of its match on the query's Server-Sent Events stream.

It prints p50/p95/p99/max of each, the events/s achieved, and the comparison with the target
(visible p99 <= 500 ms). Engines: `spark` (the default of `rsep serve`, here on `--master`,
`local[2]` unless told otherwise) and `inprocess`. Before the measured load, one pair is posted
and its match awaited (the Spark engine's first micro-batch starts its Python workers, ~10-20 s),
then `--warmup` seconds of load are sent and left out. Timings are printed, never asserted.

Run from the repository root:
    .venv/bin/python -m bench.bench_latency [--quick] [--rate PAIRS_PER_S] [--duration S]
        [--poll-ms MS] [--engine inprocess|spark ...] [--master URL]
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET_P99_MS = 500.0
STREAM = "http://example.org/bench/stream"
QUERY = """\
PREFIX b: <http://example.org/bench#>
SELECT ?k ?a ?b
WITHIN 10 SECONDS
FROM STREAM S1 <http://example.org/bench/stream>
WHERE {
  SEQ (A; B)
  DEFINE GPM A ON S1 { ?a b:opens ?k . }
  DEFINE GPM B ON S1 { ?b b:closes ?k . }
}
"""
EVENT = """\
@prefix b: <http://example.org/bench#> .
@prefix prov: <http://www.w3.org/ns/prov#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
<urn:bench:%(kind)s%(i)d> { <urn:bench:%(subject)s%(i)d> b:%(verb)s "k%(i)d" . }
<urn:bench:%(kind)s%(i)d> prov:generatedAtTime "%(time)s"^^xsd:dateTime .
"""
VISIBLE = """\
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX rs: <http://www.w3.org/2001/sw/DataAccess/tests/result-set#>
ASK {
  GRAPH <urn:rsep:matches> { ?g prov:wasGeneratedBy <%(query)s> ; prov:wasDerivedFrom <urn:bench:close%(i)d> }
  GRAPH ?g { ?set rs:solution ?solution }
}
"""
POLLERS = 5
"""Client threads polling with ASK: with the SSE stream and the sender, 7 of `rsep serve`'s 8
request threads. Enough while rate x latency stays below 5 outstanding matches."""
START_TIMEOUT = 120.0
GIVE_UP = 30.0
"""Seconds after which a completing event whose match is not visible (or pushed) counts as lost."""


# ---------------------------------------------------------------------- the server


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Server:
    """`rsep serve` in a subprocess on a free port and a fresh data folder (`options`: more of
    its flags)."""

    def __init__(self, engine: str, data: Path, master: str, options: Sequence[str] = ()) -> None:
        self.port = free_port()
        self.log = data.parent / f"{data.name}.log"
        command = [sys.executable, "-m", "rsep.endpoint.cli", "serve", "--port", str(self.port),
                   "--data", str(data), "--engine", engine, "--master", master, *options]  # fmt: skip
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
        began = time.monotonic()
        self.ready_s = 0.0
        """Seconds from starting `rsep serve` to its first answer (`GET /queries`)."""
        deadline = began + START_TIMEOUT
        while True:
            try:
                Client(self.port).request("GET", "/queries")
                self.ready_s = time.monotonic() - began
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    log = self.log.read_text()
                    raise SystemExit(f"rsep serve --engine {engine} did not start:\n{log}") from None
                time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Client:
    """One keep-alive HTTP connection (one per thread)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        attempts = 2 if method == "GET" else 1  # a POST is not repeated: it might be stored twice
        for attempt in range(1, attempts + 1):
            try:
                self.connection.request(method, path, body=body, headers=headers or {})
                response = self.connection.getresponse()
                return response.status, response.read()
            except (http.client.HTTPException, ConnectionError):
                self.connection.close()  # the server closed a kept-alive connection
                if attempt == attempts:
                    raise
        raise AssertionError("unreachable")


def paced(
    interval: float, seconds: float | None = None, stop: threading.Event | None = None
) -> Iterator[int]:
    """0, 1, 2, ... one every `interval` seconds against the clock (a late one is followed by the
    next at once, so the rate holds on average), for `seconds` or until `stop` is set."""
    due = time.monotonic()
    end = None if seconds is None else due + seconds
    index = 0
    while (end is None or due < end) and (stop is None or not stop.is_set()):
        yield index
        index += 1
        due += interval
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)


# ---------------------------------------------------------------------- one run


@dataclass
class Pair:
    sent: float | None = None
    """perf_counter when the POST of the completing event was sent."""
    acked: float | None = None
    visible: float | None = None
    pushed: float | None = None


@dataclass
class Run:
    engine: str
    rate: float
    duration: float
    pairs: list[Pair]
    warmup: int
    """The first `warmup` pairs are sent like the others but left out of the statistics."""
    first_sparql_ms: float
    """The first /sparql request of the server (it builds the SPARQL parser), before the load."""
    register_ms: float = 0.0
    """`POST /queries` (the query's registration), from sending to the 201."""
    second_register_ms: float = 0.0
    """`POST /queries` of a second query (the first builds the SPARQL parser)."""
    ready_s: float = 0.0
    """`rsep serve` started to answering."""
    first_match_s: float = 0.0
    """Seconds from posting the priming pair to its match being visible (the engine's start-up)."""
    elapsed: float = 0.0
    """Seconds from the first POST to the last 202."""
    events_sent: int = 0
    rejected: list[str] = field(default_factory=list)
    pushed_total: int = 0


def open_events(port: int, query_id: str) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    """`GET /queries/{id}/events`, answered 200 (or the benchmark stops)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=None)
    connection.request("GET", f"/queries/{query_id}/events", headers={"Accept": "text/event-stream"})
    response = connection.getresponse()
    if response.status != 200:
        raise SystemExit(f"GET /queries/{query_id}/events answered {response.status}")
    return connection, response


class Listener:
    """The query's Server-Sent Events stream on a thread: arrival time per completed key."""

    def __init__(self, port: int, query_id: str, pairs: list[Pair]) -> None:
        self.connection, self.response = open_events(port, query_id)
        self.pairs = pairs
        self.count = 0
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            while line := self.response.readline():
                if not line.startswith(b"data: "):
                    continue
                now = time.perf_counter()
                record = json.loads(line[len(b"data: ") :])
                index = int(record["bindings"]["k"].strip('"')[1:])  # "k12" -> 12
                if index < 0:  # the priming pair
                    continue
                self.count += 1
                if self.pairs[index].pushed is None:
                    self.pairs[index].pushed = now
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        self.connection.close()


def stamp(previous: list[datetime]) -> str:
    """The wall clock as xsd:dateTime, strictly after the previous stamp (the log wants order)."""
    now = datetime.now(UTC)
    if previous and now <= previous[0]:
        now = previous[0] + timedelta(microseconds=1)
    previous[:] = [now]
    return now.isoformat(timespec="microseconds").replace("+00:00", "Z")


def run_engine(
    engine: str, master: str, rate: float, duration: float, warmup: float, poll: float, workdir: Path
) -> Run:
    server = Server(engine, workdir / f"data-{engine}", master)
    try:
        run = measure(server.port, engine, rate, duration, warmup, poll)
        run.ready_s = server.ready_s
        return run
    finally:
        server.stop()


def measure(port: int, engine: str, rate: float, duration: float, warmup: float, poll: float) -> Run:
    skipped = round(rate * warmup)
    count = skipped + max(1, round(rate * duration))
    pairs = [Pair() for _ in range(count)]
    client = Client(port)
    client.request("GET", "/queries")  # the connection is open before the registration is timed
    registering = time.perf_counter()
    status, body = client.request(
        "POST", "/queries", QUERY.encode(), {"Content-Type": "application/sparql-query"}
    )
    register_ms = (time.perf_counter() - registering) * 1000
    registering = time.perf_counter()  # a second query: the parsers are built by now
    status2, body2 = client.request(
        "POST", "/queries", QUERY.encode(), {"Content-Type": "application/sparql-query"}
    )
    second_ms = (time.perf_counter() - registering) * 1000
    if status2 == 201:
        client.request("DELETE", f"/queries/{json.loads(body2)['id']}")
    if status != 201:
        raise SystemExit(f"POST /queries answered {status}: {body.decode()}")
    query = json.loads(body)
    started = time.perf_counter()  # the first /sparql request: the one a poll makes, before the load
    client.request(
        "GET", "/sparql?" + urllib.parse.urlencode({"query": VISIBLE % {"query": query["iri"], "i": -1}})
    )
    run = Run(engine, rate, duration, pairs, skipped, (time.perf_counter() - started) * 1000)
    run.register_ms, run.second_register_ms = register_ms, second_ms
    listener = Listener(port, query["id"], pairs)
    local = threading.local()
    previous: list[datetime] = []
    ingest = "/streams?" + urllib.parse.urlencode({"stream": STREAM})
    headers = {"Content-Type": "application/trig"}

    def post(index: int, closing: bool) -> tuple[int, bytes]:
        kind, subject, verb = ("close", "y", "closes") if closing else ("open", "x", "opens")
        values = {"kind": kind, "subject": subject, "verb": verb, "i": index, "time": stamp(previous)}
        return client.request("POST", ingest, (EVENT % values).encode(), headers)

    def visible(index: int) -> bool:
        text = VISIBLE % {"query": query["iri"], "i": index}
        path = "/sparql?" + urllib.parse.urlencode({"query": text})
        status, answer = local.client.request(
            "GET", path, headers={"Accept": "application/sparql-results+json"}
        )
        return status == 200 and bool(json.loads(answer)["boolean"])

    # Prime: one pair whose match must be visible before the load starts (Spark's first batch
    # starts its Python workers), so start-up is reported apart from the latencies.
    local.client = Client(port)
    primed = time.perf_counter()
    for closing in (False, True):
        status, body = post(-1, closing)
        if status != 202:
            raise SystemExit(f"POST /streams answered {status}: {body.decode()}")
    while not visible(-1):
        if time.perf_counter() - primed > START_TIMEOUT:
            raise SystemExit(f"the priming match was not visible after {START_TIMEOUT:g} s")
        time.sleep(0.05)
    run.first_match_s = time.perf_counter() - primed

    def wait_visible(index: int) -> None:
        if not hasattr(local, "client"):
            local.client = Client(port)
        deadline = time.perf_counter() + GIVE_UP
        while time.perf_counter() < deadline:
            if visible(index):
                pairs[index].visible = time.perf_counter()
                return
            time.sleep(poll)

    interval = 1.0 / (2 * rate)
    with ThreadPoolExecutor(max_workers=POLLERS, thread_name_prefix="poll") as pool:
        start = time.perf_counter()
        for step in range(2 * count):
            due = start + step * interval
            delay = due - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            index, closing = divmod(step, 2)
            sent = time.perf_counter()
            if closing:
                pairs[index].sent = sent
            status, body = post(index, bool(closing))
            acked = time.perf_counter()
            run.events_sent += 1
            if status != 202:
                run.rejected.append(f"{status} {body.decode().strip()}")
                continue
            if closing:
                pairs[index].acked = acked
                pool.submit(wait_visible, index)
        run.elapsed = time.perf_counter() - start
    deadline = time.perf_counter() + GIVE_UP
    while listener.count < count and time.perf_counter() < deadline:
        time.sleep(0.05)
    run.pushed_total = listener.count
    listener.close()
    return run


# ---------------------------------------------------------------------- the report


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def latencies(run: Run, attribute: str) -> list[float]:
    found = []
    for pair in run.pairs[run.warmup :]:
        value = getattr(pair, attribute)
        if pair.sent is not None and value is not None:
            found.append((value - pair.sent) * 1000)
    return found


def report(run: Run) -> bool:
    count = len(run.pairs) - run.warmup
    print(f"\nengine {run.engine}")
    print(f"  rsep serve started to answering: {run.ready_s:.1f} s")
    print(f"  POST /queries (registration, before the load): first {run.register_ms:.0f} ms "
          f"(builds the parser), second {run.second_register_ms:.0f} ms")  # fmt: skip
    print(f"  first /sparql request (builds the parser, before the load): {run.first_sparql_ms:.0f} ms")
    print(f"  first match visible (engine start-up, before the load): {run.first_match_s:.1f} s")
    target_rate = 2 * run.rate
    achieved = run.events_sent / run.elapsed if run.elapsed else 0.0
    print(f"  sent {run.events_sent} events in {run.elapsed:.1f} s: {achieved:.1f} events/s "
          f"(target {target_rate:g}), {achieved / 2:.1f} completing events/s")  # fmt: skip
    if run.rejected:
        print(f"  rejected: {len(run.rejected)} (first: {run.rejected[0]})")
    rows = [
        ("ack (202 of the POST)", "acked"),
        ("visible through /sparql", "visible"),
        ("pushed by SSE", "pushed"),
    ]
    print(f"  {'ms from sending the completing POST':<38}{'n':>6}{'p50':>9}{'p95':>9}{'p99':>9}{'max':>9}")
    for label, attribute in rows:
        values = latencies(run, attribute)
        if not values:
            print(f"  {label:<38}{0:>6}   (none)")
            continue
        cells = "".join(f"{percentile(values, p):>9.1f}" for p in (50, 95, 99)) + f"{max(values):>9.1f}"
        print(f"  {label:<38}{len(values):>6}{cells}")
    visible = latencies(run, "visible")
    lost = count - len(visible)
    if lost:
        print(f"  {lost} of {count} matches not visible within {GIVE_UP:g} s")
    if run.pushed_total != len(run.pairs):
        print(f"  {run.pushed_total} matches pushed for {len(run.pairs)} completing events")
    if not visible:
        return False
    p99 = percentile(visible, 99)
    met = p99 <= TARGET_P99_MS and not lost
    verdict = "met" if met else "NOT met"
    print(f"  target: visible p99 <= {TARGET_P99_MS:g} ms: {verdict} (p99 {p99:.1f} ms)")
    return met


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="5 s of load after 1 s of warm-up")
    parser.add_argument("--rate", type=float, default=20.0, help="pairs/s, 2 events each (default 20)")
    parser.add_argument("--duration", type=float, help="seconds of measured load (default 60)")
    parser.add_argument("--warmup", type=float, help="seconds of unmeasured load first (default 2)")
    parser.add_argument("--poll-ms", type=float, default=5.0, help="ASK polling interval (default 5 ms)")
    parser.add_argument("--engine", action="append", choices=["spark", "inprocess"],
                        help="engines to measure (default: both)")  # fmt: skip
    parser.add_argument("--master", default="local[2]", help="Spark master of the server (default local[2])")
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # progress shows when piped
    duration = args.duration if args.duration is not None else (5.0 if args.quick else 60.0)
    warmup = args.warmup if args.warmup is not None else (1.0 if args.quick else 2.0)
    wanted = args.engine or ["spark", "inprocess"]
    print("rsep ingest-to-visible latency: SEQ(A; B) on one stream, key ?k, WITHIN 10 SECONDS")
    print(f"machine: {platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f}, Python {platform.python_version()}; "
          f"Spark master {args.master}")  # fmt: skip
    print(f"load: {args.rate:g} pairs/s ({2 * args.rate:g} events/s, one POST each), {warmup:g} s of "
          f"warm-up then {duration:g} s measured; the second event of a pair completes one match; "
          f"ASK polled every {args.poll_ms:g} ms")  # fmt: skip
    met = True
    with tempfile.TemporaryDirectory(prefix="rsep-latency-") as workdir:
        for engine in wanted:
            run = run_engine(
                engine, args.master, args.rate, duration, warmup, args.poll_ms / 1000, Path(workdir)
            )
            met = report(run) and met
    print(f"\n{'every measured engine meets' if met else 'not every engine meets'} the target "
          f"(visible p99 <= {TARGET_P99_MS:g} ms)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
