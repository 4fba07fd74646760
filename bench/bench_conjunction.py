"""Lazy conjunction in the GPM stage (SPAseq §7.3): what matching `B` only where `A` matched saves.

A smart-grid-like stream: every tick a house reports its power on S1 and a weather station its
readings on S2, at the same timestamp. `SEQ (A & B)` asks for a power spike (A, rare: one tick
in `--every`) together with the weather where it happened (B, a heavier pattern that matches
every event). The replay runs twice in-process over the same events, with the plan as compiled
(B lazy) and with every GPM eager, and prints per GPM the SPARQL queries run, the event graphs
matched and the rows found (`GpmEvaluator.stats`), the GPM stage's time, and whether both runs
found the same matches.

    .venv/bin/python -m bench.bench_conjunction                 # 20,000 ticks, A at 1 in 100
    .venv/bin/python -m bench.bench_conjunction --ticks 2000    # about 2 s
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from bench.common import compile_text
from rsep.plugin.compile.query_plan import QueryPlan
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.nfa.runtime import Match
from rsep.plugin.numbering import NumberedEvent, number_events
from rsep.plugin.replay import Replay
from rsep.plugin.store.gpm_stage import GpmEvaluator
from rsep.plugin.store.kb import KnowledgeBase

EX = "http://example.org/"
INTEGER = "<http://www.w3.org/2001/XMLSchema#integer>"
QUERY = """
PREFIX : <http://example.org/>
SELECT ?h ?p ?w ?t
FROM STREAM S1 <http://example.org/power>
FROM STREAM S2 <http://example.org/weather>
WHERE {
  SEQ (A & B)
  DEFINE GPM A ON S1 { ?h :pow ?p ; :loc ?l . FILTER (?p > 900) }
  DEFINE GPM B ON S2 { ?w :temp ?t ; :wind ?v ; :hum ?u ; :loc ?l . OPTIONAL { ?w :note ?n } }
}
"""


def events(ticks: int, every: int) -> list[NumberedEvent]:
    """Per tick one power event (a spike every `every` ticks) and one weather event, same place."""
    power, weather = [], []
    for tick in range(ticks):
        time_ = Timestamp(float(tick), str(tick), True)
        watts = 950 if tick % every == 0 else 100 + tick % 700
        power.append(GraphEvent(EX + "power", f"<{EX}p{tick}>", time_, _triples(f"h{tick % 50}", watts)))
        weather.append(GraphEvent(EX + "weather", f"<{EX}w{tick}>", time_, _weather(tick)))
    return number_events([power, weather])


def _triples(house: str, watts: int) -> str:
    return f'<{EX}{house}> <{EX}pow> "{watts}"^^{INTEGER} .\n<{EX}{house}> <{EX}loc> <{EX}L{house[1:]}> .\n'


def _weather(tick: int) -> str:
    station = f"<{EX}W{tick % 50}>"
    return "".join(
        f"{station} <{EX}{name}> {value} .\n"
        for name, value in (
            ("temp", f'"{tick % 30}"^^{INTEGER}'),
            ("wind", f'"{tick % 11}"^^{INTEGER}'),
            ("hum", f'"{tick % 90}"^^{INTEGER}'),
            ("loc", f"<{EX}L{tick % 50}>"),
        )
    )


def measure(plan: QueryPlan, numbered: list[NumberedEvent]) -> tuple[list[Match], float, GpmEvaluator]:
    evaluator = GpmEvaluator(plan.gpms, KnowledgeBase())
    timed = _Timed(evaluator)
    matches = Replay(plan, timed).run(numbered)
    return matches, timed.seconds, evaluator


class _Timed:
    """The evaluator with the time spent in it added up."""

    def __init__(self, evaluator: GpmEvaluator) -> None:
        self.evaluator, self.seconds = evaluator, 0.0

    def evaluate(self, batch):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        rows = self.evaluator.evaluate(batch)
        self.seconds += time.perf_counter() - started
        return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ticks", type=int, default=20000)
    parser.add_argument("--every", type=int, default=100, help="A matches one tick in EVERY")
    args = parser.parse_args()
    lazy = compile_text(QUERY)
    eager = replace(lazy, gpms=tuple(replace(g, needs=None) for g in lazy.gpms))
    numbered = events(args.ticks, args.every)
    print(f"{len(numbered)} events, {args.ticks} ticks, A matches 1 tick in {args.every}")
    found = {}
    for name, plan in (("eager", eager), ("lazy", lazy)):
        matches, seconds, evaluator = measure(plan, numbered)
        found[name] = matches
        stats = evaluator.stats
        per_gpm = "; ".join(
            f"{g.name}: {stats.queries[g.index]} queries, {stats.events[g.index]} events matched, "
            f"{stats.rows[g.index]} rows, {stats.skipped[g.index]} skipped"
            for g in plan.gpms
        )
        print(f"{name:5}  GPM stage {seconds:6.2f} s  {len(matches)} matches  {per_gpm}")
    print("same matches:", found["eager"] == found["lazy"])


if __name__ == "__main__":
    main()
