"""NFA states as plain, picklable data for checkpoints.

Runs share their partial matches through linked lists (`Run.path`); pickle
would follow them recursively (and fail on long Kleene+ runs), so paths are
flattened into one table of (events, parent index) rows shared by all runs.
Every engine checkpoints through this module, so the state format changes in
one place (`VERSION`). Version 4 added the occurrences join groups remember
(`NfaState.joins`); a version 3 checkpoint reads as one with none remembered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rsep.plugin.nfa.runtime import NfaState, Path, Run

VERSION = 4
_READABLE = (3, 4)


def encode(states: Mapping[Any, NfaState]) -> tuple[object, ...]:
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
        )
        for key, nfa in states.items()
    ]
    return (VERSION, table, encoded)


def decode(data: tuple[Any, ...]) -> dict[Any, NfaState]:
    version, table, encoded = data
    if version not in _READABLE:
        raise ValueError(f"NFA state format {version} is not {VERSION}: delete the old checkpoints")
    nodes: list[Any] = []
    for events, parent in table:
        nodes.append((events, None if parent < 0 else nodes[parent]))
    states: dict[Any, NfaState] = {}
    for key, last_rank, history, runs_by_state, *joins in encoded:
        nfa = NfaState(last_rank=last_rank, history=history, joins=joins[0] if joins else {})
        for sid, runs in runs_by_state:
            nfa.runs[sid] = [
                Run(s, mapping, start_time, start_rank, last, None if path < 0 else nodes[path], spans, units)
                for s, mapping, start_time, start_rank, last, path, spans, units in runs
            ]
        states[key] = nfa
    return states
