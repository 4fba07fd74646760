"""What the NFA runtime reads, keeps and produces, and what one timestamp's step is made of.

`Group` is the input (one partition's GPM rows at one rank), `Match` the output,
`Run` and `NfaState` the per-key state that engines checkpoint
(`plugin/nfa/snapshot.py` saves them as plain data). `Candidate`,
`CandidateCache` and `Step` live only while one timestamp is processed.

A run shares the events of its partial match with its parent through an
immutable linked list (`Path`), so forking a run for skip-till-any or Kleene+
copies nothing (Flink CEP's shared buffer idea; the garbage collector does the
versioning).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from collections.abc import Sequence as Seq
from dataclasses import dataclass, field
from typing import Any

from rsep.plugin.errors import InternalError
from rsep.plugin.nfa.automaton import Atom, IntervalSpec
from rsep.plugin.nfa.interval_checks import Span, Spans
from rsep.plugin.nfa.joins import Occurrence

Mapping_ = dict[str, str]
Unit = tuple[object, ...]
"""One consumable input: (event id,) or (event id, subject, predicate, object)."""
Path = tuple[Any, ...] | None
"""(events taken at one step, parent path, ...): a persistent list, newest first. The lean
runtime's nodes carry more after those two (`plugin/nfa/lean_state.py`)."""


@dataclass(slots=True)
class Group:
    """The GPM matches of one partition at one timestamp (one rank)."""

    rank: int
    time: float
    rows: Mapping[int, Seq[tuple[int, Mapping[str, str]]]]
    """GPM index -> (event id, solution mapping) pairs."""
    starts: Mapping[int, float] | None = None
    """Start times of events that span an interval (derived events); others
    start when they end, at `time`."""


@dataclass(frozen=True, slots=True)
class Match:
    """A complete match: contributing events in sequence order and the mapping."""

    events: tuple[int, ...]
    start_time: float
    end_time: float
    start_rank: int
    end_rank: int
    mapping: Mapping_

    def key(self) -> tuple[object, ...]:
        """Detection order: by completion, then start, then events, then bindings."""
        return (self.end_rank, self.start_rank, self.events, sorted(self.mapping.items()))


class Run:
    """A partial match waiting in one state."""

    __slots__ = ("last_rank", "mapping", "path", "spans", "start_rank", "start_time", "state", "units")

    def __init__(
        self,
        state: int,
        mapping: Mapping_,
        start_time: float,
        start_rank: int,
        last_rank: int,
        path: Path,
        spans: Spans | None = None,
        units: tuple[Unit, ...] | None = None,
    ) -> None:
        self.state = state
        self.mapping = mapping
        self.start_time = start_time
        self.start_rank = start_rank
        self.last_rank = last_rank
        self.path = path
        self.spans = spans
        """(start, end) of each step taken, for interval patterns only."""
        self.units = units
        """The inputs the partial match holds, under consuming policies only."""

    def __getstate__(self) -> tuple[object, ...]:
        return (
            self.state,
            self.mapping,
            self.start_time,
            self.start_rank,
            self.last_rank,
            self.path,
            self.spans,
        )

    def __setstate__(self, data: tuple[Any, ...]) -> None:
        (
            self.state,
            self.mapping,
            self.start_time,
            self.start_rank,
            self.last_rank,
            self.path,
            self.spans,
        ) = data


@dataclass(slots=True)
class NfaState:
    """The per-key state that Spark checkpoints: active runs by state id."""

    runs: dict[int, list[Run]] = field(default_factory=dict)
    last_rank: int = -1
    history: dict[int, list[tuple[Mapping_, Span]]] = field(default_factory=dict)
    """Per auxiliary pattern, its solutions that may still matter (for anti-joins;
    `plugin/nfa/memory.py` says which may be forgotten)."""
    pending: list[tuple[IntervalSpec, Match, Spans]] = field(default_factory=list)
    """Complete matches with an open anti-join (CQELS-CEP NO_TAIL), which only
    `Runtime.settle` decides, at an evaluation time. Not checkpointed: only the
    window runtime uses them, and it replays a fresh state per evaluation."""
    joins: dict[int, list[Occurrence]] = field(default_factory=dict)
    """Per join group (`JoinAtom.memory`), the occurrences of its GPMs that may still join."""

    def run_count(self) -> int:
        return sum(map(len, self.runs.values()))

    def joined_events(self) -> set[int]:
        """The events join groups remember: a later match may report them (besides the
        events of the runs' paths)."""
        return {occurrence[1] for occurrences in self.joins.values() for occurrence in occurrences}

    def remembered_count(self) -> int:
        """Auxiliary solutions and join occurrences held: with `run_count`, the state's size."""
        return sum(map(len, self.history.values())) + sum(map(len, self.joins.values()))

    def idle(self) -> bool:
        """Nothing to continue and nothing remembered: the state may be dropped."""
        return not self.runs and not self.pending and not self.remembered_count()


class RankOrderError(InternalError, ValueError):
    """A group arrived with a rank not after the previous one."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """What an atom matches at one group, before it meets a run: the events taken,
    their mapping, and the stateful filters that wait for the run's bindings."""

    events: tuple[int, ...]
    mapping: Mapping_
    pending: tuple[Callable[[Mapping[str, str]], bool], ...]
    pending_reads: frozenset[str] | None
    """The variables the pending filters read; None when one of them is not a
    function of its variables (RAND(), NOW(), ...)."""
    units: tuple[Unit, ...] = ()
    """The inputs taken, for consuming policies: (event, GPM, solution) per
    triple pattern (not the whole event graph, which may hold other inputs)."""
    begins: tuple[float, ...] = ()
    """Interval patterns: the start time of each part (GPM or join group) taken."""
    earlier: tuple[int, ...] = ()
    """Consuming policies: the events a join group's join took from earlier timestamps
    (its partners, which the policy chooses among)."""


class CandidateCache(dict[Atom, list[Candidate]]):
    """What each atom matches at one group (run-independent), and the key's state,
    whose join occurrences join atoms read and extend."""

    __slots__ = ("state",)

    def __init__(self, state: NfaState) -> None:
        super().__init__()
        self.state = state


class Step:
    """Everything one timestamp's processing accumulates."""

    __slots__ = (
        "born",
        "cache",
        "consumed",
        "deferred",
        "group",
        "matches",
        "moved",
        "state",
        "takers",
        "units",
    )

    def __init__(self, state: NfaState, group: Group) -> None:
        self.state = state
        self.group = group
        self.cache = CandidateCache(state)
        self.born: list[Run] = []
        self.matches: dict[tuple[object, ...], Match] = {}
        self.deferred: list[tuple[IntervalSpec, Match, Spans | None]] = []
        self.consumed: set[Unit] = set()
        self.units: dict[int, tuple[Unit, ...]] = {}
        """Consuming policies: the inputs of each match (by id of the Match)."""
        self.takers: dict[Unit, frozenset[Unit]] = {}
        """Interval patterns under consuming policies: the partial match (its inputs) that
        took each input consumed at this timestamp."""
        self.moved: set[frozenset[Unit]] = set()
        """Interval patterns under consuming policies: the partial matches that took an input."""


def run_age(run: Run) -> tuple[int, ...]:
    """Orders runs by when their inputs arrived (event ids grow with time)."""
    return unwind(run.path)


def unwind(path: Path) -> tuple[int, ...]:
    """The events of a partial match, in the order its steps took them."""
    steps: list[tuple[int, ...]] = []
    while path is not None:
        steps.append(path[0])
        path = path[1]
    return tuple(event for step in reversed(steps) for event in step)
