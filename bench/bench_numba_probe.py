"""Would numba pay for the NFA's transition loop? A probe, not an engine: the strict V-shape
`SEQ (A, B+, C)` of bench/bench_nfa.py, one company, with its transitions in a numba kernel,
timed in three parts: turning the GPM rows into arrays (Python), the kernel, and building the
matches (events, mapping) back in Python. It checks that it finds the lean runtime's matches.

numba is not a dependency of rsep: `pip install numba` into the venv to run this.

    .venv/bin/python -m bench.bench_numba_probe [--ticks 50000]
"""

from __future__ import annotations

import argparse
import gc
import time
from typing import Any

import numpy as np

from bench.bench_nfa import STRICT, found_of
from bench.common import compile_text, current_engine, stock
from rsep.plugin.nfa.keyed import KeyedNfa, KeyedState
from rsep.plugin.replay import batches
from rsep.plugin.store.gpm_stage import GpmEvaluator

CPU = time.process_time


def kernel() -> Any:
    from numba import njit

    @njit(cache=False)
    def v_shape(times, pa, pb, pc, first, within, kinds, starts, p1s, count, out_s, out_e):
        """Groups `first`.. of one key (ranks consecutive); runs (kind 0: after A, 1: after
        B; start group; p1) carried in the arrays. Returns (matches, runs)."""
        found = 0
        for i in range(first, len(times)):
            alive = 0
            t = times[i]
            for r in range(count):
                start = starts[r]
                if t - times[start] > within:
                    continue
                p1 = p1s[r]
                if kinds[r] == 1 and pc[i] > p1:
                    out_s[found] = start
                    out_e[found] = i
                    found += 1
                if pb[i] < p1:
                    kinds[alive] = 1
                    starts[alive] = start
                    p1s[alive] = p1
                    alive += 1
            kinds[alive] = 0
            starts[alive] = i
            p1s[alive] = pa[i]
            count = alive + 1
        return found, count

    return v_shape


def number(term: str, cache: dict[str, float]) -> float:
    value = cache.get(term)
    if value is None:
        value = cache[term] = float(term[1 : term.index('"', 1)])
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=50_000)
    args = parser.parse_args()
    workload = stock(companies=1, ticks=args.ticks)
    plan = compile_text(workload.queries[STRICT])
    within = plan.automaton.within
    events = current_engine().parse(workload)
    evaluator = GpmEvaluator(plan.gpms)
    work = []
    for batch in batches(events, 5000):
        work.append((evaluator.evaluate((n.id, n.event) for n in batch), {n.id: n for n in batch}, batch[-1]))
    v_shape = kernel()
    cache: dict[str, float] = {}
    size = args.ticks + 1
    times, pa, pb, pc = (np.zeros(size) for _ in range(4))
    kinds, starts, p1s = np.zeros(size, np.int8), np.zeros(size, np.int64), np.zeros(size)
    out_s, out_e = np.zeros(size * 8, np.int64), np.zeros(size * 8, np.int64)
    v_shape(times[:1], pa[:1], pb[:1], pc[:1], 0, within, kinds, starts, p1s, 0, out_s, out_e)  # compile
    gc.collect()
    gc.freeze()
    rows_of: list[list[Any]] = []
    intake = run = build = 0.0
    count = 0
    matches: list[Any] = []
    for rows, numbered, _ in work:
        start = CPU()
        by_rank: dict[int, list[Any]] = {}
        for gpm, gpm_rows in rows.items():
            for event, mapping in gpm_rows:
                found = numbered[event]
                group = by_rank.get(found.rank)
                if group is None:
                    group = by_rank[found.rank] = [found.event.time.seconds, None, None, None]
                group[1 + gpm] = (event, mapping)
        first = len(rows_of)
        for rank in sorted(by_rank):
            group = by_rank[rank]
            i = len(rows_of)
            rows_of.append(group)
            times[i] = group[0]
            pa[i] = number(group[1][1]["p1"], cache)
            pb[i] = number(group[2][1]["p2"], cache)
            pc[i] = number(group[3][1]["p3"], cache)
        intake += CPU() - start
        start = CPU()
        end = len(rows_of)
        found_count, count = v_shape(
            times[:end], pa, pb, pc, first, within, kinds, starts, p1s, count, out_s, out_e
        )
        run += CPU() - start
        start = CPU()
        for j in range(found_count):
            a, c = int(out_s[j]), int(out_e[j])
            taken = (rows_of[a][1][0], *(rows_of[x][2][0] for x in range(a + 1, c)), rows_of[c][3][0])
            mapping = {**rows_of[a][1][1], **rows_of[c - 1][2][1], **rows_of[c][3][1]}
            matches.append((taken, mapping))
        build += CPU() - start
    gc.unfreeze()
    keyed = KeyedNfa(plan.automaton, plan.key)
    state = KeyedState()
    lean = []
    start = CPU()
    for rows, numbered, last in work:
        lean += found_of(
            keyed.step(state, rows, numbered, last.rank, last.event.time.seconds, tentative=False)
        )
    lean_seconds = CPU() - start
    assert sorted((m[0], sorted(m[1].items())) for m in matches) == sorted((f[0], list(f[5])) for f in lean)
    total = intake + run + build
    n = len(events)
    print(f"strict V-shape, 1 company, {n} events, {len(matches)} matches (the lean runtime's)")
    print(f"  rows -> arrays (Python)    {intake:7.3f} s")
    print(f"  transitions (numba)        {run:7.3f} s")
    print(f"  matches built (Python)     {build:7.3f} s")
    print(f"  total                      {total:7.3f} s = {n / total:,.0f} events/s")
    print(f"  lean runtime (KeyedNfa)    {lean_seconds:7.3f} s = {n / lean_seconds:,.0f} events/s")


if __name__ == "__main__":
    main()
