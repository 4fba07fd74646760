"""Where the time of a replay goes: parse, GPM (Oxigraph), NFA, grouping.

For each workload (see bench/common.py) and query it prints the number of
events and matches, the events/s of the in-process replay end to end (TriG
payload in memory -> matches: file IO excluded) and of the Spark stage
(`SparkReplay` on local[2], warm: the second of two runs), the split of the
in-process time, the peak number of active runs, and in the same run:

- the baseline engine: rdfio, gpm, runtime and replay as committed in
  BASELINE_REV (before the performance work), loaded next to the current
  ones, with the current/baseline speed-up per stage;
- the naive GPM stage (one fresh Oxigraph store per event) against the
  batched one.

Every engine must produce the same matches; a difference aborts the run.

Run from the repository root:
    .venv/bin/python -m bench.bench_engine [--quick] [--no-spark] [--no-baseline]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyoxigraph

from bench.common import (
    BASELINE_REV,
    Engine,
    Timings,
    Workload,
    clock,
    compile_text,
    credit_card,
    current_engine,
    load_revision,
    match_tuples,
    replay,
    stock,
)
from rsep.plugin.compile.plan import QueryPlan


@dataclass
class Measured:
    """One engine's in-process replay of one query."""

    parse: float
    timings: Timings
    matches: list[tuple[object, ...]]

    @property
    def total(self) -> float:
        return self.parse + self.timings.total

    @property
    def other(self) -> float:
        return self.timings.total - self.timings.gpm - self.timings.nfa


REPEAT_BUDGET = 10.0
"""Seconds after which a measurement is not repeated any more."""


def best_of(repeat: int, function: Any) -> Any:
    """The fastest of up to `repeat` calls of `function() -> (result, seconds)`,
    stopping early once REPEAT_BUDGET seconds were spent."""
    best, spent = None, 0.0
    for _ in range(repeat):
        result = function()
        spent += result[1]
        if best is None or result[1] < best[1]:
            best = result
        if spent > REPEAT_BUDGET:
            break
    return best


def measure(
    engine: Engine, plan: QueryPlan, events: Sequence[Any], parse: float, repeat: int, **options: Any
) -> Measured:
    """The fastest of `repeat` timed replays (its split and peak run count)."""

    def once() -> tuple[tuple[list[Any], Timings], float]:
        matches, timings = replay(engine, plan, events, timed=True, **options)
        return (matches, timings), timings.total

    (matches, timings), _ = best_of(repeat, once)
    return Measured(parse, timings, match_tuples(matches))


def spark_run(plan: QueryPlan, events: Sequence[Any], master: str) -> tuple[list[tuple[object, ...]], float]:
    """Warm timing: the first run pays for the Python workers and the code
    paths the JVM compiles; the second one is timed."""
    from rsep.plugin.spark.session import get_session
    from rsep.plugin.spark.stage import SparkReplay
    from rsep.plugin.store.gpm import KnowledgeBase

    stage = SparkReplay(plan, KnowledgeBase(), get_session(master))
    stage.run(events)
    matches, seconds = clock(lambda: stage.run(events))
    return match_tuples(matches), seconds


def ratio(before: float, after: float) -> str:
    return f"x{before / after:.2f}" if after > 0 else "-"


def rate(events: int, seconds: float) -> str:
    return f"{events / seconds:,.0f}" if seconds > 0 else "-"


def check(label: str, expected: list[tuple[object, ...]], got: list[tuple[object, ...]]) -> None:
    if got != expected:
        sys.exit(f"FAILED: {label} gives {len(got)} matches that differ from the current engine's {len(expected)}")


def bench_workload(workload: Workload, engines: list[Engine], args: argparse.Namespace) -> None:
    print(f"\n=== {workload.name}: {workload.note}")
    parsed = {}
    for engine in engines:
        parsed[engine.label] = best_of(args.repeat, lambda engine=engine: clock(lambda: engine.parse(workload)))
    current, events_count = engines[0].label, workload.events
    for label, text in workload.queries.items():
        plan = compile_text(text)
        rows: dict[str, Measured] = {}
        for engine in engines:
            events, seconds = parsed[engine.label]
            rows[engine.label] = measure(engine, plan, events, seconds, args.repeat)
        now = rows[current]
        for name, measured in rows.items():
            check(f"engine {name}", now.matches, measured.matches)
        events, seconds = parsed[current]
        naive = measure(engines[0], plan, events, seconds, 1, naive=True)
        check("the naive GPM stage", now.matches, naive.matches)
        print(f"\n--- query {label}: {events_count} events, {len(now.matches)} matches, "
              f"peak active runs {now.timings.peak_runs}")
        print_split(rows, events_count)
        print(f"  GPM stage, naive (fresh store per event) {naive.timings.gpm:7.2f} s   batched "
              f"{now.timings.gpm:.2f} s   naive/batched {ratio(naive.timings.gpm, now.timings.gpm)}"
              f"   (naive end to end {rate(events_count, naive.total)} ev/s)")
        if not args.no_spark:
            spark_matches, spark_seconds = spark_run(plan, events, args.master)
            check("the Spark stage", now.matches, spark_matches)
            print(f"  Spark {args.master} (warm, second run) {spark_seconds:7.2f} s = "
                  f"{rate(events_count, spark_seconds)} ev/s; with parse {rate(events_count, seconds + spark_seconds)}"
                  f" ev/s (in-process: {ratio(spark_seconds, now.timings.total)} faster than Spark)")


def print_split(rows: dict[str, Measured], events: int) -> None:
    labels = list(rows)
    header = "".join(f"{name:>14}" for name in labels)
    speedup = "   speed-up" if len(labels) > 1 else ""
    print(f"  {'in-process, seconds':<28}{header}{speedup}")
    stages = [
        ("parse (TriG -> events)", lambda m: m.parse),
        ("GPM (Oxigraph)", lambda m: m.timings.gpm),
        ("NFA (Runtime)", lambda m: m.timings.nfa),
        ("grouping/other", lambda m: m.other),
        ("total", lambda m: m.total),
    ]
    for name, value in stages:
        cells = "".join(f"{value(m):14.3f}" for m in rows.values())
        extra = f"   {ratio(value(rows[labels[-1]]), value(rows[labels[0]]))}" if len(labels) > 1 else ""
        print(f"  {name:<28}{cells}{extra}")
    cells = "".join(f"{rate(events, m.total):>14}" for m in rows.values())
    print(f"  {'end to end, events/s':<28}{cells}")


def describe_machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as handle:
            cpu = next(line.split(":", 1)[1].strip() for line in handle if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (
        f"{time.strftime('%Y-%m-%d %H:%M %Z')}; {cpu}, {os.cpu_count()} cores; Python "
        f"{platform.python_version()}, pyoxigraph {pyoxigraph.__version__}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (< 1 minute), to check the script")
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark stage")
    parser.add_argument("--no-baseline", action="store_true", help="skip the baseline engine")
    parser.add_argument("--baseline-rev", default=BASELINE_REV, help="git revision of the baseline engine")
    parser.add_argument("--repeat", type=int, default=3, help="best of N in-process runs (default 3)")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    args = parser.parse_args()
    started = time.perf_counter()
    print(f"rsep engine benchmark{' (--quick)' if args.quick else ''}: {describe_machine()}")
    engines = [current_engine()]
    if not args.no_baseline:
        engines.append(load_revision(args.baseline_rev))
        print(f"baseline: engine modules (rdfio, gpm, runtime, replay) at {args.baseline_rev[:12]}")
    if args.quick:
        workloads = [credit_card(limit=3000), stock(companies=10, ticks=300)]
    else:
        workloads = [credit_card(), stock()]
    for workload in workloads:
        bench_workload(workload, engines, args)
    print(f"\ndone in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
