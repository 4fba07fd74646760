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

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Sequence as Seq
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any

from rsep.plugin.algebra.events import ConsumptionPolicy, SelectionStrategy
from rsep.plugin.algebra.sparql import Aggregate, Exists, FunctionCall
from rsep.plugin.expr import compile_filter
from rsep.plugin.nfa.automaton import (
    EXTENSION_MARKER,
    AntiJoin,
    Atom,
    Automaton,
    ConjunctionAtom,
    DisjunctionAtom,
    GpmAtom,
    IntervalFilter,
    IntervalSpec,
    JoinAtom,
    Relation,
    State,
    atom_gpms,
)
from rsep.plugin.nfa.intervals import (
    IntervalChecks,
    Span,
    Spans,
    TimedPredicate,
    hull,
    relation_holds,
    scoped,
    timed_predicate,
)
from rsep.plugin.nfa.joins import (
    Occurrence,
    OccurrenceIndexes,
    expire,
    fresh_occurrences,
    joined_events,
    new_joins,
    remember_rows,
)
from rsep.plugin.nfa.memory import Forgetting, RememberedIndexes

Mapping_ = dict[str, str]
Unit = tuple[object, ...]
"""One consumable input: (event id,) or (event id, subject, predicate, object)."""
Path = tuple[tuple[int, ...], Any] | None
"""(events taken at one step, parent path): a persistent list, newest first."""


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
    units: tuple[Unit, ...] = ()
    """The inputs taken, for consuming policies: (event, GPM, solution) per
    triple pattern (not the whole event graph, which may hold other inputs)."""
    begins: tuple[float, ...] = ()
    """Interval patterns: the start time of each part (GPM or join group) taken."""
    earlier: tuple[int, ...] = ()
    """Consuming policies: the events a join group's join took from earlier timestamps
    (its partners, which the policy chooses among)."""


class _Cache(dict[Atom, list[_Candidate]]):
    """What each atom matches at one group (run-independent), and the key's state,
    whose join occurrences join atoms read and extend."""

    __slots__ = ("state",)

    def __init__(self, state: NfaState) -> None:
        super().__init__()
        self.state = state


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
        if key is None:
            return _checked(self.cand, mapping, self.rebind)
        if ok:
            return _merged(mapping, self.cand.mapping, self.rebind)
        joined = _checked(self.cand, mapping, self.rebind)
        self.seen[key] = joined is not None
        return joined


class _CandidateIndex:
    """A hash join of a state's runs with a group's candidates, instead of
    trying every candidate on every run: candidates are bucketed by their
    values of the variables all of them bind (minus the state's `rebind`)
    and the first run binds, and a run that binds those only meets its
    bucket. The others would fail to join on one of those variables; the
    bucket keeps the candidates' order, so runs spawn in the same order.
    This is what keeps one NFA for many keys (no partition key) linear."""

    __slots__ = ("buckets", "checks", "common", "names")

    def __init__(self, checks: list[_Outcomes], rebind: frozenset[str]) -> None:
        self.checks = checks
        self.common = frozenset.intersection(*(frozenset(c.cand.mapping) for c in checks)) - rebind
        self.names: tuple[str, ...] | None = None
        self.buckets: dict[tuple[str | None, ...], list[_Outcomes]] | None = None

    def meeting(self, mapping: Mapping_) -> list[_Outcomes]:
        """The candidates a run with this mapping may join, in their order."""
        if self.names is None:
            self.names = tuple(sorted(n for n in self.common if n in mapping))
            if self.names:
                self.buckets = {}
                for check in self.checks:
                    bucket = tuple(check.cand.mapping[n] for n in self.names)
                    self.buckets.setdefault(bucket, []).append(check)
        if self.buckets is None:
            return self.checks
        values = tuple(map(mapping.get, self.names))
        if None in values:  # the run lacks one of the variables: it meets every candidate
            return self.checks
        return self.buckets.get(values, [])


class _Step:
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
        self.cache = _Cache(state)
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
        self.visited: Counter[int] = Counter()
        """Runs examined per state id: the run index (`_touching`) keeps it to the states
        whose atom or guards read a GPM the group has rows for (SPAseq §7.2.2)."""
        self._touching: dict[int, list[State]] = {}
        for state in automaton.states:
            for gpm in atom_gpms(state.atom).union(*map(atom_gpms, state.guards)):
                self._touching.setdefault(gpm, []).append(state)
        self._initial = [automaton.states[i] for i in automaton.initial]
        self._touched_by: dict[tuple[int, ...], tuple[State, ...]] = {}
        self._share_pause: dict[int, int] = {}
        self._intervals = {s.id: IntervalChecks(s.interval) for s in automaton.states if s.interval}
        self._marked = any(
            not isinstance(check, IntervalFilter)
            for s in automaton.states
            if s.interval
            for check in s.interval.filters
        )
        """BINDs or VALUES may leave markers in mappings (`extension_marker`), which matches and
        remembered solutions shed."""
        self._conditions: dict[AntiJoin, TimedPredicate] = {}
        self._forgetting = Forgetting(automaton) if self._intervals else None
        self._indexes = RememberedIndexes()
        self._joins = {
            a for s in automaton.states for a in (s.atom, *_operands(s.atom)) if isinstance(a, JoinAtom)
        }
        self._joins_by: dict[tuple[int, ...], tuple[JoinAtom, ...]] = {}
        self._join_atoms = {a.memory: a for a in self._joins}
        self._occurrences = OccurrenceIndexes()
        self._selective = automaton.policy is not ConsumptionPolicy.UNRESTRICTED
        self._recent = automaton.policy is ConsumptionPolicy.RECENT
        forks = len(automaton.initial) > 1 or any(len(s.after_take) > 1 for s in automaton.states)
        self._logical = self._selective and bool(self._intervals) and forks
        """A partial match is its set of inputs, whichever detection order (state) it waits in
        (`_select_runs`): interval patterns enumerate the orders of one pattern, and one
        partial match waits in several states when an input starts or extends runs in
        several of them."""

    def new_state(self) -> NfaState:
        return NfaState()

    # ------------------------------------------------------------------ driving

    def process(self, state: NfaState, groups: Iterable[Group]) -> tuple[NfaState, list[Match]]:
        """Feed groups in rank order; returns the (updated) state and the matches
        completed, in detection order. The order of the GPMs in a group's rows does not
        matter (`_touched`)."""
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
        if self._forgetting is not None:
            self._forgetting.forget(state.joins, state.history, time)
        return state

    # ------------------------------------------------------------------ one timestamp

    def _process_group(self, state: NfaState, group: Group) -> list[Match]:
        step = _Step(state, group)
        for spec in self._touched(tuple(group.rows)):
            runs = state.runs.get(spec.id)
            if runs:
                self.visited[spec.id] += len(runs)
                state.runs[spec.id] = self._advance_runs(spec, runs, step)
        if step.moved:
            self._move_on(state, step.moved)
        for spec in self._initial:
            for cand in self._matches(spec.atom, group, step.cache):
                if step.consumed and not step.consumed.isdisjoint(cand.units):
                    continue
                mapping = _checked(cand, {})
                if mapping is not None:
                    self._spawn(spec, None, cand, mapping, step)
        for atom in self._joins_touched(tuple(group.rows)):
            self._matches(atom, group, step.cache)  # join groups keep this group's occurrences
        for run in step.born:
            state.runs.setdefault(run.state, []).append(run)
        self._resolve_anti_joins(step)
        if self._selective and step.matches:
            self._select_matches(step)
            self._consume(state, step)
        return self._shed(step.matches.values())

    def _shed(self, matches: Iterable[Match]) -> list[Match]:
        """Matches without the markers BINDs and VALUES left in their mappings."""
        if not self._marked:
            return list(matches)
        return [replace(match, mapping=_unmarked(match.mapping)) for match in matches]

    def _joins_touched(self, gpms: tuple[int, ...]) -> tuple[JoinAtom, ...]:
        found = self._joins_by.get(gpms)
        if found is None:
            found = self._joins_by[gpms] = tuple(a for a in self._joins if not atom_gpms(a).isdisjoint(gpms))
        return found

    def _touched(self, gpms: tuple[int, ...]) -> tuple[State, ...]:
        """The states a group with rows of `gpms` concerns (few distinct sets: cached), in the
        same order whatever the order of the group's rows: under a consuming policy the states
        visited first take the inputs they share."""
        found = self._touched_by.get(gpms)
        if found is None:
            touched = {s.id: s for gpm in sorted(gpms) for s in self._touching.get(gpm, ())}
            found = self._touched_by[gpms] = tuple(touched.values())
        return found

    def _advance_runs(self, spec: State, runs: list[Run], step: _Step) -> list[Run]:
        if self._selective:
            return self._select_runs(spec, runs, step)
        group = step.group
        share = self._sharing(spec, runs)
        checks = [_Outcomes(cand, spec.rebind, share) for cand in self._matches(spec.atom, group, step.cache)]
        index = _CandidateIndex(checks, spec.rebind) if len(checks) > 1 else None
        guards: list[_Outcomes] | None = None
        keep: list[Run] = []
        # Attributes read into locals: the loop below runs for every run at every group.
        within, max_gap, rank, time = self._within(spec), spec.max_gap, group.rank, group.time
        next_only = spec.strategy is SelectionStrategy.SKIP_TILL_NEXT
        for run in runs:
            # self._alive(spec, run, rank, time), inlined
            if within is not None and time - run.start_time > within:
                continue
            if max_gap is not None and rank > run.last_rank + max_gap:
                continue
            took = False
            for check in checks if index is None else index.meeting(run.mapping):
                joined = check.join(run.mapping)
                if joined is not None and self._spawn(spec, run, check.cand, joined, step):
                    took = True
            if spec.guards:
                if guards is None:
                    guards = self._guard_checks(spec, group, step.cache, share)
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

    def _select_runs(self, spec: State, runs: list[Run], step: _Step) -> list[Run]:
        """Chronological / recent selection (RSEP-QL SEQ^c, SEQ^r): each event
        is taken by the earliest / latest waiting run it fits, and that run's
        inputs move on with it (they are consumed from this state).

        Interval patterns wait for one partial match in several states, one per
        detection order it may continue in (`_logical`): there the runs holding the
        same inputs are one partial match, which takes an input in every order it
        fits and then moves on from all of them (`_move_on`)."""
        group = step.group
        alive = [r for r in runs if self._alive(spec, r, group.rank, group.time)]
        order = sorted(alive, key=_run_age, reverse=self._recent)
        taken: set[int] = set()
        # inputs at one timestamp are taken in arrival order, whatever order the GPM stage
        # returned its rows in (Oxigraph's is unspecified; Spark's shuffle keeps none)
        for cand in sorted(self._matches(spec.atom, group, step.cache), key=self._offer_order):
            if not self._logical and step.consumed and not step.consumed.isdisjoint(cand.units):
                continue
            for run in order:
                if id(run) in taken:
                    continue
                held = frozenset(run.units or ()) if self._logical else None
                if held is not None and not self._free(cand.units, held, step):
                    continue
                joined = _checked(cand, _without(run.mapping, spec.rebind))
                if joined is not None and self._spawn(spec, run, cand, joined, step):
                    taken.add(id(run))
                    step.consumed.update(cand.units)
                    if held is not None:
                        step.takers.update(dict.fromkeys(cand.units, held))
                        step.moved.add(held)
                    break
        return [r for r in alive if id(r) not in taken]

    @staticmethod
    def _free(units: tuple[Unit, ...], held: frozenset[Unit], step: _Step) -> bool:
        """May the partial match holding `held` take these inputs? Unless another partial
        match took one of them at this timestamp."""
        return all(unit not in step.consumed or step.takers.get(unit) == held for unit in units)

    @staticmethod
    def _move_on(state: NfaState, moved: set[frozenset[Unit]]) -> None:
        """The partial matches that took an input at this timestamp no longer wait where
        they did, in any state (their runs there that took it are already gone)."""
        for state_id, runs in list(state.runs.items()):
            kept = [run for run in runs if frozenset(run.units or ()) not in moved]
            if len(kept) < len(runs):
                state.runs[state_id] = kept

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

    def _within(self, spec: State) -> float | None:
        """The window, except for auxiliary patterns: an optional side's
        solution may block a match however long before it ended."""
        return None if spec.interval is not None and spec.interval.auxiliary else self.within

    def _alive(self, spec: State, run: Run, rank: int, time: float) -> bool:
        within = self._within(spec)
        if within is not None and time - run.start_time > within:
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
        self, spec: State, parent: Run | None, cand: _Candidate, mapping: Mapping_, step: _Step
    ) -> bool:
        """Move `parent` (None: a new run) past `spec` with the candidate's
        events; report, remember or defer a completed match. False if the
        take is not allowed after all (window, interval conditions)."""
        group, events = step.group, cand.events
        start_time = group.time if parent is None else parent.start_time
        start_rank = group.rank if parent is None else parent.start_rank
        within = self._within(spec)
        if within is not None and group.time - start_time > within:
            return False
        spans = None
        extended: list[Mapping_] | None = None
        checks = self._intervals.get(spec.id)
        if checks is not None:
            begins = cand.begins
            previous = parent.spans if parent is not None and parent.spans is not None else ()
            if not checks.admits(previous, begins):
                return False
            spans = (*previous, *((begin, group.time) for begin in begins))
            if checks.extends:  # BIND, VALUES: the mapping grows, or forks into several
                extended = checks.extended(spans, mapping)
                if not extended:
                    return False
            elif not checks.holds(spans, mapping):
                return False
            start_time = min(start_time, *begins)
        path: Path = (events, None if parent is None else parent.path)
        units = None
        if self._selective:
            units = (*(parent.units or () if parent is not None else ()), *cand.units)
        for each in (mapping,) if extended is None else extended:
            for target in spec.after_take:
                step.born.append(Run(target, each, start_time, start_rank, group.rank, path, spans, units))
            if spec.accepting:
                match = self._accept(spec, path, start_time, start_rank, each, spans, step)
                if units is not None:
                    step.units[id(match)] = units
        return True

    def _accept(
        self,
        spec: State,
        path: Path,
        start_time: float,
        start_rank: int,
        mapping: Mapping_,
        spans: Spans | None,
        step: _Step,
    ) -> Match:
        interval = spec.interval
        match = Match(_unwind(path), start_time, step.group.time, start_rank, step.group.rank, mapping)
        if interval is not None and interval.anti:
            step.deferred.append((interval, match, spans))
        elif interval is not None and interval.records is not None:
            step.state.history.setdefault(interval.records, []).append(
                (_unmarked(mapping) if self._marked else mapping, (start_time, step.group.time))
            )
        else:
            self._report(match, step)
        return match

    def _report(self, match: Match, step: _Step) -> None:
        """Interval patterns report sets of <mapping, start, end> (EP-SPARQL
        §4.2): the same solution from other occurrences is reported once."""
        if self._intervals:
            mapping = _unmarked(match.mapping) if self._marked else match.mapping
            key: tuple[object, ...] = (match.start_time, match.end_time, tuple(sorted(mapping.items())))
        else:
            key = (match.events, tuple(sorted(match.mapping.items())))
        step.matches.setdefault(key, match)

    def _resolve_anti_joins(self, step: _Step) -> None:
        """Matches with anti-joins, once the whole timestamp is in: an optional
        side ending at this very timestamp (EQUALSOPTIONAL) counts too. A match
        with an open anti-join (NO_TAIL) waits in `pending` for `settle`."""
        order = sorted(step.deferred, key=_resolution_order)
        for interval, match, spans in order:
            assert spans is not None
            closed = [anti for anti in interval.anti if not anti.relation.open]
            if any(self._blocked(anti, match, spans, step.state) for anti in closed):
                continue
            if interval.records is not None:
                mapping = _unmarked(match.mapping) if self._marked else match.mapping
                remembered = (mapping, (match.start_time, match.end_time))
                step.state.history.setdefault(interval.records, []).append(remembered)
            elif len(closed) < len(interval.anti):
                step.state.pending.append((interval, match, spans))
            else:
                self._report(match, step)

    def settle(self, state: NfaState, time: float) -> list[Match]:
        """The pending matches (open anti-joins, CQELS-CEP NO_TAIL) that no
        remembered solution ending at or before `time` blocks, in detection
        order. They stay pending, since a later solution may still block them
        (NO_TAIL is evaluated at a time t, not at detection); blocked ones are
        dropped."""
        kept: list[tuple[IntervalSpec, Match, Spans]] = []
        for interval, match, spans in state.pending:
            opened = [anti for anti in interval.anti if anti.relation.open]
            if not any(self._blocked(anti, match, spans, state, until=time) for anti in opened):
                kept.append((interval, match, spans))
        state.pending = kept
        return sorted(self._shed(match for _, match, _ in kept), key=Match.key)

    def _blocked(
        self, anti: AntiJoin, match: Match, spans: Spans, state: NfaState, until: float | None = None
    ) -> bool:
        if anti.relation is Relation.WITHIN_GAP:
            mandatory = (hull(spans, anti.steps)[1], hull(spans, anti.later)[0])
        else:
            mandatory = hull(spans, anti.steps)
        base = scoped(match.mapping, anti.scope, anti.unbound)
        condition = self._condition(anti)
        interval = hull(spans, anti.steps)  # σ of the condition: the mandatory side's interval (§4.2)
        for remembered, span in self._indexes.meeting(state.history.get(anti.aux, []), anti.scope, base):
            if until is not None and span[1] > until:
                continue
            if not relation_holds(anti.relation, span, mandatory):
                continue
            joined = _join(base, remembered)
            if joined is not None and (condition is None or condition(joined, interval)):
                return True
        return False

    def _condition(self, anti: AntiJoin) -> TimedPredicate | None:
        if anti.condition is None:
            return None
        found = self._conditions.get(anti)
        if found is None:
            found = self._conditions[anti] = timed_predicate(anti.condition)
        return found

    def _preference(self, events: Seq[int]) -> tuple[int, ...]:
        """Sorts inputs the policy prefers first: the earliest (chronological) or the
        latest (recent), compared from the earliest or the latest one on."""
        if self._recent:
            return tuple(-event for event in sorted(events, reverse=True))
        return tuple(sorted(events))

    def _offer_order(self, cand: _Candidate) -> tuple[object, ...]:
        """The order a state's runs are offered a timestamp's candidates in: by arrival of
        their inputs of this timestamp, then (join groups) by the policy's preference among
        the earlier inputs they join."""
        if not cand.earlier:
            return cand.events, (), sorted(cand.mapping.items())
        now = tuple(event for event in cand.events if event not in cand.earlier)
        return now, self._preference(cand.earlier), sorted(cand.mapping.items())

    def _select_matches(self, step: _Step) -> None:
        """A timestamp's matches share no input (RSEP-QL §4.4: an input is used once): where
        they would (several joins of a join group, or runs holding one earlier input), the
        policy's preferred one (`_preference`) is reported."""
        if len(step.matches) < 2:
            return
        ranked = sorted(step.matches.items(), key=lambda item: self._preference(item[1].events))
        used: set[Unit] = set()
        kept: set[tuple[object, ...]] = set()
        for key, match in ranked:
            units = step.units.get(id(match), ())
            if used.isdisjoint(units):
                used.update(units)
                kept.add(key)
        if len(kept) < len(step.matches):
            step.matches = {key: match for key, match in step.matches.items() if key in kept}

    def _consume(self, state: NfaState, step: _Step) -> None:
        """Inputs of a reported match are used up: no run may still hold them, and no join
        group may still join them."""
        used = {unit for match in step.matches.values() for unit in step.units.get(id(match), ())}
        for state_id, runs in list(state.runs.items()):
            kept = [run for run in runs if used.isdisjoint(run.units or ())]
            if kept:
                state.runs[state_id] = kept
            else:
                del state.runs[state_id]
        events = {unit[0] for unit in used}
        for memory, occurrences in list(state.joins.items()):
            operands = self._join_atoms[memory].operands
            if any(
                o[1] in events and self._unit(operands[o[0]].gpm, o[1], o[2]) in used for o in occurrences
            ):
                state.joins[memory] = [
                    o for o in occurrences if self._unit(operands[o[0]].gpm, o[1], o[2]) not in used
                ]

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
        if isinstance(atom, JoinAtom):
            return self._join_matches(atom, group, cache)
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

    def _join_matches(
        self, atom: JoinAtom, group: Group, cache: dict[Atom, list[_Candidate]]
    ) -> list[_Candidate]:
        """The joins of a join group completed at this group; its occurrences here are
        then remembered (join groups have no residual filters)."""
        assert isinstance(cache, _Cache)
        rows = [
            [(c.events[0], c.mapping, c.begins[0]) for c in self._matches(op, group, cache)]
            for op in atom.operands
        ]
        fresh = fresh_occurrences(rows, group.time)
        joins = cache.state.joins
        memory = joins.get(atom.memory) or []
        horizon = None
        if atom.windowed and self.within is not None and memory:  # as runs expire (`_alive`)
            memory, stale = expire(memory, group.time - self.within)
            joins[atom.memory] = memory
            horizon = group.time - self.within if stale else None
        found = [
            self._join_candidate(atom, taken, mapping, start, group.time)
            for taken, mapping, start in new_joins(atom, memory, fresh, self._occurrences, horizon)
        ]
        remember_rows(atom, joins, fresh)
        return found

    def _join_candidate(
        self, atom: JoinAtom, taken: Seq[Occurrence], mapping: Mapping_, start: float, time: float
    ) -> _Candidate:
        events = joined_events(taken, time)
        if not self._selective:
            return _Candidate(events, mapping, (), frozenset(), (), (start,))
        units = tuple(self._unit(atom.operands[o[0]].gpm, o[1], o[2]) for o in taken)
        earlier = tuple(sorted(o[1] for o in taken if o[4] != time))
        return _Candidate(events, mapping, (), frozenset(), units, (start,), earlier)

    def _unit(self, gpm: int, event: int, mapping: Mapping[str, str]) -> Unit:
        """The input a GPM row stands for: the triple it matched, or the event."""
        inputs = self.automaton.inputs
        template = inputs[gpm] if gpm < len(inputs) else None
        if template is None:
            return (event,)
        return (event, *(_instantiate(term, mapping) for term in template))

    def _gpm_matches(self, gpm: int, group: Group) -> list[_Candidate]:
        residuals = self._residuals[gpm]
        out: list[_Candidate] = []
        timed, starts, time = bool(self._intervals), group.starts, group.time
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
                units: tuple[Unit, ...] = (self._unit(gpm, event, mapping),) if self._selective else ()
                begins = ((starts.get(event, time) if starts else time),) if timed else ()
                out.append(_Candidate((event,), dict(mapping), tuple(pending), reads, units, begins))
        return out


def _join(
    base: Mapping[str, str], mapping: Mapping[str, str], drop: frozenset[str] = frozenset()
) -> Mapping_ | None:
    """`base` (without its `drop` variables) joined with `mapping`, or None if they disagree."""
    for name, value in mapping.items():
        bound = base.get(name)
        if bound is not None and bound != value and name not in drop:
            return None
    return _merged(base, mapping, drop)


def _merged(base: Mapping[str, str], mapping: Mapping[str, str], drop: frozenset[str]) -> Mapping_:
    joined = {k: v for k, v in base.items() if k not in drop} if drop else dict(base)
    joined.update(mapping)
    return joined


def _checked(
    cand: _Candidate, base: Mapping[str, str], drop: frozenset[str] = frozenset()
) -> Mapping_ | None:
    """Join a candidate into a run's mapping (without its `drop` variables)
    and apply its deferred filters."""
    joined = _join(base, cand.mapping, drop)
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
    if b.begins:  # interval patterns: a join group's events end with one of this timestamp's; keep it last
        events = tuple(e for e in a.events if e not in b.events) + b.events
    else:
        events = a.events + tuple(e for e in b.events if e not in a.events)
    reads = None if a.pending_reads is None or b.pending_reads is None else a.pending_reads | b.pending_reads
    return _Candidate(
        events,
        joined,
        a.pending + b.pending,
        reads,
        a.units + b.units,
        a.begins + b.begins,
        a.earlier + b.earlier,
    )


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


def _operands(atom: Atom) -> tuple[Atom, ...]:
    return atom.operands if isinstance(atom, (ConjunctionAtom, DisjunctionAtom)) else ()


def _instantiate(term: str, mapping: Mapping[str, str]) -> str:
    return mapping.get(term[1:], term) if term.startswith("?") else term


def _unmarked(mapping: Mapping[str, str]) -> Mapping_:
    return {k: v for k, v in mapping.items() if not k.startswith(EXTENSION_MARKER)}


def _without(mapping: Mapping_, names: frozenset[str]) -> Mapping_:
    return {k: v for k, v in mapping.items() if k not in names} if names else mapping


def _resolution_order(deferred: tuple[IntervalSpec, Match, Spans | None]) -> float:
    """Auxiliary patterns by descending index, the main pattern last: an anti-join only
    reads auxiliaries numbered after the pattern holding it (`_Context.auxiliary` reserves
    an index before compiling what it holds), so each one's solutions of this timestamp
    are remembered before any anti-join that reads them is decided."""
    records = deferred[0].records
    return float("inf") if records is None else -records


def _run_age(run: Run) -> tuple[int, ...]:
    """Orders runs by when their inputs arrived (event ids grow with time)."""
    return _unwind(run.path)


def _unwind(path: Path) -> tuple[int, ...]:
    steps: list[tuple[int, ...]] = []
    while path is not None:
        steps.append(path[0])
        path = path[1]
    return tuple(event for step in reversed(steps) for event in step)
