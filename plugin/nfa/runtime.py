"""The pure NFA runtime: `process(state, groups)` and `advance_time(state, ...)`.

Input is the GPM stage's output for one partition key, grouped by timestamp:
a `Group` holds, per GPM, the events at that timestamp it matched and their
solution mappings. Every event of the query's streamset has a dense *rank*
(events sharing a timestamp share it), so "no event strictly between" (strict
contiguity, SPAseq Def. 12) is `rank == last_rank + 1` even though this
partition never sees the other keys' events.

Runs are per solution mapping. A run shares the events of its partial match
with its parent through an immutable linked list (`path`), so forking a run
for skip-till-any or Kleene+ copies nothing (Flink CEP's shared buffer idea;
the garbage collector does the versioning).

No Spark, no Oxigraph: this module only needs the expression evaluator for
stateful filters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from collections.abc import Sequence as Seq
from dataclasses import dataclass, field
from typing import Any

from rsep.plugin.algebra.events import SelectionStrategy
from rsep.plugin.expr import compile_filter
from rsep.plugin.nfa.automaton import (
    Atom,
    Automaton,
    ConjunctionAtom,
    DisjunctionAtom,
    GpmAtom,
    State,
    atom_gpms,
)

Mapping_ = dict[str, str]
Path = tuple[tuple[int, ...], Any] | None
"""(events taken at one step, parent path): a persistent list, newest first."""


@dataclass(slots=True)
class Group:
    """The GPM matches of one partition at one timestamp (one rank)."""

    rank: int
    time: float
    rows: Mapping[int, Seq[tuple[int, Mapping[str, str]]]]
    """GPM index -> (event id, solution mapping) pairs."""


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

    __slots__ = ("last_rank", "mapping", "path", "start_rank", "start_time", "state")

    def __init__(
        self, state: int, mapping: Mapping_, start_time: float, start_rank: int, last_rank: int, path: Path
    ) -> None:
        self.state = state
        self.mapping = mapping
        self.start_time = start_time
        self.start_rank = start_rank
        self.last_rank = last_rank
        self.path = path

    def __getstate__(self) -> tuple[object, ...]:
        return (self.state, self.mapping, self.start_time, self.start_rank, self.last_rank, self.path)

    def __setstate__(self, data: tuple[Any, ...]) -> None:
        (self.state, self.mapping, self.start_time, self.start_rank, self.last_rank, self.path) = data


@dataclass(slots=True)
class NfaState:
    """The per-key state that Spark checkpoints: active runs by state id."""

    runs: dict[int, list[Run]] = field(default_factory=dict)
    last_rank: int = -1

    def run_count(self) -> int:
        return sum(map(len, self.runs.values()))


class OutOfOrderError(ValueError):
    """A group arrived with a rank not after the previous one."""


@dataclass(frozen=True, slots=True)
class _Candidate:
    events: tuple[int, ...]
    mapping: Mapping_
    pending: tuple[Callable[[Mapping[str, str]], bool], ...]


class Runtime:
    """An automaton plus its compiled stateful filters. Build one per process:
    the automaton pickles (it holds expressions, not closures) and the filters
    compile here."""

    def __init__(self, automaton: Automaton) -> None:
        self.automaton = automaton
        self.within = automaton.within
        self._residuals: list[list[tuple[frozenset[str], Callable[[Mapping[str, str]], bool]]]] = [
            [(r.variables, compile_filter(r.expr)) for r in filters] for filters in automaton.residuals
        ]
        self._touching: dict[int, list[State]] = {}
        for state in automaton.states:
            for gpm in atom_gpms(state.atom).union(*map(atom_gpms, state.guards)):
                self._touching.setdefault(gpm, []).append(state)
        self._initial = [automaton.states[i] for i in automaton.initial]

    def new_state(self) -> NfaState:
        return NfaState()

    # ------------------------------------------------------------------ driving

    def process(self, state: NfaState, groups: Iterable[Group]) -> tuple[NfaState, list[Match]]:
        """Feed groups in rank order; returns the (updated) state and the matches
        completed, in detection order."""
        matches: list[Match] = []
        for group in groups:
            if group.rank <= state.last_rank:
                raise OutOfOrderError(f"rank {group.rank} arrived after rank {state.last_rank}")
            state.last_rank = group.rank
            matches.extend(self._process_group(state, group))
        return state, matches

    def advance_time(self, state: NfaState, rank: int, time: float) -> NfaState:
        """Promise that later groups have a rank > `rank` and a time >= `time`:
        drops runs that can no longer complete (window and strict contiguity)."""
        for state_id, runs in list(state.runs.items()):
            spec = self.automaton.states[state_id]
            alive = [run for run in runs if self._alive(spec, run, rank + 1, time)]
            if alive:
                state.runs[state_id] = alive
            else:
                del state.runs[state_id]
        state.last_rank = max(state.last_rank, rank)
        return state

    # ------------------------------------------------------------------ one timestamp

    def _process_group(self, state: NfaState, group: Group) -> list[Match]:
        cache: dict[Atom, list[_Candidate]] = {}
        born: list[Run] = []
        matches: dict[tuple[object, ...], Match] = {}
        touched = {s.id: s for gpm in group.rows for s in self._touching.get(gpm, ())}
        for spec in touched.values():
            runs = state.runs.get(spec.id)
            if runs:
                state.runs[spec.id] = self._advance_runs(spec, runs, group, cache, born, matches)
        for spec in self._initial:
            for cand in self._matches(spec.atom, group, cache):
                mapping = _checked(cand, {})
                if mapping is not None:
                    self._spawn(spec, None, cand.events, mapping, group, born, matches)
        for run in born:
            state.runs.setdefault(run.state, []).append(run)
        return list(matches.values())

    def _advance_runs(
        self,
        spec: State,
        runs: list[Run],
        group: Group,
        cache: dict[Atom, list[_Candidate]],
        born: list[Run],
        matches: dict[tuple[object, ...], Match],
    ) -> list[Run]:
        candidates = self._matches(spec.atom, group, cache)
        keep: list[Run] = []
        for run in runs:
            if not self._alive(spec, run, group.rank, group.time):
                continue
            took = False
            if candidates:
                base = run.mapping
                if spec.rebind:
                    base = {k: v for k, v in base.items() if k not in spec.rebind}
                for cand in candidates:
                    joined = _checked(cand, base)
                    if joined is not None:
                        took = True
                        self._spawn(spec, run, cand.events, joined, group, born, matches)
            if spec.guards and self._guarded(spec, run, group, cache):
                continue
            if took and spec.strategy is SelectionStrategy.SKIP_TILL_NEXT:
                continue
            if spec.max_gap is not None and group.rank >= run.last_rank + spec.max_gap:
                continue
            keep.append(run)
        return keep

    def _alive(self, spec: State, run: Run, rank: int, time: float) -> bool:
        if self.within is not None and time - run.start_time > self.within:
            return False
        return spec.max_gap is None or rank <= run.last_rank + spec.max_gap

    def _guarded(self, spec: State, run: Run, group: Group, cache: dict[Atom, list[_Candidate]]) -> bool:
        """Did a guarded (negated or skipped optional) element occur compatibly?"""
        return any(
            _checked(cand, run.mapping) is not None
            for guard in spec.guards
            for cand in self._matches(guard, group, cache)
        )

    def _spawn(
        self,
        spec: State,
        parent: Run | None,
        events: tuple[int, ...],
        mapping: Mapping_,
        group: Group,
        born: list[Run],
        matches: dict[tuple[object, ...], Match],
    ) -> None:
        start_time = group.time if parent is None else parent.start_time
        start_rank = group.rank if parent is None else parent.start_rank
        if self.within is not None and group.time - start_time > self.within:
            return
        path: Path = (events, None if parent is None else parent.path)
        for target in spec.after_take:
            born.append(Run(target, mapping, start_time, start_rank, group.rank, path))
        if spec.accepting:
            match = Match(_unwind(path), start_time, group.time, start_rank, group.rank, mapping)
            matches.setdefault((match.events, tuple(sorted(mapping.items()))), match)

    # ------------------------------------------------------------------ atoms

    def _matches(self, atom: Atom, group: Group, cache: dict[Atom, list[_Candidate]]) -> list[_Candidate]:
        """What an atom matches in this group (run-independent, cached per group)."""
        found = cache.get(atom)
        if found is None:
            found = cache[atom] = self._compute_matches(atom, group, cache)
        return found

    def _compute_matches(
        self, atom: Atom, group: Group, cache: dict[Atom, list[_Candidate]]
    ) -> list[_Candidate]:
        if isinstance(atom, GpmAtom):
            return self._gpm_matches(atom.gpm, group)
        if isinstance(atom, DisjunctionAtom):
            unique: dict[tuple[object, ...], _Candidate] = {}
            for operand in atom.operands:
                for cand in self._matches(operand, group, cache):
                    unique.setdefault((cand.events, tuple(sorted(cand.mapping.items()))), cand)
            return list(unique.values())
        assert isinstance(atom, ConjunctionAtom)
        joined: list[_Candidate] = [_Candidate((), {}, ())]
        for operand in atom.operands:
            joined = [c for a in joined for b in self._matches(operand, group, cache) if (c := _conj(a, b))]
            if not joined:
                break
        return joined

    def _gpm_matches(self, gpm: int, group: Group) -> list[_Candidate]:
        residuals = self._residuals[gpm]
        out: list[_Candidate] = []
        for event, mapping in group.rows.get(gpm, ()):
            pending = []
            ok = True
            for variables, predicate in residuals:
                if variables <= mapping.keys():
                    if not predicate(mapping):
                        ok = False
                        break
                else:
                    pending.append(predicate)
            if ok:
                out.append(_Candidate((event,), dict(mapping), tuple(pending)))
        return out


def _join(base: Mapping[str, str], mapping: Mapping[str, str]) -> Mapping_ | None:
    for name, value in mapping.items():
        bound = base.get(name)
        if bound is not None and bound != value:
            return None
    joined = dict(base)
    joined.update(mapping)
    return joined


def _checked(cand: _Candidate, base: Mapping[str, str]) -> Mapping_ | None:
    """Join a candidate into a run's mapping and apply its deferred filters."""
    joined = _join(base, cand.mapping)
    if joined is None or not all(predicate(joined) for predicate in cand.pending):
        return None
    return joined


def _conj(a: _Candidate, b: _Candidate) -> _Candidate | None:
    joined = _join(a.mapping, b.mapping)
    if joined is None:
        return None
    events = a.events + tuple(e for e in b.events if e not in a.events)
    return _Candidate(events, joined, a.pending + b.pending)


def _unwind(path: Path) -> tuple[int, ...]:
    steps: list[tuple[int, ...]] = []
    while path is not None:
        steps.append(path[0])
        path = path[1]
    return tuple(event for step in reversed(steps) for event in step)
