"""The GPM stage alone: the fast path (simple GPMs matched in Python) against the Oxigraph path.

For each workload (bench/common.py) and query it replays the GPM stage the way `Replay` calls it
(batches of 5,000 events that never split a timestamp, each batch's rows dropped once counted,
as the NFA consumes them) and prints events/s for, measured in the same run:

- **Oxigraph path**: `GpmEvaluator(plan.gpms, fast=False)`, every GPM through a batch store;
- **fast path**: `GpmEvaluator(plan.gpms)`, the simple GPMs matched in Python
  (rsep.plugin.store.fast_gpm), with the events it hands back to Oxigraph counted;
- **floor**: what no Oxigraph-based GPM stage can beat: the batch loaded into an in-memory store
  (`Store.extend(parse(N-Quads))`) and the plan's event queries run, rows as dicts of
  `str(term)`, nothing else (no event ids, no joins);

and the ratios fast/Oxigraph and fast/floor. Then, per workload, the in-process replay (parse
excluded: GPM stage, NFA, grouping) with each path, with the matches checked equal: what the fast
path buys end to end, and whether the NFA notices the other rows (their terms are shared string
objects, from the fast path's term cache). Times are CPU seconds of this process
(`time.process_time`), each the best of --repeat runs with the variants taking turns, after a
full garbage collection; the fast path's rows are checked against the Oxigraph path's (the same
bag of rows per GPM) before anything is timed. With --no-gc the collector is off while timing
(what the stage costs without the collections its allocations trigger, which depend on the
whole heap).

Run from the repository root:
    .venv/bin/python -m bench.bench_gpm [--quick] [--repeat N] [--no-gc] [--no-replay]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyoxigraph as ox

from bench.bench_engine import describe_machine
from bench.common import (
    CPU,
    Timings,
    Workload,
    compile_text,
    credit_card,
    current_engine,
    digest,
    replay,
    stock,
)
from rsep.plugin.compile.gpm_plan import EVENT_GRAPH_PREFIX
from rsep.plugin.compile.query_plan import QueryPlan
from rsep.plugin.graph_events import GraphEvent
from rsep.plugin.replay import batches
from rsep.plugin.store import fast_gpm
from rsep.plugin.store.gpm_stage import GpmEvaluator
from rsep.plugin.store.rdfio import batch_nquads

Batch = list[tuple[int, GraphEvent]]


@dataclass
class Result:
    label: str
    events: int
    rates: dict[str, float]
    rows: int
    fallbacks: int


def oxigraph_path(plan: QueryPlan, batches: Sequence[Batch]) -> int:
    evaluator = GpmEvaluator(plan.gpms, fast=False)
    return sum(len(rows) for batch in batches for rows in evaluator.evaluate(batch).values())


def fast_path(plan: QueryPlan, batches: Sequence[Batch]) -> int:
    """(Its term cache emptied first: the runs repeat one stream, a live one brings new terms.)"""
    fast_gpm.forget_terms()
    evaluator = GpmEvaluator(plan.gpms)
    return sum(len(rows) for batch in batches for rows in evaluator.evaluate(batch).values())


def floor(plan: QueryPlan, batches: Sequence[Batch]) -> int:
    count = 0
    for batch in batches:
        store = ox.Store()
        store.extend(ox.parse(batch_nquads(batch, EVENT_GRAPH_PREFIX), ox.RdfFormat.N_QUADS))
        for gpm in plan.gpms:
            result = store.query(gpm.event_query)
            assert isinstance(result, ox.QuerySolutions)
            names = [variable.value for variable in result.variables]
            count += len([{n: str(t) for n, t in zip(names, s, strict=True)} for s in result])
    return count


VARIANTS: dict[str, Callable[[QueryPlan, Sequence[Batch]], int]] = {
    "Oxigraph path": oxigraph_path,
    "fast path": fast_path,
    "floor": floor,
}


def timed(run: Callable[[], int], no_gc: bool) -> float:
    gc.collect()
    if no_gc:
        gc.disable()
    try:
        start = CPU()
        run()
        return CPU() - start
    finally:
        gc.enable()


def check(plan: QueryPlan, batches: Sequence[Batch]) -> tuple[int, int]:
    """The fast path's rows are the Oxigraph path's (a bag per GPM and batch); (rows, events
    the fast path handed to Oxigraph)."""
    reference, fast = GpmEvaluator(plan.gpms, fast=False), GpmEvaluator(plan.gpms)
    count = 0
    for batch in batches:
        expected, got = reference.evaluate(batch), fast.evaluate(batch)
        assert {k: sorted(map(repr, v)) for k, v in got.items()} == {
            k: sorted(map(repr, v)) for k, v in expected.items()
        }, "the fast path's rows differ from the Oxigraph path's"
        count += sum(len(rows) for rows in got.values())
    simple = [g.name for g in plan.gpms if g.simple is not None]
    assert simple, "no GPM of this query is simple"
    return count, sum(fast.stats.fallbacks.values())


def measure(label: str, workload: Workload, query: str, args: argparse.Namespace) -> Result:
    events: list[Any] = current_engine().parse(workload)
    plan = compile_text(workload.queries[query])
    sliced = [[(n.id, n.event) for n in batch] for batch in batches(events, 5000)]
    rows, fallbacks = check(plan, sliced)
    best: dict[str, float] = {}
    for _ in range(args.repeat):
        for name, variant in VARIANTS.items():
            seconds = timed(lambda variant=variant: variant(plan, sliced), args.no_gc)  # type: ignore[misc]
            best[name] = min(best.get(name, seconds), seconds)
    return Result(label, len(events), {name: len(events) / s for name, s in best.items()}, rows, fallbacks)


@dataclass
class Replayed:
    label: str
    events: int
    gpm: dict[str, float]
    nfa: dict[str, float]
    total: dict[str, float]


def replayed(label: str, workload: Workload, query: str, args: argparse.Namespace) -> Replayed:
    engine = current_engine()
    events: list[Any] = engine.parse(workload)
    plan = compile_text(workload.queries[query])
    found: dict[str, tuple[int, str]] = {}
    best: dict[str, Timings] = {}
    for _ in range(args.repeat):
        for name, fast in (("Oxigraph path", False), ("fast path", True)):
            fast_gpm.forget_terms()
            matches, timings = replay(engine, plan, events, fast=fast)
            found[name] = digest(matches)
            if name not in best or timings.total < best[name].total:
                best[name] = timings
    assert found["fast path"] == found["Oxigraph path"], "the paths give other matches"
    return Replayed(
        label,
        len(events),
        {name: t.gpm for name, t in best.items()},
        {name: t.nfa for name, t in best.items()},
        {name: t.total for name, t in best.items()},
    )


def report_replays(results: list[Replayed]) -> None:
    print("\n  in-process replay (parse excluded), CPU seconds: Oxigraph path / fast path")
    print(f"  {'workload':<34}{'GPM stage':>18}{'NFA':>18}{'total':>18}{'events/s':>22}{'speed-up':>10}")
    for r in results:
        pair = [
            f"{values['Oxigraph path']:.3f} / {values['fast path']:.3f}" for values in (r.gpm, r.nfa, r.total)
        ]
        rates = f"{r.events / r.total['Oxigraph path']:,.0f} / {r.events / r.total['fast path']:,.0f}"
        speed_up = f"x{r.total['Oxigraph path'] / r.total['fast path']:.2f}"
        print(f"  {r.label:<34}{pair[0]:>18}{pair[1]:>18}{pair[2]:>18}{rates:>22}{speed_up:>10}")


def report(results: list[Result]) -> None:
    names = list(VARIANTS)
    print(
        f"\n  {'workload':<34}{'events':>8}{'rows':>9}"
        + "".join(f"{name:>15}" for name in names)
        + f"{'fast/Oxigraph':>15}{'fast/floor':>12}{'handed back':>13}"
    )
    for r in results:
        cells = "".join(f"{r.rates[name]:>15,.0f}" for name in names)
        fast = r.rates["fast path"]
        versus_oxigraph = f"x{fast / r.rates['Oxigraph path']:.2f}"
        versus_floor = f"x{fast / r.rates['floor']:.2f}"
        print(
            f"  {r.label:<34}{r.events:>8}{r.rows:>9}{cells}"
            f"{versus_oxigraph:>15}{versus_floor:>12}{r.fallbacks:>13}"
        )
    print("  (events/s in CPU time; 'handed back': events of simple GPMs matched in Oxigraph instead)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: to check the script")
    parser.add_argument("--repeat", type=int, default=5, help="best of N runs of each variant (default 5)")
    parser.add_argument("--no-gc", action="store_true", help="the garbage collector off while timing")
    parser.add_argument("--no-replay", action="store_true", help="skip the end-to-end replays")
    args = parser.parse_args()
    if args.quick:
        args.repeat = 1
    ticks = 200 if args.quick else 2500
    strict = "SEQ(A, B+, C) strict"
    workloads = [
        ("stock V-shape, 1 company", stock(companies=1, ticks=ticks * 20), strict),
        ("stock V-shape, 20 companies", stock(companies=20, ticks=ticks), strict),
        (
            "credit card SEQ(A; B)",
            credit_card(limit=2000 if args.quick else None),
            "SEQ(A; B) amount2<amount1",
        ),
    ]
    print(f"rsep GPM stage benchmark{' --quick' if args.quick else ''}: {describe_machine()}")
    started = time.perf_counter()
    results = [measure(label, workload, query, args) for label, workload, query in workloads]
    report(results)
    if not args.no_replay:
        report_replays([replayed(label, workload, query, args) for label, workload, query in workloads])
    print(f"\ndone in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
