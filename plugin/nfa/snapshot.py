"""NFA states as plain, picklable data for checkpoints.

Runs share their partial matches through linked lists (`Run.path`); pickle
would follow them recursively (and fail on long Kleene+ runs), so paths are
flattened into one table of (events, parent index) rows shared by all runs.
Every engine checkpoints through this module, so the state format changes in
one place (`VERSION`).

A state only means something to the automaton it was made by: runs name its
states, intervals its parts, remembered solutions its auxiliary patterns. So a
checkpoint carries the automaton's `fingerprint`, and one read for another
automaton (rsep compiles the query differently since it was written), or
written before fingerprints (formats 3 and 4), is refused with `StateMismatch`:
the engines then replay the query from its registration instead of resuming.

Format 6 adds, per key, the shared buffer's window (`BufferState.saved`: its clock and
its groups' rows) for the automata that run on it (`lean_plan.buffered_eligible`), None for
the others; the lean runtime's states are written as the general runtime's runs (its
`LeanState.runs` view) and read back as such, then adopted. A format-5 state holding runs
for an automaton that now runs on the shared buffer is refused (`StateMismatch`): the buffer
keeps rows, not runs, and cannot continue them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from enum import Enum
from typing import Any

from rsep.plugin.errors import InternalError
from rsep.plugin.nfa.automaton import Automaton
from rsep.plugin.nfa.buffer_state import BufferState
from rsep.plugin.nfa.lean_plan import buffered_eligible
from rsep.plugin.nfa.runs import NfaState, Path, Run

VERSION = 6
_READABLE = (3, 4, 5, 6)
"""Formats decoded when no automaton is given (in-memory copies, inspection)."""


class StateMismatch(InternalError, ValueError):
    """A saved NFA state that the automaton at hand cannot continue."""


def encode(states: Mapping[Any, NfaState], automaton: Automaton | None = None) -> tuple[object, ...]:
    """`states` as data; with `automaton`, stamped with its fingerprint (checkpoints)."""
    table: list[tuple[tuple[int, ...], int]] = []
    index: dict[int, int] = {}

    def ref(path: Path) -> int:
        chain = []
        node = path
        while node is not None and id(node) not in index:
            chain.append(node)
            node = node[1]
        parent = -1 if node is None else index[id(node)]
        for item in reversed(chain):
            table.append((item[0], parent))
            parent = index[id(item)] = len(table) - 1
        return parent

    def run(r: Run) -> tuple[object, ...]:
        return (r.state, r.mapping, r.start_time, r.start_rank, r.last_rank, ref(r.path), r.spans, r.units)

    encoded = [
        (
            key,
            nfa.last_rank,
            nfa.history,
            [(sid, [run(r) for r in runs]) for sid, runs in nfa.runs.items()],
            nfa.joins,
            nfa.saved() if isinstance(nfa, BufferState) else None,
        )
        for key, nfa in states.items()
    ]
    stamp = None if automaton is None else fingerprint(automaton)
    return (VERSION, stamp, table, encoded)


def decode(data: tuple[Any, ...], automaton: Automaton | None = None) -> dict[Any, NfaState]:
    """The states `encode` saved. With `automaton`, only if they were saved for it
    (`StateMismatch` otherwise)."""
    version = data[0]
    if version not in _READABLE:
        raise StateMismatch(f"NFA state format {version} is not {VERSION}: delete the old checkpoints")
    stamp, table, encoded = data[1:] if version >= 5 else (None, *data[1:])
    if automaton is not None and stamp != fingerprint(automaton):
        raise StateMismatch(
            "the NFA state was saved for another automaton (rsep compiles this query differently "
            "since the checkpoint was written)"
            if stamp is not None
            else f"the NFA state (format {version}) does not say which automaton it was saved for"
        )
    nodes: list[Any] = []
    for events, parent in table:
        nodes.append((events, None if parent < 0 else nodes[parent]))
    buffered = automaton is not None and buffered_eligible(automaton)
    states: dict[Any, NfaState] = {}
    for key, last_rank, history, runs_by_state, *rest in encoded:
        buffer = rest[1] if len(rest) > 1 else None
        if buffer is not None:
            states[key] = BufferState.restored(last_rank, *buffer)
            continue
        if buffered and runs_by_state:
            raise StateMismatch(
                "the NFA state holds runs, and rsep now runs this query on the shared buffer, "
                "which keeps the window's events instead of runs and cannot continue them"
            )
        nfa = NfaState(last_rank=last_rank, history=history, joins=rest[0] if rest else {})
        for sid, runs in runs_by_state:
            nfa.runs[sid] = [
                Run(s, mapping, start_time, start_rank, last, None if path < 0 else nodes[path], spans, units)
                for s, mapping, start_time, start_rank, last, path, spans, units in runs
            ]
        states[key] = nfa
    return states


_FINGERPRINTS: dict[int, tuple[Automaton, str]] = {}


def fingerprint(automaton: Automaton) -> str:
    """A digest of everything the automaton is made of (states, atoms, interval
    specifications, filters, window, policy), the same in every process (sets are
    sorted, so string hashing does not show). Cached per automaton object: engines
    decode a state per key and batch."""
    found = _FINGERPRINTS.get(id(automaton))
    if found is None or found[0] is not automaton:
        if len(_FINGERPRINTS) >= 256:
            _FINGERPRINTS.clear()
        text = json.dumps(_canonical(automaton), separators=(",", ":"))
        found = _FINGERPRINTS[id(automaton)] = (automaton, hashlib.sha256(text.encode()).hexdigest())
    return found[1]


def _canonical(value: object) -> object:
    if isinstance(value, Enum):
        return [type(value).__name__, _canonical(value.value)]
    if is_dataclass(value) and not isinstance(value, type):
        kept = (f for f in fields(value) if f.metadata.get("fingerprint", True))
        return [type(value).__name__, *(_canonical(getattr(value, f.name)) for f in kept)]
    if isinstance(value, (frozenset, set)):
        return sorted((_canonical(item) for item in value), key=json.dumps)
    if isinstance(value, (tuple, list)):
        return [_canonical(item) for item in value]
    if isinstance(value, dict):
        return sorted(([_canonical(k), _canonical(v)] for k, v in value.items()), key=json.dumps)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)
