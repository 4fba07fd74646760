"""Many continuous queries on one real `rsep serve` (issue 15, item 7): rate held and match latency.

For each count N in `--queries` (default 1, 10, 100) it starts `rsep serve --engine inprocess` on a
fresh data folder and registers N queries of one shape, each watching its own group of keys:

    SEQ (A; B) WITHIN 10 SECONDS     A: ?a b:opens ?k ; b:group "g<i>"     B: ?b b:closes ?k

(the multi-tenant case: many users, one stream, each query selective). A sender posts pairs (an
event that opens key k_j in group j mod N, then one that closes it) at `--rate` events/s for
`--duration` s, `--batch` events per `POST /streams`, each stamped with the wall clock when its
request is built. Every close completes exactly one match, of exactly one query: the oracle is
one match per pair. After the load the script waits for every query to read the whole log and
reads each match's detection time (`prov:generatedAtTime` in `urn:rsep:matches`) and the close
event it derives from: latency = detection - the close's timestamp (both wall clock).

Printed per N: events/s posted, requests refused, matches found / expected, latency
p50/p95/p99/max, the seconds the engine needed after the last post to catch up, the server's RSS,
and the target (>= 1,000 events/s with match p99 <= 1 s at N = 100). Timings are printed, never
asserted.

    .venv/bin/python -m bench.bench_queries [--quick] [--queries 1,10,100] [--rate 1000]
        [--duration 30] [--batch 20]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from bench.bench_latency import Client, Server, paced, percentile

STREAM = "http://example.org/bench/stream"
TARGET_RATE = 1000.0
TARGET_P99_MS = 1000.0
QUERY = """\
PREFIX b: <http://example.org/bench#>
SELECT ?k ?a ?b
WITHIN 10 SECONDS
FROM STREAM S1 <http://example.org/bench/stream>
WHERE {
  SEQ (A; B)
  DEFINE GPM A ON S1 { ?a b:opens ?k ; b:group "g%d" . }
  DEFINE GPM B ON S1 { ?b b:closes ?k . }
}
"""
MATCHES = """\
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX rsep: <https://w3id.org/rsep#>
SELECT ?e ?t ?end WHERE {
  GRAPH <urn:rsep:matches> { ?g prov:generatedAtTime ?t ; prov:wasDerivedFrom ?e ; rsep:end ?end }
  FILTER(STRSTARTS(STR(?e), "urn:bench:close"))
}
"""


@dataclass
class Outcome:
    queries: int
    rate: float
    posted: int = 0
    pairs: int = 0
    refused: int = 0
    elapsed: float = 0.0
    catch_up: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    matches: int = 0
    rss_mb: float = 0.0


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def event(kind: str, index: int, group: int, moment: float) -> str:
    name = f"<urn:bench:{kind}{index}>"
    if kind == "open":
        body = (f'<urn:bench:a{index}> <http://example.org/bench#opens> "k{index}" .\n'
                f'<urn:bench:a{index}> <http://example.org/bench#group> "g{group}" .\n')  # fmt: skip
    else:
        body = f'<urn:bench:b{index}> <http://example.org/bench#closes> "k{index}" .\n'
    quads = "".join(f"{line[:-2]} {name} .\n" for line in body.splitlines())
    stamp = f'"{_iso(moment)}"^^<http://www.w3.org/2001/XMLSchema#dateTime>'
    return quads + f"{name} <http://www.w3.org/ns/prov#generatedAtTime> {stamp} .\n"


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """A memory figure of /proc/PID/status in MB: VmRSS, or RssAnon (heaps: Python's, Oxigraph's,
    RocksDB's memtables and caches) against RssFile (mapped files); 0 once the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run(queries: int, rate: float, duration: float, batch: int) -> Outcome:
    outcome = Outcome(queries, rate)
    with tempfile.TemporaryDirectory(prefix="rsep-queries-") as tmp:
        server = Server("inprocess", Path(tmp) / "data", "local[1]")
        try:
            client = Client(server.port)
            for i in range(queries):
                status, body = client.request("POST", "/queries", (QUERY % i).encode(),
                                              {"Content-Type": "application/sparql-query"})  # fmt: skip
                if status != 201:
                    raise SystemExit(f"registering query {i}: {status} {body[:300]!r}")
            _send(client, outcome, queries, rate, duration, batch)
            began = time.monotonic()
            _wait_caught_up(client, timeout=300)
            outcome.catch_up = time.monotonic() - began
            outcome.rss_mb = rss_mb(server.process.pid)
            _read_latencies(client, outcome)
        finally:
            server.stop()
    return outcome


def _send(client: Client, outcome: Outcome, queries: int, rate: float, duration: float, batch: int) -> None:
    """Pairs at `rate` events/s, `batch` events a request, paced against the clock."""
    start = time.monotonic()
    index = 0
    for _ in paced(batch / rate, duration):
        payload = []
        moment = time.time()
        for _ in range(batch // 2):
            payload.append(event("open", index, index % queries, moment))
            moment += 1e-5
            payload.append(event("close", index, index % queries, moment))
            moment += 1e-5
            index += 1
        path = f"/streams?stream={urllib.parse.quote(STREAM, safe=':/')}"
        body = "".join(payload).encode()
        status, _ = client.request("POST", path, body, {"Content-Type": "application/n-quads"})
        if status == 202:
            outcome.posted += len(payload)
            outcome.pairs += len(payload) // 2
        else:
            outcome.refused += 1
    outcome.elapsed = time.monotonic() - start


def _wait_caught_up(client: Client, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        _, body = client.request("GET", "/queries")
        listed = json.loads(body)["queries"]
        if all(q["lag"] == 0 for q in listed):
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"the queries did not catch up in {timeout} s")
        time.sleep(0.2)


def _read_latencies(client: Client, outcome: Outcome) -> None:
    _, body = client.request("POST", "/sparql", urllib.parse.urlencode({"query": MATCHES}).encode(),
                                  {"Content-Type": "application/x-www-form-urlencoded",
                                   "Accept": "application/sparql-results+json"})  # fmt: skip
    rows = json.loads(body)["results"]["bindings"]
    outcome.matches = len(rows)
    for row in rows:  # the match's end is the close's timestamp, the wall clock when it was sent
        detected = datetime.fromisoformat(row["t"]["value"].replace("Z", "+00:00")).timestamp()
        sent = datetime.fromisoformat(row["end"]["value"].replace("Z", "+00:00")).timestamp()
        outcome.latencies_ms.append((detected - sent) * 1000)


def report(outcomes: Sequence[Outcome]) -> None:
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    print(
        "| queries | events/s posted | refused | matches / expected | p50 ms | p95 ms | p99 ms | max ms "
        "| catch-up s | RSS MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for o in outcomes:
        lat = o.latencies_ms
        cells = [percentile(lat, p) if lat else float("nan") for p in (50, 95, 99, 100)]
        print(
            f"| {o.queries} | {o.posted / o.elapsed:,.0f} | {o.refused} | {o.matches:,} / {o.pairs:,} | "
            + " | ".join(f"{c:,.0f}" for c in cells)
            + f" | {o.catch_up:.1f} | {o.rss_mb:,.0f} |"
        )
    last = outcomes[-1]
    rate = last.posted / last.elapsed
    p99 = percentile(last.latencies_ms, 99) if last.latencies_ms else float("inf")
    verdict = (
        "met"
        if rate >= TARGET_RATE * 0.98 and p99 <= TARGET_P99_MS and last.matches == last.pairs
        else "NOT met"
    )
    print(
        f"target at {last.queries} queries: >= {TARGET_RATE:,.0f} events/s, p99 <= {TARGET_P99_MS:,.0f} ms, "
        f"every match: {verdict} ({rate:,.0f} events/s, p99 {p99:,.0f} ms)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", default="1,10,100", help="query counts, comma-separated")
    parser.add_argument("--rate", type=float, default=TARGET_RATE, help="events/s posted")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of load per count")
    parser.add_argument("--batch", type=int, default=20, help="events per request (even)")
    parser.add_argument("--quick", action="store_true", help="2 and 5 queries, 100 events/s, 3 s")
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.queries.split(",")]
    rate, duration = args.rate, args.duration
    if args.quick:
        counts, rate, duration = [2, 5], 100.0, 3.0
    outcomes = []
    for count in counts:
        outcome = run(count, rate, duration, max(2, args.batch - args.batch % 2))
        outcomes.append(outcome)
        report(outcomes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
