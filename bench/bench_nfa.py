"""The NFA stage alone: the general runtime, the lean runtime and a plain-Python floor on the
same GPM rows; and the memory of skip-till-any Kleene+ with and without the shared buffer.

Part 1, throughput. The stock workload (bench/common.py: a random walk of prices, every tick
each company reports) goes through the real parse and GPM stage once, batch by batch
(`Replay`'s batches of 5,000 events); each batch's rows are then given, in turns, to

- **current**: `KeyedNfa.step` on the general runtime (`Runtime`: rows grouped by key
  (`groups_by_key`), `process`, `advance_time`); its `process`/`advance_time` alone is
  printed too ("current, runtime only", the figure the issue quotes);
- **lean**: `KeyedNfa.step` as shipped (`runtime_for`: the lean runtime, rows grouped while
  their shapes are planned);
- **floor**: a plain-Python run-list loop written for this one query (runs as tuples in a list
  per key, prices parsed once per term with `float`, the matches built as the engines build
  them), over the same rows: what a loop with nothing general in it costs.

Each is timed in CPU seconds of this process, the engines taking turns per batch, with the
garbage collector's view of the loaded rows frozen (`gc.freeze`) so that no engine pays for
the others' heap. All three must find the same matches (events, times, ranks, mappings, in
detection order): a difference aborts the run. Queries: the V-shape `SEQ (A, B+, C)` (strict)
with one company and with 20, and its skip-till-next variant `SEQ (A; B+; C)`.

Part 2, memory. `SEQ (A: B+: C)` WITHIN 2 days over n events one second apart, each an A and
a B, no C: the general runtime holds a run per (A, first B, last B), n³/6; the shared buffer
the window's rows. Printed per n: runs or rows held and the peak of Python's allocations
(`tracemalloc`) while processing; then one C, and what the buffer reports (at most
`match_limit` matches) and how long it takes.

Run from the repository root:
    .venv/bin/python -m bench.bench_nfa                 # about 10 minutes on 2 busy cores
    .venv/bin/python -m bench.bench_nfa --quick         # small sizes: checks the script
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.bench_engine import describe_machine
from bench.common import compile_text, current_engine, stock
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.nfa.buffer_state import BufferState
from rsep.plugin.nfa.keyed import KeyedNfa, KeyedState, in_detection_order
from rsep.plugin.nfa.lean import LeanRuntime
from rsep.plugin.nfa.runtime import Match, Runtime
from rsep.plugin.nfa.shared_buffer import BufferRuntime
from rsep.plugin.numbering import NumberedEvent
from rsep.plugin.replay import batches
from rsep.plugin.store.gpm_stage import GpmEvaluator

CPU = time.process_time
STRICT = "SEQ(A, B+, C) strict"
NEXT = "SEQ(A; B+; C) skip-till-next"

Rows = Mapping[int, Sequence[tuple[int, Mapping[str, str]]]]
Found = tuple[tuple[int, ...], float, float, int, int, tuple[tuple[str, str], ...]]
"""A match as the engines and the floor are compared: events, times, ranks, sorted mapping."""


# ---------------------------------------------------------------------- the floor


def _number(term: str, cache: dict[str, float]) -> float:
    value = cache.get(term)
    if value is None:
        value = cache[term] = float(term[1 : term.index('"', 1)])
    return value


class Floor:
    """The V-shape as a plain loop: per key a list of runs `(start time, start rank, last
    rank, p1, A's mapping, B's mapping or None, path)`, `path` a linked list of events. Strict:
    a run lives one rank; skip-till-next (`next_only`): a run waits for the first B below its
    p1, and after a B for the first C above it (or the next B, strictly)."""

    def __init__(self, within: float, next_only: bool) -> None:
        self.within, self.next_only = within, next_only
        self.runs: dict[str, tuple[list[Any], list[Any], list[Any]]] = {}
        """Per key: runs after A (waiting for B), after B (waiting for C), after B (waiting for B)."""
        self.prices: dict[str, float] = {}

    def step(self, rows: Rows, events: Mapping[int, NumberedEvent]) -> list[Found]:
        by_key: dict[str, dict[int, list[Any]]] = {}
        for gpm, gpm_rows in rows.items():
            for event, mapping in gpm_rows:
                numbered = events[event]
                per_rank = by_key.setdefault(mapping["company"], {})
                group = per_rank.get(numbered.rank)
                if group is None:
                    group = per_rank[numbered.rank] = [numbered.event.time.seconds, None, None, None]
                group[1 + gpm] = (event, mapping)
        found: list[Found] = []
        for key, per_rank in by_key.items():
            state = self.runs.get(key)
            if state is None:
                state = self.runs[key] = ([], [], [])
            for rank in sorted(per_rank):
                found.extend(self._group(state, rank, per_rank[rank]))
            self.runs[key] = state
        return found

    def _group(
        self, state: tuple[list[Any], list[Any], list[Any]], rank: int, group: list[Any]
    ) -> list[Found]:
        when, a, b, c = group
        after_a, wait_c, wait_b = state
        horizon = when - self.within
        strict = not self.next_only
        pb = _number(b[1]["p2"], self.prices) if b is not None else None
        pc = _number(c[1]["p3"], self.prices) if c is not None else None
        found: list[Found] = []
        born: list[Any] = []
        kept_a: list[Any] = []
        kept_c: list[Any] = []
        for run in after_a:  # waiting for a B below p1: strictly next, or the first one
            if run[0] < horizon or (strict and run[2] != rank - 1):
                continue
            if pb is not None and pb < run[3]:
                born.append((run[0], run[1], rank, run[3], run[4], b[1], (b[0], run[6])))
            elif not strict:
                kept_a.append(run)
        for run in wait_b:  # after a B, another B below p1, strictly next
            if run[0] >= horizon and run[2] == rank - 1 and pb is not None and pb < run[3]:
                born.append((run[0], run[1], rank, run[3], run[4], b[1], (b[0], run[6])))
        for run in wait_c:  # after a B, a C above p1: strictly next, or the first one
            if run[0] < horizon or (strict and run[2] != rank - 1):
                continue
            if pc is not None and pc > run[3]:
                found.append(_match(run, c, when, rank))
            elif not strict:
                kept_c.append(run)
        if a is not None:
            kept_a.append((when, rank, rank, _number(a[1]["p1"], self.prices), a[1], None, (a[0], None)))
        after_a[:] = kept_a
        wait_c[:] = kept_c + born
        wait_b[:] = born
        return found

    def advance(self, rank: int, clock: float) -> None:
        horizon = clock - self.within
        for key, (after_a, wait_c, wait_b) in list(self.runs.items()):
            strict = not self.next_only
            for runs, gap in ((after_a, strict), (wait_c, strict), (wait_b, True)):
                runs[:] = [r for r in runs if r[0] >= horizon and (not gap or r[2] >= rank)]
            if not (after_a or wait_c or wait_b):
                del self.runs[key]


def _match(run: tuple[Any, ...], c: tuple[int, Mapping[str, str]], when: float, rank: int) -> Found:
    events = [c[0]]
    node = run[6]
    while node is not None:
        events.append(node[0])
        node = node[1]
    mapping = {**run[4], **run[5], **c[1]}
    return (tuple(reversed(events)), run[0], when, run[1], rank, tuple(sorted(mapping.items())))


# ---------------------------------------------------------------------- engines


def found_of(matches: Iterable[Match]) -> list[Found]:
    return [
        (m.events, m.start_time, m.end_time, m.start_rank, m.end_rank, tuple(sorted(m.mapping.items())))
        for m in in_detection_order(matches)
    ]


class _Timed:
    """Forwards to a `Runtime`, timing `process` and `advance_time` (the issue's figure)."""

    def __init__(self, inner: Runtime) -> None:
        self.inner, self.seconds = inner, 0.0

    def new_state(self) -> Any:
        return self.inner.new_state()

    def process(self, state: Any, groups: Any) -> Any:
        start = CPU()
        try:
            return self.inner.process(state, groups)
        finally:
            self.seconds += CPU() - start

    def advance_time(self, state: Any, rank: int, when: float) -> Any:
        start = CPU()
        try:
            return self.inner.advance_time(state, rank, when)
        finally:
            self.seconds += CPU() - start


@dataclass
class Engine:
    label: str
    step: Callable[[Rows, Mapping[int, NumberedEvent], int, float], list[Found]]
    seconds: float = 0.0


def engines(plan: Any, next_only: bool) -> tuple[list[Engine], _Timed]:
    general = KeyedNfa(plan.automaton, plan.key)
    timed = _Timed(Runtime(plan.automaton))
    general.runtime = timed  # type: ignore[assignment]
    general_state = KeyedState()
    lean = KeyedNfa(plan.automaton, plan.key)
    assert isinstance(lean.runtime, LeanRuntime) and not isinstance(lean.runtime, BufferRuntime)
    lean_state = KeyedState()
    floor = Floor(plan.automaton.within, next_only)

    def step_general(rows: Rows, events: Mapping[int, NumberedEvent], rank: int, clock: float) -> list[Found]:
        return found_of(general.step(general_state, rows, events, rank, clock, tentative=False))

    def step_lean(rows: Rows, events: Mapping[int, NumberedEvent], rank: int, clock: float) -> list[Found]:
        return found_of(lean.step(lean_state, rows, events, rank, clock, tentative=False))

    def step_floor(rows: Rows, events: Mapping[int, NumberedEvent], rank: int, clock: float) -> list[Found]:
        found = floor.step(rows, events)
        floor.advance(rank, clock)
        return sorted(found, key=lambda f: (f[4], f[3], f[0], f[5]))

    return [Engine("current", step_general), Engine("lean", step_lean), Engine("floor", step_floor)], timed


def throughput(companies: int, ticks: int, label: str) -> None:
    workload = stock(companies=companies, ticks=ticks)
    plan = compile_text(workload.queries[label])
    started = CPU()
    events = current_engine().parse(workload)
    evaluator = GpmEvaluator(plan.gpms)
    prepared = CPU() - started
    listed, timed = engines(plan, label == NEXT)
    gpm_seconds = 0.0
    matches = 0
    gc.collect()
    gc.freeze()
    for batch in batches(events, 5000):
        start = CPU()
        rows = evaluator.evaluate((n.id, n.event) for n in batch)
        gpm_seconds += CPU() - start
        numbered = {n.id: n for n in batch}
        last = batch[-1]
        results = []
        for engine in listed:
            start = CPU()
            found = engine.step(rows, numbered, last.rank, last.event.time.seconds)
            engine.seconds += CPU() - start
            results.append(found)
        if any(found != results[0] for found in results[1:]):
            sys.exit(f"FAILED: the engines find different matches ({label}, {companies} companies)")
        matches += len(results[0])
    gc.unfreeze()
    count = len(events)
    print(f"\n--- {label}, {companies} companies x {ticks} ticks: {count} events, {matches} matches")
    print(f"  (parse {prepared:.1f} s and GPM stage {gpm_seconds:.1f} s, not counted)")
    current, floor = listed[0].seconds, listed[2].seconds
    print(f"  {'NFA stage':<34}{'CPU s':>9}{'events/s':>12}{'vs current':>12}{'vs floor':>10}")
    rows = [("current, runtime only", timed.seconds), *((e.label, e.seconds) for e in listed)]
    for name, seconds in rows:
        print(
            f"  {name:<34}{seconds:9.2f}{count / seconds:12,.0f}"
            f"{'x' + format(current / seconds, '.2f'):>12}{'x' + format(floor / seconds, '.2f'):>10}"
        )


# ---------------------------------------------------------------------- memory


_ANY = """\
PREFIX pred: <http://example.org/stock#>
SELECT * WITHIN 2 DAYS
FROM STREAM S1 <http://example.org/stocks>
WHERE {
  SEQ (A: B+: C)
  DEFINE GPM A ON S1 { ?company pred:price ?p1 . }
  DEFINE GPM B ON S1 { ?company pred:price ?p2 . }
  DEFINE GPM C ON S1 { ?company pred:alarm ?p3 . }
}
"""
COMPANY = "<http://example.org/company/C0>"


def any_events(
    n: int, c: bool
) -> tuple[dict[int, list[tuple[int, dict[str, str]]]], dict[int, NumberedEvent]]:
    """n events one second apart, each an A and a B (the GPM rows they would make), then a C."""
    rows: dict[int, list[tuple[int, dict[str, str]]]] = {0: [], 1: [], 2: []}
    events: dict[int, NumberedEvent] = {}
    for i in range(n + (1 if c else 0)):
        stamp = Timestamp(float(i), str(i), True)
        events[i] = NumberedEvent(i, i, GraphEvent("http://example.org/stocks", f"<urn:e{i}>", stamp, ""))
        price = f'"{100 + i % 7}"^^<http://www.w3.org/2001/XMLSchema#integer>'
        if i < n:
            rows[0].append((i, {"company": COMPANY, "p1": price}))
            rows[1].append((i, {"company": COMPANY, "p2": price}))
        else:
            rows[2].append((i, {"company": COMPANY, "p3": '"on"'}))
    return rows, events


def memory(sizes: Sequence[int], eager_sizes: Sequence[int]) -> None:
    plan = compile_text(_ANY)
    automaton = plan.automaton
    print("\n--- skip-till-any Kleene+ SEQ (A: B+: C) WITHIN 2 days, n events each an A and a B, no C")
    print(f"  {'n':>8}  {'runtime':<14}{'held':>14}{'peak MB':>10}{'CPU s':>9}")
    for n in sorted({*sizes, *eager_sizes}):
        rows, events = any_events(n, c=False)
        runtimes: list[tuple[str, Any]] = [("shared buffer", BufferRuntime(automaton, plan.key))]
        if n in eager_sizes:
            runtimes += [("general", Runtime(automaton)), ("lean (eager)", LeanRuntime(automaton, plan.key))]
        for name, runtime in runtimes:
            keyed = KeyedNfa(automaton, plan.key)
            keyed.runtime = runtime
            state = KeyedState()
            gc.collect()
            tracemalloc.start()
            start = CPU()
            keyed.step(state, rows, events, n - 1, float(n - 1), tentative=False)
            seconds = CPU() - start
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            (nfa,) = state.states.values()
            held = f"{nfa.held():,} rows" if isinstance(nfa, BufferState) else f"{nfa.run_count():,} runs"
            print(f"  {n:>8,}  {name:<14}{held:>14}{peak:10.1f}{seconds:9.2f}")
            del keyed, state, nfa
    n = max(sizes)
    rows, events = any_events(n, c=True)
    keyed = KeyedNfa(automaton, plan.key)
    state = KeyedState()
    start = CPU()
    found = keyed.step(state, rows, events, n, float(n), tentative=False)
    seconds = CPU() - start
    print(
        f"  then a C after the {n:,} events: {len(found):,} matches reported in {seconds:.2f} s "
        f"(limit {BufferRuntime(automaton).match_limit:,}; truncated: {state.truncated[:1]})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, to check the script")
    parser.add_argument("--ticks", type=int, default=300_000, help="events of the one-company runs")
    parser.add_argument("--no-throughput", action="store_true")
    parser.add_argument("--no-memory", action="store_true")
    args = parser.parse_args()
    print(f"rsep NFA benchmark{' --quick' if args.quick else ''}: {describe_machine()}")
    started = time.perf_counter()
    if not args.no_throughput:
        ticks = 3000 if args.quick else args.ticks
        throughput(1, ticks, STRICT)
        throughput(20, ticks // 20, STRICT)
        throughput(20, (600 if args.quick else 2500), NEXT)
    if not args.no_memory:
        if args.quick:
            memory((100, 1000), (25, 50))
        else:
            memory((100, 1_000, 10_000, 100_000), (25, 50, 100, 200))
    print(f"\ndone in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
