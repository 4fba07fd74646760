"""The garbage collector's pace for rsep's processes (`rsep serve`, `rsep run`).

CPython collects the youngest generation every 700 net allocations, and every few of those
collections an older one, which walks every object that survived: an engine holding many
queries' NFA states, rows and events walks them again and again while allocating rows and
tuples for each event. Measured (a driver of the in-process engine, 100 queries, 5,000 events,
2 cores): 441 events/s at CPython's defaults, 796 with a young generation of 10,000 and older
collections rarer, 862 with no collection at all. So the commands collect the young generation
every 10,000 allocations, the middle one every 20 of those and the oldest every 100 of the
middle, and move what start-up built (parsers, grammars, the store's bindings) out of the
collector's sight with `gc.freeze()`. Cycles are still collected; only less often.

`RSEP_GC=default` keeps CPython's pace (for comparisons).
"""

from __future__ import annotations

import gc
import os

THRESHOLDS = (10_000, 20, 100)


def tune() -> None:
    """Set the collector's pace for a long run, once start-up is done (call it then)."""
    if os.environ.get("RSEP_GC", "").strip().lower() == "default":
        return
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
