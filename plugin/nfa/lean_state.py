"""What the lean runtime (`plugin/nfa/lean.py`) keeps per key: runs as compact tuples.

A lean run is `(start_time, start_rank, last_rank, node, slots)`, waiting in the state whose
list holds it (`LeanState.lists[state id]`). `node` is the newest step of its partial match,
`(events, parent node, candidate mapping, take, up)`: the events taken at that step (its first
two items are what `Run.path` is, so paths, `live_events` and the checkpoint format read it
unchanged), the GPM row (or joined rows) the step took, the compiled step that took it
(`lean_plan.Take`: which variables it rebinds) and `up`, the nearest older step whose
bindings are not all bound or rebound again since (Kleene+ iterations skip each other). The
run's solution mapping is that chain read back (`mapping`): only a match, a checkpoint or a
fallback to the general runtime builds it. `slots` are the few bindings its checks read
(`plugin/nfa/lean_plan.py`).

A state adopted from the general runtime (a decoded checkpoint) gets, per run, a node whose
take is None: its mapping is the run's whole mapping, and reading stops there.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from itertools import chain
from typing import Any

from rsep.plugin.nfa.runs import Mapping_, NfaState, Run

Node = tuple[tuple[int, ...], Any, Mapping[str, str], Any, Any]
LeanRun = tuple[float, int, int, Node, tuple[Any, ...]]


def mapping(node: Node) -> Mapping_:
    """The solution mapping of the partial match ending at `node`, as the general runtime
    builds it by merging (`outcomes.merged`: a step drops its rebind variables, then adds its
    candidate's bindings): read from the newest step back, a variable takes the value of the
    newest step binding it, unless a newer step rebound it. Steps whose variables are all bound
    or rebound later are skipped (`up`). The keys may come in another order than the general
    runtime's dict (nothing reads that order: matches compare and print mappings sorted)."""
    result: dict[str, str] = {}
    hidden: frozenset[str] = frozenset()
    current: Any = node
    while current is not None:
        for name, value in current[2].items():
            if name not in result and name not in hidden:
                result[name] = value
        take = current[3]
        if take is None:
            break
        if take.rebind:
            hidden = hidden | take.rebind
        current = current[4]
    return result


def events(node: Node) -> tuple[int, ...]:
    """`runs.unwind`, for lean nodes: the events of the partial match in the order taken."""
    steps = []
    current: Any = node
    while current is not None:
        steps.append(current[0])
        current = current[1]
    steps.reverse()
    return tuple(chain.from_iterable(steps))


class LeanState(NfaState):
    """An `NfaState` whose runs are lean tuples, one list per automaton state (`lists`).
    `runs` is a view in the general runtime's form (built on each read: for checkpoints,
    inspection and the fallback to the general runtime); the rest of the fields stay empty,
    since the lean runtime runs no interval patterns or join groups."""

    __slots__ = ("lists",)

    def __init__(self, size: int, last_rank: int = -1) -> None:
        NfaState.__init__(self, last_rank=last_rank)
        self.lists: list[list[LeanRun]] = [[] for _ in range(size)]

    @property
    def runs(self) -> dict[int, list[Run]]:
        view: dict[int, list[Run]] = {}
        for state_id, runs in enumerate(self.lists):
            if runs:
                view[state_id] = [
                    Run(state_id, mapping(node), start_time, start_rank, last_rank, node)
                    for start_time, start_rank, last_rank, node, _ in runs
                ]
        return view

    @runs.setter
    def runs(self, value: dict[int, list[Run]]) -> None:
        if value:
            raise TypeError("a LeanState's runs are its lists")

    def run_count(self) -> int:
        return sum(map(len, self.lists))

    def idle(self) -> bool:
        return not any(self.lists)

    def copy(self) -> LeanState:
        """A copy `process` may change without touching this state (it replaces or extends
        the lists, never their runs)."""
        copied = LeanState(0, self.last_rank)
        copied.lists = [list(runs) for runs in self.lists]
        return copied

    def nodes(self) -> Iterator[Node]:
        """The newest node of every run (`keyed.live_events` walks their paths)."""
        for runs in self.lists:
            for run in runs:
                yield run[3]

    def first_start(self) -> float | None:
        return min((run[0] for runs in self.lists for run in runs), default=None)
