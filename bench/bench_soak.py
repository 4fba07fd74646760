"""Soak of a real `rsep serve --engine inprocess` (issue 15, item 8): does memory flat-line?

It starts the server on a fresh data folder and registers 10 continuous queries over one stream:

- 5 SPAseq `SEQ (A; B) WITHIN 10 SECONDS` (A opens a key in group g<i>, B closes it),
- 3 EP-SPARQL `{A} SEQ {B} FILTER(getDURATION() < "PT10S")` (groups g5..g7),
- 2 C-SPARQL window queries: COUNT of the opens in `[RANGE 10s STEP 5s]` and of the closes in
  `[RANGE 30s STEP 10s]` (one result graph per evaluation).

A sender posts pairs (an event opening key k_j in group j mod `--groups`, then one closing it),
`--batch` events per `POST /streams`, paced at `--rate` events/s for `--minutes`, each stamped with
the wall clock. Every `--sample` seconds a second thread reads the server's RSS
(`/proc/PID/status` VmRSS), the data folder's size on disk and the largest query lag
(`GET /queries`), and prints a row. After the load it stops posting and samples `--idle` more
seconds to show whether memory is released.

The verdict is the least-squares slope of RSS (MB/min) over the second half of the load, which
starts after the windows are full (30 s, the longest RANGE/WITHIN); the same for the data folder.
A second line gives the RSS slope over the last third, once the server's bounded caches are full
(RocksDB's block cache, the term cache: they fill for the first ~25 minutes, bench/README.md).
Matches are data that grow by design (each is a named graph in the store): with `--groups 200`
each SEQ query matches 1 pair in 200. Timings and sizes are printed, never asserted.

    .venv/bin/python -m bench.bench_soak [--quick] [--minutes 30] [--rate 1500] [--batch 30]
        [--sample 30] [--idle 60] [--groups 200] [--kinds spaseq,epsparql,csparql] [--probe FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.bench_latency import Client, Server, paced
from bench.bench_queries import event as _event
from bench.bench_queries import rss_mb

STREAM = "http://example.org/bench/stream"
FULL_AFTER_S = 30.0
"""The longest window (C-SPARQL RANGE 30s; the SEQ queries keep 10 s): memory may grow before."""
PREFIXES = "PREFIX b: <http://example.org/bench#>\nPREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"
SPASEQ = """SELECT ?k ?a ?b
WITHIN 10 SECONDS
FROM STREAM S1 <http://example.org/bench/stream>
WHERE {
  SEQ (A; B)
  DEFINE GPM A ON S1 { ?a b:opens ?k ; b:group "g%d" . }
  DEFINE GPM B ON S1 { ?b b:closes ?k . }
}
"""
EPSPARQL = """SELECT ?k ?a ?b WHERE
{ ?a b:opens ?k ; b:group "g%d" }
SEQ { ?b b:closes ?k }
FILTER ( getDURATION() < "PT10S"^^xsd:duration )
"""
CSPARQL = [
    """REGISTER QUERY opens AS
SELECT (COUNT(?a) AS ?n)
FROM STREAM <http://example.org/bench/stream> [RANGE 10s STEP 5s]
WHERE { ?a b:opens ?k }
""",
    """REGISTER QUERY closes AS
SELECT (COUNT(?b) AS ?n)
FROM STREAM <http://example.org/bench/stream> [RANGE 30s STEP 10s]
WHERE { ?b b:closes ?k }
""",
]


KINDS = ("spaseq", "epsparql", "csparql")


def queries(kinds: Sequence[str] = KINDS) -> list[str]:
    """The 10 queries: 5 SPAseq, 3 EP-SPARQL, 2 C-SPARQL (the C-SPARQL prefix after REGISTER);
    `kinds` keeps some of them (to find which one memory follows)."""
    chosen = {
        "spaseq": [PREFIXES + SPASEQ % g for g in range(5)],
        "epsparql": [PREFIXES + EPSPARQL % g for g in range(5, 8)],
        "csparql": [text.replace(" AS\n", " AS\n" + PREFIXES, 1) for text in CSPARQL],
    }
    return [text for kind in KINDS if kind in kinds for text in chosen[kind]]


@dataclass
class Sample:
    elapsed: float
    rss_mb: float
    anon_mb: float
    disk_mb: float
    posted: int
    lag: int
    phase: str


@dataclass
class Soak:
    rate: float
    seconds: float
    posted: int = 0
    refused: int = 0
    load_s: float = 0.0
    samples: list[Sample] = field(default_factory=list)


def disk_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20


class Sampler(threading.Thread):
    """RSS, disk and lag every `every` seconds, printed as they come."""

    def __init__(self, server: Server, data: Path, soak: Soak, every: float, began: float) -> None:
        super().__init__(daemon=True)
        self.server, self.data, self.soak, self.every, self.began = server, data, soak, every, began
        self.phase = "load"
        self.stopped = threading.Event()
        self.client = Client(server.port)

    def run(self) -> None:
        while not self.stopped.is_set():
            self.take()
            self.stopped.wait(self.every)

    def take(self) -> None:
        _, body = self.client.request("GET", "/queries")
        lag = max([q["lag"] or 0 for q in json.loads(body)["queries"]], default=0)
        pid = self.server.process.pid
        elapsed = time.monotonic() - self.began
        anon = rss_mb(pid, "RssAnon")
        sample = Sample(elapsed, rss_mb(pid), anon, disk_mb(self.data), self.soak.posted, lag, self.phase)
        self.soak.samples.append(sample)
        print(f"{elapsed:8.0f} {sample.rss_mb:9.1f} {sample.anon_mb:9.1f} {sample.disk_mb:9.1f} "
              f"{sample.posted:11,} {sample.lag:8,}  {sample.phase}", flush=True)  # fmt: skip


def run(
    rate: float, seconds: float, batch: int, every: float, idle: float, groups: int, kinds: Sequence[str]
) -> Soak:
    soak = Soak(rate, seconds)
    with tempfile.TemporaryDirectory(prefix="rsep-soak-") as tmp:
        data = Path(tmp) / "data"
        server = Server("inprocess", data, "local[1]")
        try:
            client = Client(server.port)
            texts = queries(kinds)
            for text in texts:
                status, body = client.request("POST", "/queries", text.encode(),
                                              {"Content-Type": "application/sparql-query"})  # fmt: skip
                if status != 201:
                    raise SystemExit(f"registering {text!r}: {status} {body[:300]!r}")
            pid = server.process.pid
            print(f"rsep serve pid {pid}, {len(texts)} queries, {rate:,.0f} events/s for {seconds:.0f} s")
            print(
                f"{'s':>8} {'RSS MB':>9} {'anon MB':>9} {'disk MB':>9} {'posted':>11} {'max lag':>8}  phase",
                flush=True,
            )
            began = time.monotonic()
            sampler = Sampler(server, data, soak, every, began)
            sampler.start()
            _send(client, soak, rate, seconds, batch, groups)
            sampler.phase = "idle"
            time.sleep(idle)
            sampler.stopped.set()
            sampler.join()
            sampler.take()
        finally:
            server.stop()
    return soak


def _send(client: Client, soak: Soak, rate: float, seconds: float, batch: int, groups: int) -> None:
    """Pairs at `rate` events/s, `batch` events a request, paced against the clock."""
    path = f"/streams?stream={urllib.parse.quote(STREAM, safe=':/')}"
    start = time.monotonic()
    index, moment = 0, 0.0
    for _ in paced(batch / rate, seconds):
        payload = []
        moment = max(time.time(), moment + 1e-5)
        for _ in range(batch // 2):
            payload.append(_event("open", index, index % groups, moment))
            payload.append(_event("close", index, index % groups, moment + 1e-5))
            moment += 2e-5
            index += 1
        body = "".join(payload).encode()
        status, _ = client.request("POST", path, body, {"Content-Type": "application/n-quads"})
        if status == 202:
            soak.posted += len(payload)
        else:
            soak.refused += 1
    soak.load_s = time.monotonic() - start


def slope_per_minute(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MB), in MB per minute."""
    if len(points) < 2:
        return float("nan")
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    sxy = sum((x - mx) * (y - my) for x, y in points)
    return 60 * sxy / sxx if sxx else float("nan")


def report(soak: Soak) -> None:
    load = [s for s in soak.samples if s.phase == "load"]
    idle = [s for s in soak.samples if s.phase == "idle"]
    half = max(FULL_AFTER_S, soak.load_s / 2)
    second = [s for s in load if s.elapsed >= half]
    print(f"machine: {os.cpu_count()} cores, load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"posted {soak.posted:,} events in {soak.load_s:.0f} s ({soak.posted / soak.load_s:,.0f} events/s, "
          f"target {soak.rate:,.0f}), {soak.refused} requests refused")  # fmt: skip
    if load:
        print(f"max lag during the load: {max(s.lag for s in load):,} events; at its end: {load[-1].lag:,}")
    rss = slope_per_minute([(s.elapsed, s.rss_mb) for s in second])
    anon = slope_per_minute([(s.elapsed, s.anon_mb) for s in second])
    disk = slope_per_minute([(s.elapsed, s.disk_mb) for s in second])
    print(f"verdict: RSS slope over the second half ({half:.0f} s on, {len(second)} samples): "
          f"{rss:+.2f} MB/min (anonymous {anon:+.2f}); "
          f"data folder {disk:+.2f} MB/min")  # fmt: skip
    third = max(FULL_AFTER_S, soak.load_s * 2 / 3)
    last = [s for s in load if s.elapsed >= third]
    print(f"RSS slope over the last third ({third:.0f} s on, {len(last)} samples): "
          f"{slope_per_minute([(s.elapsed, s.rss_mb) for s in last]):+.2f} MB/min")  # fmt: skip
    if load and idle:
        print(f"idle: RSS {load[-1].rss_mb:.1f} MB at the end of the load -> {idle[-1].rss_mb:.1f} MB after "
              f"{idle[-1].elapsed - load[-1].elapsed:.0f} s idle (lag {idle[-1].lag:,})")  # fmt: skip


def probe(out: Path) -> None:
    """Start the server with bench/probe on its PYTHONPATH: its sitecustomize samples memory into `out`."""
    folder = str(Path(__file__).resolve().parent / "probe")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (folder, os.environ.get("PYTHONPATH")) if p)
    os.environ["RSEP_PROBE_OUT"] = str(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="minutes of load")
    parser.add_argument("--rate", type=float, default=1500.0, help="events/s posted")
    parser.add_argument("--batch", type=int, default=30, help="events per request (even)")
    parser.add_argument("--sample", type=float, default=30.0, help="seconds between samples")
    parser.add_argument("--idle", type=float, default=60.0, help="seconds sampled after the load")
    parser.add_argument("--groups", type=int, default=200, help="a SEQ query matches 1 pair in this many")
    parser.add_argument("--quick", action="store_true", help="1 minute at 300 events/s, samples every 5 s")
    parser.add_argument("--kinds", default=",".join(KINDS), help="queries kept ('' for none)")
    parser.add_argument("--probe", type=Path, help="append the server's memory breakdown to this file "
                        "every 60 s (bench/probe/sitecustomize.py)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.probe is not None:
        probe(args.probe.resolve())
    minutes, rate, every, idle = args.minutes, args.rate, args.sample, args.idle
    if args.quick:
        minutes, rate, every, idle = 1.0, 300.0, 5.0, 15.0
    kinds = [kind for kind in args.kinds.split(",") if kind]
    soak = run(rate, minutes * 60, max(2, args.batch - args.batch % 2), every, idle, args.groups, kinds)
    report(soak)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
