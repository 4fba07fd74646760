"""The V-shape workload of `bench_throughput.py`, written to files that whole processes read.

One company's price, a seeded random walk (the formula of `bench.common.stock`: each tick
multiplies the price by 1 + N(0, 0.004), 2 decimals, with a volume beside it), **one event per
minute**: event i is stamped 60 i (a number of seconds, as `rsep run` reads it), so a match of
WITHIN 1 HOURS spans at most 61 events (A at 0, C at 3600: WITHIN is inclusive). `--tick 1`
(event i at i seconds) makes the window 3,601 events: the same pattern then keeps about ten
times as many runs alive. The same stream is written three ways:

- `ticks.trig`: one named graph per event, `prov:generatedAtTime 60 i` beside it (`rsep run`);
- `ticks.csv`: `60 i,company,price,volume` (Flink's filesystem source);
- `vshape.rq`: `SEQ (A, B+, C)` (B: price below A's, C: price above A's) under strict
  contiguity; `query(": ")` is the same pattern under skip-till-any.

`expected_matches` is an oracle for the strict query written from the definitions (SPAseq Defs.
12-14, docs/semantics.md): every event can be A; B+ is one or more *contiguous* events priced
below A's, each number of occurrences a match of its own; C is the event right after the last B,
priced above A's; WITHIN holds when C's time - A's time <= the window. The event after a B run is
either another B or ends every run of that A, so each A has at most one match: the first event
after A not priced below A's, if it is priced above A's and within the window.

Flink's `MATCH_RECOGNIZE` gives that answer set with `PATTERN (A B+ C)` (strict contiguity is its
default), `AFTER MATCH SKIP TO NEXT ROW` (every row may start a match, also rows inside an earlier
match), B+ greedy (B and C exclude each other, so greedy and reluctant take the same rows) and
`WITHIN` one second longer than SPAseq's: Flink drops a partial match once last - first >= the
interval (exclusive), SPAseq keeps C's time - A's time <= WITHIN (inclusive), and the timestamps
are whole seconds. The watermark trails the newest row by a millisecond: Flink's CEP operator
drops a row whose timestamp is not after the watermark, so with a watermark equal to the newest
time the other companies' rows of a tick (`--companies`) would be dropped as late.
`FLINK_SCRIPT` is the job, run in PyFlink's own virtualenv.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

STREAM = "http://example.org/stocks"
WITHIN_SECONDS = 3600
SEED = 12
TICK_SECONDS = 60

PREFIXES = """\
@prefix s: <http://example.org/stock#> .
@prefix c: <http://example.org/company/> .
@prefix e: <urn:bench:e> .
@prefix prov: <http://www.w3.org/ns/prov#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
"""

QUERY = """\
PREFIX pred: <http://example.org/stock#>
SELECT ?company ?p1 ?p2 ?p3
WITHIN %(within)s
FROM STREAM S1 <http://example.org/stocks>
WHERE {
  SEQ (A%(sep)sB+%(sep)sC)
  DEFINE GPM A ON S1 { ?company pred:price ?p1 ; pred:volume ?v1 . }
  DEFINE GPM B ON S1 { ?company pred:price ?p2 ; pred:volume ?v2 . FILTER (?p2 < ?p1) }
  DEFINE GPM C ON S1 { ?company pred:price ?p3 ; pred:volume ?v3 . FILTER (?p3 > ?p1) }
}
"""


def query(separator: str = ", ", within: str = "1 HOURS") -> str:
    """The V-shape query: `, ` strict contiguity, `: ` skip-till-any, `; ` skip-till-next."""
    return QUERY % {"sep": separator, "within": within}


@dataclass(frozen=True)
class Files:
    folder: Path
    events: int
    trig: Path
    csv: Path
    query: Path
    matches: int
    """`expected_matches` of the prices written."""
    tick: int
    """Seconds between two events."""


def _walk(events: int, seed: int) -> list[tuple[float, int]]:
    rng = random.Random(seed)
    price = rng.uniform(20, 200)
    ticks = []
    for _ in range(events):
        price = max(1.0, price * (1 + rng.gauss(0, 0.004)))
        ticks.append((round(price, 2), rng.randint(100, 10_000)))
    return ticks


def write(folder: Path, events: int, seed: int = SEED, tick: int = TICK_SECONDS, companies: int = 1) -> Files:
    """The stream of `events` ticks as TriG and CSV, and the strict query, in `folder`. With
    several `companies`, each has its own walk (seed + its number) and all tick together: tick t
    is stamped t * `tick` for every company, so the query's partition key (?company) splits the
    stream into walks whose events are strictly contiguous (one rank per tick, docs/semantics.md,
    "Ranks"), as Flink's PARTITION BY company sees them."""
    folder.mkdir(parents=True, exist_ok=True)
    ticks = events // companies
    walks = [_walk(ticks, seed + company) for company in range(companies)]
    trig, csv, rq = folder / "ticks.trig", folder / "ticks.csv", folder / "vshape.rq"
    with trig.open("w") as out, csv.open("w") as table:
        out.write(PREFIXES)
        for t in range(ticks):
            for company, walk in enumerate(walks):
                price, volume = walk[t]
                i = t * companies + company
                out.write(
                    f'e:{i} {{ c:C{company} s:price "{price:.2f}"^^xsd:double ; s:volume {volume} . }}\n'
                    f"e:{i} prov:generatedAtTime {t * tick} .\n"
                )
                table.write(f"{t * tick},C{company},{price:.2f},{volume}\n")
    rq.write_text(query())
    matches = sum(expected_matches([p for p, _ in walk], WITHIN_SECONDS // tick) for walk in walks)
    return Files(folder, ticks * companies, trig, csv, rq, matches, tick)


def expected_matches(prices: list[float], within: int) -> int:
    """Matches of the strict V-shape over prices one tick apart, `within` ticks the window (see
    the module docstring)."""
    count, n = 0, len(prices)
    for a, pa in enumerate(prices):
        after = a + 1
        while after < n and prices[after] < pa and after - a <= within:
            after += 1
        if after > a + 1 and after < n and prices[after] > pa and after - a <= within:
            count += 1
    return count


FLINK_SCRIPT = '''\
"""The V-shape in Flink SQL MATCH_RECOGNIZE over a CSV file; prints the number of matches.

usage: python flink_vshape.py CSV WITHIN_MS PARALLELISM (written by bench/bench_throughput.py)
The count is a COUNT(*) aggregate inside Flink (mini-batched, so the client receives a few
updates, not one per match); the last value the client reads is the total.
"""
import sys

from pyflink.table import EnvironmentSettings, TableEnvironment

path, within_ms, parallelism = sys.argv[1], int(sys.argv[2]), sys.argv[3]
env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
config = env.get_config()
config.set("parallelism.default", parallelism)
config.set("table.exec.mini-batch.enabled", "true")
config.set("table.exec.mini-batch.allow-latency", "1 s")
config.set("table.exec.mini-batch.size", "100000")
env.execute_sql(f"""
CREATE TABLE ticks (
  ts BIGINT, company STRING, price DOUBLE, volume INT,
  rowtime AS TO_TIMESTAMP_LTZ(ts, 0),
  WATERMARK FOR rowtime AS rowtime - INTERVAL '0.001' SECOND
) WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv')""")
seconds, millis = divmod(within_ms, 1000)
count = None
with env.execute_sql(f"""
SELECT COUNT(*) FROM ticks MATCH_RECOGNIZE (
  PARTITION BY company
  ORDER BY rowtime
  MEASURES A.price AS p1, LAST(B.price) AS p2, C.price AS p3
  ONE ROW PER MATCH
  AFTER MATCH SKIP TO NEXT ROW
  PATTERN (A B+ C) WITHIN INTERVAL '{seconds}.{millis:03d}' SECOND(9, 3)
  DEFINE B AS B.price < A.price, C AS C.price > A.price
)""").collect() as results:
    for row in results:
        count = row[0]
print(f"matches {count or 0}")
'''
