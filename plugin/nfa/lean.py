"""The lean NFA runtime: the general runtime's semantics for the common automata, with compact
runs and compiled checks.

`LeanRuntime` runs what `lean_plan.lean_eligible` accepts: point patterns (GPMs, `&`, `|`)
under every selection strategy, with Kleene+ and negated or optional elements (guards),
unrestricted, without interval patterns or join groups (the general `Runtime`, which it
extends, runs the rest). It follows `Runtime._process_group` step for step: the states a group
touches in the same order, each state's runs in list order, each run's candidates in order,
children appended to their states' lists after the group, initial states last, and a
timestamp's matches deduplicated on (events, mapping) in detection order; so every match,
every run and every order is the general runtime's. What differs is what a run is made of
(`lean_state.py`: a tuple of times and ranks, its path, a few slots instead of a mapping),
that a check is a compiled test over slots and a candidate's values (`lean_plan.py`) instead
of a mapping merge and the general evaluator, and that rows are grouped by key and rank in
the same pass that plans their shapes (`process_rows`, which `KeyedNfa` calls).

A row the plan does not cover (`lean_plan.Unplanned`: a variable its GPM was not declared
with) switches this runtime object to the general runtime for good (`degraded`): states are
converted (`LeanState.runs` is the general form) and processing goes on there, with the same
results.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from typing import Any

from rsep.plugin.nfa.automaton import Atom, Automaton, State, starting_gpms
from rsep.plugin.nfa.lean_filters import EMPTY
from rsep.plugin.nfa.lean_plan import Plan, StatePlan, Take, Unplanned
from rsep.plugin.nfa.lean_state import LeanRun, LeanState, Node
from rsep.plugin.nfa.lean_steps import Cand, Index, Rows, candidates, guarded, passing, slots_of, step
from rsep.plugin.nfa.lean_steps import matches as matches_at
from rsep.plugin.nfa.runs import Group, Match, NfaState, RankOrderError, Run
from rsep.plugin.nfa.runtime import Runtime
from rsep.plugin.numbering import NumberedEvent

Key = tuple[str, ...]


class LeanRuntime(Runtime):
    """The runtime for automata `lean_eligible` accepts (see the module docstring); `key`:
    the partition-key variables, equal in every row of one key's state, so never joined on."""

    def __init__(self, automaton: Automaton, key: Sequence[str] = ()) -> None:
        super().__init__(automaton)
        self.plan = Plan(automaton, key)
        self._size = len(automaton.states)
        self.degraded = False
        """A row did not fit the plan: everything runs on the general runtime from then on."""
        self._visits = [0] * self._size
        self._born: list[list[LeanRun]] = [[] for _ in automaton.states]
        """Children of one group per state, moved to the state's list after the group."""
        self._starters = starting_gpms(automaton)
        """A key with no state whose rows are of none of these stays without one: its rows start
        nothing and meet no run."""

    @property
    def visited(self) -> Counter[int]:
        """Runs examined per state id (`Runtime.visited`), by either runtime: the lean loop
        counts in a list, added in here when read."""
        counts = self._general_visits
        for state_id, count in enumerate(self._visits):
            if count:
                counts[state_id] += count
                self._visits[state_id] = 0
        return counts

    @visited.setter
    def visited(self, value: Counter[int]) -> None:
        self._general_visits = value

    def new_state(self) -> NfaState:
        return LeanState(self._size)

    # ------------------------------------------------------------------ the runtime's API

    def process(self, state: NfaState, groups: Iterable[Group]) -> tuple[NfaState, list[Match]]:
        groups = list(groups)
        if not self.degraded:
            try:
                planned = [(g.rank, g.time, self._planned(g.rows)) for g in groups]
            except Unplanned:
                self.degraded = True
            else:
                lean = self.adopt(state)
                matches: list[Match] = []
                for rank, time, rows in planned:
                    matches.extend(self._group(lean, rank, time, rows))
                return lean, matches
        return super().process(self.general(state), groups)

    def advance_time(self, state: NfaState, rank: int, time: float) -> NfaState:
        if self.degraded:
            return super().advance_time(self.general(state), rank, time)
        lean = self.adopt_runs(state)
        states = self.automaton.states
        within = self.within
        lists = lean.lists
        nxt = rank + 1
        for state_id, runs in enumerate(lists):
            if runs:
                gap = states[state_id].max_gap
                lists[state_id] = [
                    run
                    for run in runs
                    if (within is None or time - run[0] <= within) and (gap is None or nxt <= run[2] + gap)
                ]
        lean.last_rank = max(lean.last_rank, rank)
        return lean

    def settle(self, state: NfaState, time: float) -> list[Match]:
        return [] if isinstance(state, LeanState) else super().settle(state, time)

    def general(self, state: NfaState) -> NfaState:
        """A state in the general runtime's form."""
        if not isinstance(state, LeanState):
            return state
        return NfaState(runs=state.runs, last_rank=state.last_rank)

    def adopt(self, state: NfaState) -> Any:
        """`state` in this runtime's form (a decoded checkpoint, or a new or converted state)."""
        return self.adopt_runs(state)

    def adopt_runs(self, state: NfaState) -> LeanState:
        """`state` as a lean state (a decoded checkpoint, or a new or converted state)."""
        if isinstance(state, LeanState):
            return state
        assert not state.history and not state.joins and not state.pending
        lean = LeanState(self._size, state.last_rank)
        nodes: dict[tuple[int, int], Node] = {}
        for state_id, runs in state.runs.items():
            layout = self.plan.states[state_id].layout
            for run in runs:
                assert run.path is not None
                node = nodes.get((id(run.path), id(run.mapping)))
                if node is None:
                    node = nodes[(id(run.path), id(run.mapping))] = (
                        run.path[0],
                        run.path[1],
                        run.mapping,
                        None,
                        None,
                    )
                slots = slots_of(layout, run.mapping)
                lean.lists[state_id].append((run.start_time, run.start_rank, run.last_rank, node, slots))
        return lean

    # ------------------------------------------------------------------ rows

    def process_rows(
        self,
        states: MutableMapping[Key, NfaState],
        rows: Mapping[int, Sequence[tuple[int, Mapping[str, str]]]],
        events: Mapping[int, NumberedEvent],
        key: Sequence[str],
        *,
        scratch: bool = False,
        earlier: Mapping[int, Sequence[tuple[int, Mapping[str, str]]]] | None = None,
        closed: int | None = None,
        later: dict[int, list[tuple[int, Mapping[str, str]]]] | None = None,
    ) -> list[Match]:
        """`KeyedNfa.process` (and, with `scratch`, its tentative run on copies): the rows of
        several keys (`earlier` ones first), grouped by key and rank while their shapes are
        planned, then each key's groups in rank order. With `closed`, only rows of ranks up to
        it: the others go to `later` (`KeyedNfa.step`'s pending rows), in the same pass.
        Returns the matches."""
        sources = (rows,) if earlier is None else (earlier, rows)
        if not self.degraded:
            try:
                grouped = self._grouped(sources, events, tuple(key), closed, later)
            except Unplanned:
                self.degraded = True
                if later is not None:
                    later.clear()
        if self.degraded:
            from rsep.plugin.nfa.keyed import split_closed

            ready, rest = split_closed(earlier or {}, rows, events, closed if closed is not None else 1 << 62)
            if later is not None:
                later.update(rest)
            return self._general_rows(states, ready, events, key, scratch)
        found: list[Match] = []
        starters = self._starters
        for row_key, by_rank in grouped.items():
            base = states.get(row_key)
            if (
                base is None
                and starters is not None
                and all(starters.isdisjoint(g) for _, g in by_rank.values())
            ):
                continue
            if scratch:
                lean = self.adopt(base).copy() if base is not None else self.new_state()
            else:
                lean = self.adopt(base) if base is not None else self.new_state()
                states[row_key] = lean
            for rank in sorted(by_rank):
                time, group_rows = by_rank[rank]
                found.extend(self._group(lean, rank, time, group_rows))
        return found

    def _grouped(
        self,
        sources: tuple[Mapping[int, Sequence[tuple[int, Mapping[str, str]]]], ...],
        events: Mapping[int, NumberedEvent],
        key: tuple[str, ...],
        closed: int | None,
        later: dict[int, list[tuple[int, Mapping[str, str]]]] | None,
    ) -> dict[Key, dict[int, tuple[float, Rows]]]:
        """Rows -> per key, per rank, (time, rows by GPM with their shapes); rows of ranks
        after `closed` to `later`."""
        grouped: dict[Key, dict[int, tuple[float, Rows]]] = {}
        single = key[0] if len(key) == 1 else None
        shapes = self.plan.shapes
        last = closed if closed is not None else 1 << 62
        for rows in sources:
            for gpm, gpm_rows in rows.items():
                known = shapes.rows(gpm)
                for event_id, row in gpm_rows:
                    numbered = events[event_id]
                    rank = numbered.rank
                    if rank > last:
                        assert later is not None
                        later.setdefault(gpm, []).append((event_id, row))
                        continue
                    names = tuple(row)
                    shape = known.get(names)
                    if shape is None:
                        shape = shapes.of_row(gpm, names)
                    row_key = (row[single],) if single is not None else tuple([row[n] for n in key])
                    by_rank = grouped.get(row_key)
                    if by_rank is None:
                        by_rank = grouped[row_key] = {}
                    group = by_rank.get(rank)
                    if group is None:
                        group = by_rank[rank] = (numbered.event.time.seconds, {})
                    found = group[1].get(gpm)
                    if found is None:
                        group[1][gpm] = [((event_id,), row, shape)]
                    else:
                        found.append(((event_id,), row, shape))
        return grouped

    def _general_rows(
        self,
        states: MutableMapping[Key, NfaState],
        rows: Mapping[int, Sequence[tuple[int, Mapping[str, str]]]],
        events: Mapping[int, NumberedEvent],
        key: Sequence[str],
        scratch: bool,
    ) -> list[Match]:
        from rsep.plugin.nfa.keyed import copy_nfa, groups_by_key

        found: list[Match] = []
        for row_key, groups in groups_by_key(rows, events, key).items():
            base = states.get(row_key)
            nfa = self.general(base) if base is not None else NfaState()
            if scratch:
                nfa = copy_nfa(nfa)
            else:
                states[row_key] = nfa
            found.extend(Runtime.process(self, nfa, groups)[1])
        return found

    def _planned(self, rows: Mapping[int, Sequence[tuple[int, Mapping[str, str]]]]) -> Rows:
        shapes = self.plan.shapes
        return {
            gpm: [((event,), row, shapes.of_row(gpm, tuple(row))) for event, row in found]
            for gpm, found in rows.items()
        }

    # ------------------------------------------------------------------ one timestamp

    def _group(self, state: Any, rank: int, time: float, rows: Rows) -> list[Match]:
        """`Runtime._process_group`, lean (see the module docstring)."""
        if rank <= state.last_rank:
            raise RankOrderError(f"rank {rank} arrived after rank {state.last_rank}")
        state.last_rank = rank
        lists = state.lists
        cache: dict[int, list[Cand]] = {}
        accepted: list[tuple[Node, float, int]] = []
        visits = self._visits
        for spec in self._touched(tuple(rows)):
            runs = lists[spec.id]
            if runs:
                visits[spec.id] += len(runs)
                lists[spec.id] = self._advance(spec, runs, rank, time, rows, cache, accepted)
        for spec in self._initial:
            self._start(spec, rank, time, rows, cache, accepted)
        for target, new in enumerate(self._born):
            if new:
                lists[target].extend(new)
                new.clear()
        return matches_at(accepted, rank, time)[0] if accepted else []

    def _outs(self, take: Take) -> tuple[tuple[list[LeanRun], Any], ...]:
        outs = take.outs
        if outs is None:
            outs = take.outs = tuple((self._born[target], build) for target, build in take.builds)
        return outs  # type: ignore[no-any-return]

    def _advance(
        self,
        spec: State,
        runs: list[LeanRun],
        rank: int,
        time: float,
        rows: Rows,
        cache: dict[int, list[Cand]],
        accepted: list[tuple[Node, float, int]],
    ) -> list[LeanRun]:
        """`Runtime._advance_runs`, lean: the runs of one state meet the group's candidates."""
        plan = self.plan.states[spec.id]
        memo = plan.takes
        direct = plan.direct
        if direct is not None:
            found = rows.get(direct)
            if found is None or len(found) == 1:  # the common case, in as few calls as it takes
                offer = None
                if found is not None:
                    events, cand_mapping, shape = found[0]
                    take = memo.get(shape) or self.plan.take(plan, spec, shape)
                    if not take.never:
                        offer = (events, cand_mapping, take.test, take.values(cand_mapping), take)
                if not plan.strict:
                    return self._advance_one(spec, plan, runs, rank, time, [offer] if offer else [], accepted)
                if offer is not None:
                    last = rank - 1
                    within = plan.within
                    if within is None:
                        alive = [run for run in runs if run[2] >= last]
                    else:
                        horizon = time - within
                        alive = [run for run in runs if run[0] >= horizon and run[2] >= last]
                    taking = passing(alive, take, offer[2], offer[3])
                    if taking:
                        self._children(spec, taking, rank, events, cand_mapping, offer[3], take, accepted)
                return []  # every run here meets the group a rank after its last: none stays
        offers = []
        for events, cand_mapping, shape in self._cands(spec.atom, rows, cache):
            take = memo.get(shape) or self.plan.take(plan, spec, shape)
            if not take.never:
                offers.append((events, cand_mapping, take.test, take.values(cand_mapping), take))
        gap = spec.max_gap
        if not spec.guards and len(offers) < 2:
            if gap == 1 and not plan.next_only:
                if offers:
                    self._strict(spec, runs, rank, time, offers[0], accepted)
                return []  # every run here meets the group a rank after its last: none stays
            return self._advance_one(spec, plan, runs, rank, time, offers, accepted)
        guards = self._guards(spec, rows, cache) if spec.guards else None
        index = Index(offers) if len(offers) > 1 else None
        within, next_only = plan.within, plan.next_only
        accepting = spec.accepting
        keep: list[LeanRun] = []
        for run in runs:
            if within is not None and time - run[0] > within:
                continue
            if gap is not None and rank > run[2] + gap:
                continue
            took = False
            slots = run[4]
            for events, cand_mapping, test, values, take in offers if index is None else index.meeting(slots):
                if test is not None and not test(slots, values):
                    continue
                took = True
                node = step(events, run[3], cand_mapping, take)
                if take.same:
                    child = (run[0], run[1], rank, node, slots)
                    for target_runs, _ in self._outs(take):
                        target_runs.append(child)
                else:
                    for target_runs, build in self._outs(take):
                        child_slots = slots if build is None else build(slots, values)
                        target_runs.append((run[0], run[1], rank, node, child_slots))
                if accepting:
                    accepted.append((node, run[0], run[1]))
            if guards is not None and guarded(guards, slots):
                continue
            if took and next_only:
                continue
            if gap is not None and rank >= run[2] + gap:
                continue
            keep.append(run)
        return keep

    def _strict(
        self,
        spec: State,
        runs: list[LeanRun],
        rank: int,
        time: float,
        offer: Any,
        accepted: list[tuple[Node, float, int]],
    ) -> None:
        """`_advance` under strict contiguity with a gap of one, one candidate, no guards: the
        runs alive (last at the rank before, WITHIN) that take it; none stays."""
        events, cand_mapping, test, values, take = offer
        last = rank - 1
        within = self.within
        if within is None:
            runs = [run for run in runs if run[2] >= last]
        else:
            horizon = time - within
            runs = [run for run in runs if run[0] >= horizon and run[2] >= last]
        took = passing(runs, take, test, values)
        if took:
            self._children(spec, took, rank, events, cand_mapping, values, take, accepted)

    def _advance_one(
        self,
        spec: State,
        plan: StatePlan,
        runs: list[LeanRun],
        rank: int,
        time: float,
        offers: list[Any],
        accepted: list[tuple[Node, float, int]],
    ) -> list[LeanRun]:
        """`_advance` for at most one candidate and no guards, a list comprehension per step:
        the runs alive, those that take it, those that stay."""
        within, gap = plan.within, spec.max_gap
        if within is not None:
            horizon = time - within
            runs = (
                [run for run in runs if run[0] >= horizon]
                if gap is None
                else [run for run in runs if run[0] >= horizon and rank <= run[2] + gap]
            )
        elif gap is not None:
            runs = [run for run in runs if rank <= run[2] + gap]
        if offers:
            events, cand_mapping, test, values, take = offers[0]
            took = passing(runs, take, test, values)
            if took:
                self._children(spec, took, rank, events, cand_mapping, values, take, accepted)
                if plan.next_only:
                    if len(took) == len(runs):
                        return []
                    taken = {id(run) for run in took}
                    runs = [run for run in runs if id(run) not in taken]
        if gap is not None:
            runs = [run for run in runs if rank < run[2] + gap]
        return runs

    def _children(
        self,
        spec: State,
        took: list[LeanRun],
        rank: int,
        events: tuple[int, ...],
        cand_mapping: Mapping[str, str],
        values: tuple[Any, ...],
        take: Take,
        accepted: list[tuple[Node, float, int]],
    ) -> None:
        """The steps of the runs that took the (one) candidate, and their children."""
        outs = self._outs(take)
        if take.same:
            skips = take.skips
            try:
                children = [
                    (
                        run[0],
                        run[1],
                        rank,
                        (events, (p := run[3]), cand_mapping, take, p[4] if skips[p[3]] else p),
                        run[4],
                    )
                    for run in took
                ]
            except KeyError:  # a parent step not met before: learn whether it is skipped
                for run in took:
                    take.skips_parent(run[3][3])
                children = [
                    (
                        run[0],
                        run[1],
                        rank,
                        (events, (p := run[3]), cand_mapping, take, p[4] if skips[p[3]] else p),
                        run[4],
                    )
                    for run in took
                ]
            for target_runs, _ in outs:
                target_runs.extend(children)
            if spec.accepting:
                accepted.extend([(child[3], child[0], child[1]) for child in children])
            return
        for run in took:
            node = step(events, run[3], cand_mapping, take)
            slots = run[4]
            for target_runs, build in outs:
                child_slots = slots if build is None else build(slots, values)
                target_runs.append((run[0], run[1], rank, node, child_slots))
            if spec.accepting:
                accepted.append((node, run[0], run[1]))

    def _start(
        self,
        spec: State,
        rank: int,
        time: float,
        rows: Rows,
        cache: dict[int, list[Cand]],
        accepted: list[tuple[Node, float, int]],
    ) -> None:
        """New runs from an initial state (`Runtime._process_group`'s last loop)."""
        direct = self.plan.states[spec.id].direct
        found = (rows.get(direct) or ()) if direct is not None else self._cands(spec.atom, rows, cache)
        takes = self.plan.initial_takes(spec)
        for events, cand_mapping, shape in found:
            take = takes.get(shape) or self.plan.take(None, spec, shape)
            if take.never:
                continue
            values = take.values(cand_mapping)
            if take.test is not None and not take.test(EMPTY, values):
                continue
            node = (events, None, cand_mapping, take, None)
            for target_runs, build in self._outs(take):
                target_runs.append((time, rank, rank, node, EMPTY if build is None else build(EMPTY, values)))
            if spec.accepting:
                accepted.append((node, time, rank))

    def _guards(self, spec: State, rows: Rows, cache: dict[int, list[Cand]]) -> list[tuple[Any, Any]]:
        """(test, values) of every guard candidate of this group that some run could meet."""
        plan = self.plan.states[spec.id]
        found = []
        for atom in spec.guards:
            for _, cand_mapping, shape in self._cands(atom, rows, cache):
                take = self.plan.guard(plan, shape)
                if not take.never:
                    found.append((take.test, take.values(cand_mapping)))
        return found

    # ------------------------------------------------------------------ candidates

    def _cands(self, atom: Atom, rows: Rows, cache: dict[int, list[Cand]]) -> list[Cand]:
        """What an atom matches in the group (`Candidates.matches`): run-independent, cached."""
        found = cache.get(id(atom))
        if found is None:
            found = cache[id(atom)] = self._compute(atom, rows, cache)
        return found

    def _compute(self, atom: Atom, rows: Rows, cache: dict[int, list[Cand]]) -> list[Cand]:
        return candidates(self, atom, rows, cache)


__all__ = ["LeanRuntime", "LeanState", "Run"]
