"""The pure NFA runtime: `process(state, groups)` and `advance_time(state, ...)`.

Input is the GPM stage's output for one partition key, grouped by timestamp:
a `Group` holds, per GPM, the events at that timestamp it matched and their
solution mappings. Every event of the query's streamset has a dense *rank*
(events sharing a timestamp share it), so "no event strictly between" (strict
contiguity, SPAseq Def. 12) is `rank == last_rank + 1` even though this
partition never sees the other keys' events.

Runs are per solution mapping (`plugin/nfa/runs.py`: what runs, matches and
a step are made of). Each timestamp, every state the group concerns offers its
atom's candidates (`candidates.py`) to its waiting runs (`outcomes.py`: join
and stateful filters); under a consuming policy the policy picks which run
takes an input and what a match uses up (`consumption.py`); matches of
interval patterns with anti-joins are decided once the timestamp is in
(`antijoins.py`). This module drives that: the run loops and the moves of a
run past a state (`_spawn`).

No Spark, no Oxigraph: the runtime only needs the expression evaluator for
stateful filters.

This is the general runtime. The common automata run on the lean runtime
(`plugin/nfa/lean.py`), which extends this class and gives the same results faster, or on
the shared buffer (`plugin/nfa/shared_buffer.py`) where skip-till-any would multiply runs;
`keyed.runtime_for` chooses (docs/semantics.md, "Which runtime runs an automaton, and the shared buffer").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import replace

from rsep.plugin.algebra.events import ConsumptionPolicy, SelectionStrategy
from rsep.plugin.nfa.antijoins import AntiJoins
from rsep.plugin.nfa.automaton import Automaton, IntervalFilter, State, atom_gpms
from rsep.plugin.nfa.candidates import Candidates
from rsep.plugin.nfa.consumption import Consumption, free, move_on
from rsep.plugin.nfa.interval_checks import IntervalChecks, Spans
from rsep.plugin.nfa.memory import Forgetting
from rsep.plugin.nfa.outcomes import CandidateIndex, Outcomes, SharingGate, checked, unmarked, without
from rsep.plugin.nfa.runs import (
    Candidate,
    CandidateCache,
    Group,
    Mapping_,
    Match,
    NfaState,
    Path,
    RankOrderError,
    Run,
    Step,
    run_age,
    unwind,
)

__all__ = ["Group", "Match", "NfaState", "Path", "RankOrderError", "Run", "Runtime"]
"""The public entry point: engines, the window runtime and tests import these from here."""


class Runtime:
    """An automaton plus its compiled stateful filters. Build one per process:
    the automaton pickles (it holds expressions, not closures) and the filters
    compile here."""

    def __init__(self, automaton: Automaton) -> None:
        self.automaton = automaton
        self.within = automaton.within
        self._candidates = Candidates(automaton)
        self.visited: Counter[int] = Counter()
        """Runs examined per state id: the run index (`_touching`) keeps it to the states
        whose atom or guards read a GPM the group has rows for (SPAseq §7.2.2)."""
        self._touching: dict[int, list[State]] = {}
        for state in automaton.states:
            for gpm in atom_gpms(state.atom).union(*map(atom_gpms, state.guards)):
                self._touching.setdefault(gpm, []).append(state)
        self._initial = [automaton.states[i] for i in automaton.initial]
        self._touched_by: dict[tuple[int, ...], tuple[State, ...]] = {}
        self._sharing = SharingGate()
        self._intervals = {s.id: IntervalChecks(s.interval) for s in automaton.states if s.interval}
        self._marked = any(
            not isinstance(check, IntervalFilter)
            for s in automaton.states
            if s.interval
            for check in s.interval.filters
        )
        """BINDs or VALUES may leave markers in mappings (`extension_marker`), which matches and
        remembered solutions shed."""
        self._anti_joins = AntiJoins(self._marked)
        self._forgetting = Forgetting(automaton) if self._intervals else None
        self._selective = automaton.policy is not ConsumptionPolicy.UNRESTRICTED
        self._recent = automaton.policy is ConsumptionPolicy.RECENT
        self._policy = Consumption(
            self._recent, self._candidates.join_atoms, self._candidates.unit, self._candidates.unit_event
        )
        self._by_birth = self._selective and bool(self._intervals)
        """Interval patterns under a consuming policy rank the runs of a state by their latest
        step (the order they reached the state in, which is the order of their list), as the
        binary reading of a SEQ chain does (`_select_runs`)."""
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
                raise RankOrderError(f"rank {group.rank} arrived after rank {state.last_rank}")
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

    def settle(self, state: NfaState, time: float) -> list[Match]:
        """The pending matches (open anti-joins, CQELS-CEP NO_TAIL) that no
        remembered solution ending at or before `time` blocks, in detection
        order. They stay pending, since a later solution may still block them
        (NO_TAIL is evaluated at a time t, not at detection); blocked ones are
        dropped."""
        return sorted(self._shed(self._anti_joins.settle(state, time)), key=Match.key)

    # ------------------------------------------------------------------ one timestamp

    def _process_group(self, state: NfaState, group: Group) -> list[Match]:
        step = Step(state, group)
        for spec in self._touched(tuple(group.rows)):
            runs = state.runs.get(spec.id)
            if runs:
                self.visited[spec.id] += len(runs)
                state.runs[spec.id] = self._advance_runs(spec, runs, step)
        if step.moved:
            move_on(state, step.moved)
        for spec in self._initial:
            candidates = self._candidates.matches(spec.atom, group, step.cache)
            if self._by_birth:  # runs are born, hence ranked, in arrival order
                candidates = sorted(candidates, key=self._policy.offer_order)
            for cand in candidates:
                if step.consumed and not step.consumed.isdisjoint(cand.units):
                    continue
                mapping = checked(cand, {})
                if mapping is not None:
                    self._spawn(spec, None, cand, mapping, step)
        for atom in self._candidates.joins_touched(tuple(group.rows)):
            self._candidates.matches(atom, group, step.cache)  # join groups keep this group's occurrences
        for run in step.born:
            state.runs.setdefault(run.state, []).append(run)
        if step.deferred:
            for match in self._anti_joins.resolve(step.deferred, state):
                self._report(match, step)
        if self._selective and step.matches:
            self._policy.select_matches(step)
            self._policy.consume(state, step)
        return self._shed(step.matches.values())

    def _shed(self, matches: Iterable[Match]) -> list[Match]:
        """Matches without the markers BINDs and VALUES left in their mappings."""
        if not self._marked:
            return list(matches)
        return [replace(match, mapping=unmarked(match.mapping)) for match in matches]

    def _touched(self, gpms: tuple[int, ...]) -> tuple[State, ...]:
        """The states a group with rows of `gpms` concerns (few distinct sets: cached), in the
        same order whatever the order of the group's rows: under a consuming policy the states
        visited first take the inputs they share."""
        found = self._touched_by.get(gpms)
        if found is None:
            touched = {s.id: s for gpm in sorted(gpms) for s in self._touching.get(gpm, ())}
            found = self._touched_by[gpms] = tuple(touched.values())
        return found

    def _advance_runs(self, spec: State, runs: list[Run], step: Step) -> list[Run]:
        if self._selective:
            return self._select_runs(spec, runs, step)
        group = step.group
        share = self._sharing.share(spec, runs)
        candidates = self._candidates.matches(spec.atom, group, step.cache)
        checks = [Outcomes(cand, spec.rebind, share) for cand in candidates]
        index = CandidateIndex(checks, spec.rebind) if len(checks) > 1 else None
        guards: list[Outcomes] | None = None
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
            self._sharing.learn(spec, [*checks, *(guards or ())])
        return keep

    def _select_runs(self, spec: State, runs: list[Run], step: Step) -> list[Run]:
        """Chronological / recent selection (RSEP-QL SEQ^c, SEQ^r): each event
        is taken by the earliest / latest waiting run it fits, and that run's
        inputs move on with it (they are consumed from this state). Interval
        patterns rank runs by their latest step (`_by_birth`); a run fits when
        the step's own element admits it, and stays taken when a FILTER over
        earlier steps too then drops the result (`_spawn`).

        Interval patterns wait for one partial match in several states, one per
        detection order it may continue in (`_logical`): there the runs holding the
        same inputs are one partial match, which takes an input in every order it
        fits and then moves on from all of them (`move_on`)."""
        group = step.group
        alive = [r for r in runs if self._alive(spec, r, group.rank, group.time)]
        if self._by_birth:
            order = alive[::-1] if self._recent else alive
        else:
            order = sorted(alive, key=run_age, reverse=self._recent)
        taken: set[int] = set()
        forks: dict[object, list[Run]] | None = None
        # inputs at one timestamp are taken in arrival order, whatever order the GPM stage
        # returned its rows in (Oxigraph's is unspecified; Spark's shuffle keeps none)
        candidates = self._candidates.matches(spec.atom, group, step.cache)
        for cand in sorted(candidates, key=self._policy.offer_order):
            if not self._logical and step.consumed and not step.consumed.isdisjoint(cand.units):
                continue
            for run in order:
                if id(run) in taken:
                    continue
                held = frozenset(run.units or ()) if self._logical else None
                if held is not None and not free(cand.units, held, step):
                    continue
                joined = checked(cand, without(run.mapping, spec.rebind))
                if joined is not None and self._spawn(spec, run, cand, joined, step):
                    taken.add(id(run))
                    step.consumed.update(cand.units)
                    if held is not None:
                        step.takers.update(dict.fromkeys(cand.units, held))
                        step.moved.add(held)
                    if self._marked:  # BIND/VALUES fork a run into several with its inputs
                        if forks is None:
                            forks = {}
                            for each in order:
                                forks.setdefault(each.units, []).append(each)
                        self._take_with_forks(spec, run, forks.get(run.units or (), []), cand, taken, step)
                    break
        return [r for r in alive if id(r) not in taken]

    def _take_with_forks(
        self, spec: State, run: Run, same: list[Run], cand: Candidate, taken: set[int], step: Step
    ) -> None:
        """The other runs holding exactly `run`'s inputs (`same`: VALUES rows, UNION branches of
        one solution) are the same partial match: each takes `cand` where it fits, and all move on
        with it (docs/semantics.md, "Selection and consumption policies")."""
        for fork in same:
            if id(fork) in taken or fork.mapping == run.mapping:
                continue
            taken.add(id(fork))
            joined = checked(cand, without(fork.mapping, spec.rebind))
            if joined is not None:
                self._spawn(spec, fork, cand, joined, step)

    def _within(self, spec: State) -> float | None:
        """The window, except for auxiliary patterns: an optional side's
        solution may block a match however long before it ended."""
        return None if spec.interval is not None and spec.interval.auxiliary else self.within

    def _alive(self, spec: State, run: Run, rank: int, time: float) -> bool:
        within = self._within(spec)
        if within is not None and time - run.start_time > within:
            return False
        return spec.max_gap is None or rank <= run.last_rank + spec.max_gap

    def _guard_checks(self, spec: State, group: Group, cache: CandidateCache, share: bool) -> list[Outcomes]:
        """What a run is checked against for "did a guarded (negated or skipped
        optional) element occur compatibly?"."""
        matches = (cand for guard in spec.guards for cand in self._candidates.matches(guard, group, cache))
        return [Outcomes(cand, frozenset(), share) for cand in matches]

    def _spawn(self, spec: State, parent: Run | None, cand: Candidate, mapping: Mapping_, step: Step) -> bool:
        """Move `parent` (None: a new run) past `spec` with the candidate's
        events; report, remember or defer a completed match. False if the
        take is not allowed after all (window, SeqJoin, the element's own checks);
        True if it is, even when a check over earlier steps then drops the result."""
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
            # The step's own element decides whether the run may take the candidate (under a
            # consuming policy: which run the policy selects); the checks of groups holding earlier
            # steps too apply to what was selected, which they cannot give back (`IntervalSpec.own`).
            if checks.plain:
                if not checks.selects(spans, mapping):
                    return False
                if not checks.complete_checks.holds(spans, mapping):
                    return True
            else:  # BIND, VALUES: the mapping grows, or forks into several
                selected = checks.select(spans, mapping)
                if not selected:
                    return False
                extended = checks.complete(spans, selected)
                if not extended:
                    return True
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
        step: Step,
    ) -> Match:
        interval = spec.interval
        match = Match(unwind(path), start_time, step.group.time, start_rank, step.group.rank, mapping)
        if interval is not None and interval.anti:
            step.deferred.append((interval, match, spans))
        elif interval is not None and interval.records is not None:
            step.state.history.setdefault(interval.records, []).append(
                (unmarked(mapping) if self._marked else mapping, (start_time, step.group.time))
            )
        else:
            self._report(match, step)
        return match

    def _report(self, match: Match, step: Step) -> None:
        """Interval patterns report sets of <mapping, start, end> (EP-SPARQL
        §4.2): the same solution from other occurrences is reported once."""
        if self._intervals:
            mapping = unmarked(match.mapping) if self._marked else match.mapping
            key: tuple[object, ...] = (match.start_time, match.end_time, tuple(sorted(mapping.items())))
        else:
            key = (match.events, tuple(sorted(match.mapping.items())))
        step.matches.setdefault(key, match)
