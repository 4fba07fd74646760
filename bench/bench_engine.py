"""Where the time of a replay goes: parse, GPM stage, NFA, grouping.

For each workload (see bench/common.py) and query it prints the number of
events and matches, the events/s of the in-process replay end to end (TriG
payload in memory -> matches: file IO excluded) and of the Spark stage
(`SparkReplay` on local[2], warm: the second of two runs), the split of the
in-process time, the peak number of active runs, and, measured in the same
run:

- "no sharing": the current engine with the runtime's outcome sharing off,
  to separate that optimisation from the other NFA changes ("vs" columns are
  its time / the current one's);
- the naive GPM stage (one fresh Oxigraph store per event) against the
  batched one.

In-process stages are timed in CPU seconds of this process (robust on a
shared machine), each the best of --repeat runs with the engines
interleaved; end-to-end rates are given from CPU time and from wall-clock
time. Spark is wall-clock time (its work happens in other processes).
Every engine must produce the same matches; a difference aborts the run.
Another revision's engine is compared by bench/bench_revisions.py (whole
processes, side by side).

Run from the repository root:
    .venv/bin/python -m bench.bench_engine [--quick] [--no-spark] [--no-baseline]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyoxigraph

from bench.common import (
    Engine,
    Timings,
    Workload,
    compile_text,
    credit_card,
    current_engine,
    digest,
    parse,
    replay,
    stock,
    without_sharing,
)
from rsep.plugin.compile.query_plan import QueryPlan

REPEAT_BUDGET = 15.0
"""Wall-clock seconds per engine after which a measurement is not repeated."""


@dataclass
class Measured:
    """One engine's in-process replay of one query: CPU seconds by stage."""

    parse: float
    parse_wall: float
    timings: Timings
    digest: tuple[int, str]
    """Number of matches and their fingerprint."""

    @property
    def total(self) -> float:
        return self.parse + self.timings.total

    @property
    def wall(self) -> float:
        return self.parse_wall + self.timings.wall

    @property
    def other(self) -> float:
        return self.timings.total - self.timings.gpm - self.timings.nfa


@dataclass
class Summary:
    query: str
    events: int
    matches: int
    peak_runs: int
    cpu_rates: dict[str, float] = field(default_factory=dict)
    wall_rate: float = 0.0
    naive_ratio: float = 0.0
    spark_rate: float | None = None


def interleaved(engines: list[Engine], repeat: int, run: Callable[[Engine], Measured]) -> dict[str, Measured]:
    """Each engine's fastest (in CPU time) of up to `repeat` runs, the
    engines taking turns so that a busy spell of the machine hits them all;
    no more rounds once an engine spent REPEAT_BUDGET seconds."""
    best: dict[str, Measured] = {}
    spent = dict.fromkeys((e.label for e in engines), 0.0)
    for _ in range(max(repeat, 1)):
        for engine in engines:
            measured = run(engine)
            spent[engine.label] += measured.wall
            if engine.label not in best or measured.total < best[engine.label].total:
                best[engine.label] = measured
        if max(spent.values()) > REPEAT_BUDGET:
            break
    return best


def spark_run(plan: QueryPlan, events: Sequence[Any], master: str) -> tuple[tuple[int, str], float]:
    """Warm timing: the first run pays for starting the Python workers and
    for the JVM's first compilations; the second one is timed."""
    from rsep.plugin.spark.session import get_session
    from rsep.plugin.spark.stage import SparkReplay
    from rsep.plugin.store.kb import KnowledgeBase

    stage = SparkReplay(plan, KnowledgeBase(), get_session(master))
    stage.run(events)
    start = time.perf_counter()
    matches = stage.run(events)
    return digest(matches), time.perf_counter() - start


def ratio(before: float, after: float) -> str:
    return f"x{before / after:.2f}" if after > 0 else "-"


def rate(events: int, seconds: float) -> str:
    return f"{events / seconds:,.0f}" if seconds > 0 else "-"


def check(label: str, expected: tuple[int, str], got: tuple[int, str]) -> None:
    if got != expected:
        sys.exit(f"FAILED: {label} finds other matches than the current engine")


def bench_workload(workload: Workload, engines: list[Engine], args: argparse.Namespace) -> list[Summary]:
    print(f"\n=== {workload.name}: {workload.note}")
    events: dict[str, list[Any]] = {}

    def parse_once(engine: Engine) -> Measured:
        events[engine.label], cpu, wall = parse(engine, workload)
        return Measured(cpu, wall, Timings(), (0, ""))

    parsed = interleaved(engines, args.repeat, parse_once)
    current, count = engines[0].label, workload.events
    summaries = []
    for label, text in workload.queries.items():
        plan = compile_text(text, keyed=label not in workload.unkeyed)

        def replay_once(engine: Engine, naive: bool = False, plan: QueryPlan = plan) -> Measured:
            matches, timings = replay(engine, plan, events[engine.label], naive=naive)
            before = parsed[engine.label]
            return Measured(before.parse, before.parse_wall, timings, digest(matches))

        rows = interleaved(engines, args.repeat, replay_once)
        now = rows[current]
        for name, measured in rows.items():
            check(f"engine {name}", now.digest, measured.digest)
        naive = replay_once(engines[0], naive=True)
        check("the naive GPM stage", now.digest, naive.digest)
        timings = now.timings
        summary = Summary(label, count, now.digest[0], timings.peak_runs, wall_rate=count / now.wall)
        summary.cpu_rates = {name: count / m.total for name, m in rows.items()}
        summary.naive_ratio = naive.timings.gpm / timings.gpm
        print(
            f"\n--- {label}: {count} events, {summary.matches} matches, peak active runs {timings.peak_runs}"
        )
        print_split(rows, count)
        print(
            f"  GPM stage alone: naive (a fresh store per event) {naive.timings.gpm:.2f} s, batched "
            f"{timings.gpm:.2f} s: naive/batched {ratio(naive.timings.gpm, timings.gpm)}"
            f" (naive end to end: {rate(count, naive.total)} events/s)"
        )
        if not args.no_spark and (not args.quick or label == next(iter(workload.queries))):
            spark_digest, spark_seconds = spark_run(plan, events[current], args.master)
            check("the Spark stage", now.digest, spark_digest)
            summary.spark_rate = count / spark_seconds
            print(
                f"  Spark {args.master}, warm (second run): {spark_seconds:.2f} s wall = "
                f"{rate(count, spark_seconds)} events/s (parse excluded; with it "
                f"{rate(count, now.parse_wall + spark_seconds)} events/s); in-process replay: "
                f"{timings.wall:.2f} s wall"
            )
        summaries.append(summary)
    return summaries


def print_split(rows: dict[str, Measured], events: int) -> None:
    """CPU seconds per stage and engine, then each other engine's time over
    the current one's (> 1: the current engine is faster)."""
    labels = list(rows)
    current = rows[labels[0]]
    header = "".join(f"{name:>12}" for name in labels)
    header += "".join(f"{'vs ' + name:>15}" for name in labels[1:])
    print(f"  {'in-process CPU seconds':<24}{header}")
    stages: list[tuple[str, Callable[[Measured], float]]] = [
        ("parse (TriG -> events)", lambda m: m.parse),
        ("GPM stage", lambda m: m.timings.gpm),
        ("NFA (Runtime)", lambda m: m.timings.nfa),
        ("grouping/other", lambda m: m.other),
        ("total", lambda m: m.total),
    ]
    for name, value in stages:
        cells = "".join(f"{value(m):12.3f}" for m in rows.values())
        cells += "".join(f"{ratio(value(rows[other]), value(current)):>15}" for other in labels[1:])
        print(f"  {name:<24}{cells}")
    print(f"  {'events/s (CPU)':<24}" + "".join(f"{rate(events, m.total):>12}" for m in rows.values()))
    print(f"  {'events/s (wall clock)':<24}" + "".join(f"{rate(events, m.wall):>12}" for m in rows.values()))


def print_summary(summaries: list[Summary], labels: list[str], spark: bool) -> None:
    print("\n=== summary: end-to-end events/s (in-process: parse included; Spark: parse excluded)")
    columns = (
        [f"{label}, CPU" for label in labels]
        + ["current, wall"]
        + (["Spark, wall"] if spark else [])
        + ["naive/batched GPM"]
    )
    print(
        f"  {'query':<32}{'events':>8}{'matches':>9}{'peak runs':>10}" + "".join(f"{c:>18}" for c in columns)
    )
    for s in summaries:
        cells = "".join(f"{s.cpu_rates[label]:>18,.0f}" for label in labels) + f"{s.wall_rate:>18,.0f}"
        if spark:
            cells += f"{s.spark_rate:>18,.0f}" if s.spark_rate is not None else f"{'-':>18}"
        cells += f"{'x' + format(s.naive_ratio, '.1f'):>18}"
        print(f"  {s.query:<32}{s.events:>8}{s.matches:>9}{s.peak_runs:>10}{cells}")


def describe_machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as handle:
            cpu = next(line.split(":", 1)[1].strip() for line in handle if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load = f"load average {os.getloadavg()[0]:.2f}"
    return (
        f"{time.strftime('%Y-%m-%d %H:%M %Z')}; {cpu}, {os.cpu_count()} cores, {load}; Python "
        f"{platform.python_version()}, pyoxigraph {pyoxigraph.__version__}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small sizes, Spark for one query per workload: to check the script",
    )
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark stage")
    parser.add_argument("--no-baseline", action="store_true", help="skip the no-sharing variant")
    parser.add_argument("--repeat", type=int, help="best of N in-process runs (default 3, 1 with --quick)")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    args = parser.parse_args()
    if args.repeat is None:
        args.repeat = 1 if args.quick else 3
    started = time.perf_counter()
    print(f"rsep engine benchmark{' --quick' if args.quick else ''}: {describe_machine()}")
    current = current_engine()
    engines = [current]
    if not args.no_baseline:
        engines.append(without_sharing(current))
    if args.quick:
        workloads = [credit_card(limit=2000), stock(companies=10, ticks=200)]
    else:
        workloads = [credit_card(), stock()]
    summaries = [s for workload in workloads for s in bench_workload(workload, engines, args)]
    print_summary(summaries, [engine.label for engine in engines], not args.no_spark)
    print(f"\ndone in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
