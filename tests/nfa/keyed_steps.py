"""Driving the per-key step as drivers do, for the property tests of the lean runtime and the
shared buffer: random cuts of a stream into batches, events numbered as the step gets them, and
steps over batches with a checkpoint taken and resumed on the way."""

from __future__ import annotations

import itertools
import pickle

from hypothesis import strategies as st

from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.nfa import snapshot
from rsep.plugin.nfa.keyed import KeyedNfa, KeyedState, in_detection_order
from rsep.plugin.nfa.lean import LeanRuntime
from rsep.plugin.numbering import NumberedEvent
from tests.nfa.patterns import Event
from tests.nfa.random_automata import Case


def chunks(draw: st.DrawFn, items: list[object]) -> list[list[object]]:
    if not items:
        return []
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(items) - 1)), max_size=3)))
    bounds = [0, *cuts, len(items)]
    return [items[a:b] for a, b in itertools.pairwise(bounds) if a < b]


def numbered(
    events: list[Event], index: dict[str, int]
) -> tuple[dict[int, NumberedEvent], list[dict[int, list]]]:
    """`events` as the per-key step gets them: numbered events, and per event its GPM rows."""
    ranks = {t: r for r, t in enumerate(sorted({t for t, _ in events}))}
    found: dict[int, NumberedEvent] = {}
    rows: list[dict[int, list]] = []
    for event_id, (time, matched) in enumerate(events):
        stamp = Timestamp(time, str(time), True)
        found[event_id] = NumberedEvent(
            event_id, ranks[time], GraphEvent("urn:s", f"<urn:e{event_id}>", stamp, "")
        )
        rows.append({index[name]: [(event_id, m) for m in mappings] for name, mappings in matched.items()})
    return found, rows


def step_all(
    keyed: KeyedNfa,
    events: list[Event],
    case: Case,
    cuts: list[int],
    save: int | None,
    *,
    relevant: bool = False,
) -> list:
    """Steps over batches of events (each batch's last rank left open, then closed), the state
    checkpointed and resumed after batch `save`; with `relevant`, each batch's rows go through
    `KeyedNfa.relevant` first, as the endpoint's runner does."""
    numbered_events, rows = numbered(events, case.index)
    state = KeyedState()
    found = []
    bounds = [0, *cuts, len(events)]
    for number, (a, b) in enumerate(itertools.pairwise(bounds)):
        if a >= b:
            continue
        batch: dict[int, list] = {}
        for per_event in rows[a:b]:
            for gpm, items in per_event.items():
                batch.setdefault(gpm, []).extend(items)
        last = numbered_events[b - 1]
        closed = last.rank if b == len(events) else last.rank - 1
        given = keyed.relevant(state, batch) if relevant else batch
        found += keyed.step(state, given, numbered_events, closed, last.event.time.seconds)
        if number == save:
            data = pickle.loads(pickle.dumps(snapshot.encode(state.states, keyed.automaton)))
            # the reference (the general runtime) decodes as the general runtime's checkpoint
            checked = keyed.automaton if isinstance(keyed.runtime, LeanRuntime) else None
            state = KeyedState(snapshot.decode(data, checked), state.pending, state.closed_rank)
    return in_detection_order(found)
