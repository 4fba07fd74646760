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
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

from rsep.plugin.algebra.events import SelectionStrategy
from rsep.plugin.algebra.sparql import Aggregate, Exists, FunctionCall
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
    pending_reads: frozenset[str] | None
    """The variables the pending filters read; None when one of them is not a
    function of its variables (RAND(), NOW(), ...)."""


SHARE_MIN_RUNS = 8
"""Below this many runs in a state, sharing outcomes (`_Outcomes`) costs more than it saves."""
SHARE_PAUSE = 32
"""Groups a state goes without sharing after its runs did not share enough to pay for it."""


class _Outcomes:
    """`_checked(cand, base)` for the runs of one state at one group, where
    `base` is a run's mapping without the state's `rebind` variables.

    The outcome depends only on what the candidate reads of `base`, so with
    `share` runs that agree there share one join and one evaluation of the
    stateful filters: e.g. the many runs a skip-till-next Kleene+ leaves
    waiting for `C` all carry `A`'s price, the only binding `C`'s filter
    compares with. Only successes build their joined mapping, which those
    runs need anyway."""

    __slots__ = ("cand", "lookups", "names", "rebind", "seen")

    def __init__(self, cand: _Candidate, rebind: frozenset[str], share: bool) -> None:
        self.cand = cand
        self.rebind = rebind
        self.names: tuple[str, ...] | None = None
        if share and cand.pending_reads is not None:
            reads = dict.fromkeys((*cand.mapping, *cand.pending_reads))
            self.names = tuple(n for n in reads if n not in rebind)
        self.seen: dict[tuple[str | None, ...], bool] = {}
        self.lookups = 0

    def join(self, mapping: Mapping_) -> Mapping_ | None:
        key = None
        if self.names is not None:
            self.lookups += 1
            key = tuple(map(mapping.get, self.names))
            ok = self.seen.get(key)
            if ok is False:
                return None
        base = {k: v for k, v in mapping.items() if k not in self.rebind} if self.rebind else mapping
        if key is None:
            return _checked(self.cand, base)
        if ok:
            return {**base, **self.cand.mapping}
        joined = _checked(self.cand, base)
        self.seen[key] = joined is not None
        return joined


class Runtime:
    """An automaton plus its compiled stateful filters. Build one per process:
    the automaton pickles (it holds expressions, not closures) and the filters
    compile here."""

    def __init__(self, automaton: Automaton) -> None:
        self.automaton = automaton
        self.within = automaton.within
        self._residuals: list[list[tuple[frozenset[str], Callable[[Mapping[str, str]], bool], bool]]] = [
            [(r.variables, compile_filter(r.expr), _pure(r.expr)) for r in filters]
            for filters in automaton.residuals
        ]
        self._touching: dict[int, list[State]] = {}
        for state in automaton.states:
            for gpm in atom_gpms(state.atom).union(*map(atom_gpms, state.guards)):
                self._touching.setdefault(gpm, []).append(state)
        self._initial = [automaton.states[i] for i in automaton.initial]
        self._touched_by: dict[tuple[int, ...], tuple[State, ...]] = {}
        self._share_pause: dict[int, int] = {}

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
        for spec in self._touched(tuple(group.rows)):
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

    def _touched(self, gpms: tuple[int, ...]) -> tuple[State, ...]:
        """The states a group with rows of `gpms` concerns (few distinct sets: cached)."""
        found = self._touched_by.get(gpms)
        if found is None:
            touched = {s.id: s for gpm in gpms for s in self._touching.get(gpm, ())}
            found = self._touched_by[gpms] = tuple(touched.values())
        return found

    def _advance_runs(
        self,
        spec: State,
        runs: list[Run],
        group: Group,
        cache: dict[Atom, list[_Candidate]],
        born: list[Run],
        matches: dict[tuple[object, ...], Match],
    ) -> list[Run]:
        share = self._sharing(spec, runs)
        checks = [_Outcomes(cand, spec.rebind, share) for cand in self._matches(spec.atom, group, cache)]
        guards: list[_Outcomes] | None = None
        keep: list[Run] = []
        # Attributes read into locals: the loop below runs for every run at every group.
        within, max_gap, rank, time = self.within, spec.max_gap, group.rank, group.time
        next_only = spec.strategy is SelectionStrategy.SKIP_TILL_NEXT
        for run in runs:
            # self._alive(spec, run, rank, time), inlined
            if within is not None and time - run.start_time > within:
                continue
            if max_gap is not None and rank > run.last_rank + max_gap:
                continue
            took = False
            for check in checks:
                joined = check.join(run.mapping)
                if joined is not None:
                    took = True
                    self._spawn(spec, run, check.cand.events, joined, group, born, matches)
            if spec.guards:
                if guards is None:
                    guards = self._guard_checks(spec, group, cache, share)
                if any(guard.join(run.mapping) is not None for guard in guards):
                    continue
            if took and next_only:
                continue
            if max_gap is not None and rank >= run.last_rank + max_gap:
                continue
            keep.append(run)
        if share:
            self._learn_sharing(spec, [*checks, *(guards or ())])
        return keep

    def _sharing(self, spec: State, runs: list[Run]) -> bool:
        """Share outcomes between this state's runs (see `_Outcomes`)? Only
        for many runs, and not for a while after they last failed to agree
        on at least a quarter of the lookups (then the bookkeeping costs more
        than the evaluations it saves)."""
        if len(runs) < SHARE_MIN_RUNS:
            return False
        pause = self._share_pause.get(spec.id, 0)
        if pause:
            self._share_pause[spec.id] = pause - 1
            return False
        return True

    def _learn_sharing(self, spec: State, checks: list[_Outcomes]) -> None:
        lookups = sum(check.lookups for check in checks)
        distinct = sum(len(check.seen) for check in checks)
        if 4 * distinct > 3 * lookups:
            self._share_pause[spec.id] = SHARE_PAUSE

    def _alive(self, spec: State, run: Run, rank: int, time: float) -> bool:
        if self.within is not None and time - run.start_time > self.within:
            return False
        return spec.max_gap is None or rank <= run.last_rank + spec.max_gap

    def _guard_checks(
        self, spec: State, group: Group, cache: dict[Atom, list[_Candidate]], share: bool
    ) -> list[_Outcomes]:
        """What a run is checked against for "did a guarded (negated or skipped
        optional) element occur compatibly?"."""
        matches = (cand for guard in spec.guards for cand in self._matches(guard, group, cache))
        return [_Outcomes(cand, frozenset(), share) for cand in matches]

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
        joined: list[_Candidate] = [_Candidate((), {}, (), frozenset())]
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
            reads: frozenset[str] | None = frozenset()
            ok = True
            for variables, predicate, pure in residuals:
                if variables <= mapping.keys():
                    if not predicate(mapping):
                        ok = False
                        break
                else:
                    pending.append(predicate)
                    reads = reads | variables if pure and reads is not None else None
            if ok:
                out.append(_Candidate((event,), dict(mapping), tuple(pending), reads))
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
    if joined is None:
        return None
    for predicate in cand.pending:  # a loop, not all(...): this is the runtime's innermost call
        if not predicate(joined):
            return None
    return joined


def _conj(a: _Candidate, b: _Candidate) -> _Candidate | None:
    joined = _join(a.mapping, b.mapping)
    if joined is None:
        return None
    events = a.events + tuple(e for e in b.events if e not in a.events)
    reads = None if a.pending_reads is None or b.pending_reads is None else a.pending_reads | b.pending_reads
    return _Candidate(events, joined, a.pending + b.pending, reads)


_IMPURE = frozenset({"RAND", "NOW", "UUID", "STRUUID", "BNODE"})


def _pure(expr: object) -> bool:
    """Is a filter a function of the variables it reads, so that its outcome
    can be reused for equal bindings? Not with RAND(), NOW(), UUID(),
    STRUUID(), BNODE() or a graph pattern (EXISTS) anywhere inside."""
    if isinstance(expr, FunctionCall) and isinstance(expr.name, str) and expr.name.upper() in _IMPURE:
        return False
    if isinstance(expr, (Exists, Aggregate)):
        return False
    if isinstance(expr, tuple):
        return all(map(_pure, expr))
    if is_dataclass(expr):
        return all(_pure(getattr(expr, f.name)) for f in fields(expr))
    return True


def _unwind(path: Path) -> tuple[int, ...]:
    steps: list[tuple[int, ...]] = []
    while path is not None:
        steps.append(path[0])
        path = path[1]
    return tuple(event for step in reversed(steps) for event in step)
