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

from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from typing import Any

from rsep.plugin.expr.values import DOUBLE
from rsep.plugin.nfa.automaton import Atom, Automaton, ConjunctionAtom, DisjunctionAtom, GpmAtom, State
from rsep.plugin.nfa.lean_plan import EMPTY, Plan, Shape, StatePlan, Take, Unplanned, holds
from rsep.plugin.nfa.lean_state import LeanRun, LeanState, Node, mapping
from rsep.plugin.nfa.lean_state import events as events_of
from rsep.plugin.nfa.outcomes import join
from rsep.plugin.nfa.runs import Group, Match, NfaState, RankOrderError, Run
from rsep.plugin.nfa.runtime import Runtime
from rsep.plugin.numbering import NumberedEvent

Row = tuple[int, Mapping[str, str], Shape]
Rows = dict[int, list[Row]]
"""A group's rows with their shapes, by GPM."""
Cand = tuple[tuple[int, ...], Mapping[str, str], Shape]
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
                slots = _slots(layout, run.mapping)
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
    ) -> list[Match]:
        """`KeyedNfa.process` (and, with `scratch`, its tentative run on copies): the rows of
        several keys, grouped by key and rank while their shapes are planned, then each key's
        groups in rank order. Returns the matches."""
        if not self.degraded:
            try:
                grouped = self._grouped(rows, events, tuple(key))
            except Unplanned:
                self.degraded = True
        if self.degraded:
            return self._general_rows(states, rows, events, key, scratch)
        found: list[Match] = []
        for row_key, by_rank in grouped.items():
            base = states.get(row_key)
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
        rows: Mapping[int, Sequence[tuple[int, Mapping[str, str]]]],
        events: Mapping[int, NumberedEvent],
        key: tuple[str, ...],
    ) -> dict[Key, dict[int, tuple[float, Rows]]]:
        """Rows -> per key, per rank, (time, rows by GPM with their shapes)."""
        grouped: dict[Key, dict[int, tuple[float, Rows]]] = {}
        single = key[0] if len(key) == 1 else None
        shapes = self.plan.shapes
        for gpm, gpm_rows in rows.items():
            known = shapes.rows(gpm)
            for event_id, row in gpm_rows:
                names = tuple(row)
                shape = known.get(names)
                if shape is None:
                    shape = shapes.of_row(gpm, names)
                row_key = (row[single],) if single is not None else tuple([row[n] for n in key])
                by_rank = grouped.get(row_key)
                if by_rank is None:
                    by_rank = grouped[row_key] = {}
                numbered = events[event_id]
                group = by_rank.get(numbered.rank)
                if group is None:
                    group = by_rank[numbered.rank] = (numbered.event.time.seconds, {})
                found = group[1].get(gpm)
                if found is None:
                    group[1][gpm] = [(event_id, row, shape)]
                else:
                    found.append((event_id, row, shape))
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
            gpm: [(event, row, shapes.of_row(gpm, tuple(row))) for event, row in found]
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
        born: dict[int, list[LeanRun]] = {}
        accepted: list[tuple[Node, float, int]] = []
        visited = self.visited
        for spec in self._touched(tuple(rows)):
            runs = lists[spec.id]
            if runs:
                visited[spec.id] += len(runs)
                lists[spec.id] = self._advance(spec, runs, rank, time, rows, cache, born, accepted)
        for spec in self._initial:
            self._start(spec, rank, time, rows, cache, born, accepted)
        for target, new in born.items():
            lists[target].extend(new)
        return _matches(accepted, rank, time) if accepted else []

    def _advance(
        self,
        spec: State,
        runs: list[LeanRun],
        rank: int,
        time: float,
        rows: Rows,
        cache: dict[int, list[Cand]],
        born: dict[int, list[LeanRun]],
        accepted: list[tuple[Node, float, int]],
    ) -> list[LeanRun]:
        plan = self.plan.states[spec.id]
        memo = plan.takes
        offers = []
        for events, cand_mapping, shape in self._cands(spec.atom, rows, cache):
            take = memo.get(shape) or self.plan.take(plan, spec, shape)
            if take.never:
                continue
            outs = tuple((born.setdefault(target, []), build) for target, build in take.builds)
            offers.append((events, cand_mapping, take.test, take.values(cand_mapping), outs, take.same, take))
        if not spec.guards and len(offers) < 2:
            return self._advance_one(spec, plan, runs, rank, time, offers, accepted)
        guards = self._guards(spec, rows, cache) if spec.guards else None
        index = _Index(offers) if len(offers) > 1 else None
        within, gap, next_only = plan.within, spec.max_gap, plan.next_only
        accepting = spec.accepting
        keep: list[LeanRun] = []
        for run in runs:
            if within is not None and time - run[0] > within:
                continue
            if gap is not None and rank > run[2] + gap:
                continue
            took = False
            slots = run[4]
            for events, cand_mapping, test, values, outs, same, take in (
                offers if index is None else index.meeting(slots)
            ):
                if test is not None and not test(slots, values):
                    continue
                took = True
                node = _node(events, run[3], cand_mapping, take)
                if same:
                    child = (run[0], run[1], rank, node, slots)
                    for target_runs, _ in outs:
                        target_runs.append(child)
                else:
                    for target_runs, build in outs:
                        target_runs.append(
                            (run[0], run[1], rank, node, slots if build is None else build(slots, values))
                        )
                if accepting:
                    accepted.append((node, run[0], run[1]))
            if guards is not None and _guarded(guards, slots):
                continue
            if took and next_only:
                continue
            if gap is not None and rank >= run[2] + gap:
                continue
            keep.append(run)
        return keep

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
        """`_advance` for the common case, at most one candidate and no guards, a list
        comprehension per step: the runs alive, those that take it, those that stay."""
        within, gap = plan.within, spec.max_gap
        if offers and gap == 1 and not plan.next_only:
            # strict contiguity: a run here either takes the candidate now or is gone
            horizon = time - within if within is not None else None
            took = _passing(runs, offers[0][6], offers[0][2], offers[0][3], rank, horizon, strict=True)
            if took:
                self._children(spec, took, rank, offers[0], accepted)
            return []
        if within is not None:
            horizon = time - within
            runs = (
                [run for run in runs if run[0] >= horizon]
                if gap is None
                else [run for run in runs if run[0] >= horizon and rank <= run[2] + gap]
            )
        elif gap is not None:
            runs = [run for run in runs if rank <= run[2] + gap]
        if not offers:
            return runs if gap is None else [run for run in runs if rank < run[2] + gap]
        took = _passing(runs, offers[0][6], offers[0][2], offers[0][3], rank)
        if took:
            self._children(spec, took, rank, offers[0], accepted)
            if plan.next_only:
                if len(took) == len(runs):
                    return []
                taken = {id(run) for run in took}
                runs = [run for run in runs if id(run) not in taken]
        if gap is not None:
            runs = [run for run in runs if rank < run[2] + gap]
        return runs

    @staticmethod
    def _children(
        spec: State, took: list[LeanRun], rank: int, offer: Any, accepted: list[tuple[Node, float, int]]
    ) -> None:
        """The steps of the runs that took the (one) candidate, and their children."""
        events, cand_mapping, _, values, outs, same, take = offer
        skips = take.skips
        if same:
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
            node = _node(events, run[3], cand_mapping, take)
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
        born: dict[int, list[LeanRun]],
        accepted: list[tuple[Node, float, int]],
    ) -> None:
        """New runs from an initial state (`Runtime._process_group`'s last loop)."""
        for events, cand_mapping, shape in self._cands(spec.atom, rows, cache):
            take = self.plan.take(None, spec, shape)
            if take.never:
                continue
            values = take.values(cand_mapping)
            if take.test is not None and not take.test(EMPTY, values):
                continue
            node = (events, None, cand_mapping, take, None)
            for target, build in take.builds:
                slots = EMPTY if build is None else build(EMPTY, values)
                born.setdefault(target, []).append((time, rank, rank, node, slots))
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
        if isinstance(atom, GpmAtom):
            local = self.plan.shapes.local
            out: list[Cand] = []
            for event, row, shape in rows.get(atom.gpm, ()):
                checks = local[shape]
                if checks and not all(check(row) for check in checks):
                    continue
                out.append(((event,), row, shape))
            return out
        if isinstance(atom, DisjunctionAtom):
            unique: dict[tuple[object, ...], Cand] = {}
            for operand in atom.operands:
                for cand in self._cands(operand, rows, cache):
                    unique.setdefault((cand[0], tuple(sorted(cand[1].items()))), cand)
            return list(unique.values())
        assert isinstance(atom, ConjunctionAtom)
        parts: list[tuple[tuple[int, ...], Mapping[str, str], tuple[Shape, ...]]] = [((), {}, ())]
        for operand in atom.operands:
            joined: list[tuple[tuple[int, ...], Mapping[str, str], tuple[Shape, ...]]] = []
            for events, left, shapes in parts:
                for more, right, shape in self._cands(operand, rows, cache):
                    both = join(left, right)
                    if both is not None:
                        events_both = events + tuple(e for e in more if e not in events)
                        joined.append((events_both, both, (*shapes, shape)))
            parts = joined
            if not parts:
                break
        return [(events, both, self.plan.shapes.of_conjunction(shapes)) for events, both, shapes in parts]


class _Index:
    """`outcomes.CandidateIndex` for lean runs: a group's candidates bucketed by the join terms
    all of them read (the same run slots), so a run with those slots bound meets only its
    bucket, in the candidates' order."""

    __slots__ = ("buckets", "offers", "slots")

    def __init__(self, offers: list[Any]) -> None:
        self.offers = offers
        takes: list[Take] = [offer[6] for offer in offers]
        common = set.intersection(*(set(s for s, _ in take.join) for take in takes))
        self.slots = tuple(sorted(common))
        self.buckets: dict[tuple[Any, ...], list[Any]] | None = None
        if self.slots:
            self.buckets = {}
            for offer in offers:
                where = dict(offer[6].join)
                bucket = tuple(offer[3][where[s]] for s in self.slots)
                self.buckets.setdefault(bucket, []).append(offer)

    def meeting(self, slots: tuple[Any, ...]) -> list[Any]:
        if self.buckets is None:
            return self.offers
        values = tuple([slots[s] for s in self.slots])
        if None in values:
            return self.offers
        return self.buckets.get(values, [])


def _node(events: tuple[int, ...], parent: Node, cand_mapping: Mapping[str, str], take: Take) -> Node:
    """The step of a run that takes a candidate (`lean_state.Node`)."""
    return (events, parent, cand_mapping, take, parent[4] if take.skips_parent(parent[3]) else parent)


def _passing(
    runs: list[LeanRun],
    take: Take,
    test: Any,
    values: tuple[Any, ...],
    rank: int,
    horizon: float | None = None,
    *,
    strict: bool = False,
) -> list[LeanRun]:
    """The runs that take the candidate; with `strict`, among those alive: started at or after
    `horizon` (WITHIN) and last at the rank before (strict contiguity with a gap of one). A
    single comparison of the candidate's number with the runs' is inlined (`Take.threshold`): a
    run's value of the same numeric kind is compared by Python, any other by `holds`, as the
    compiled test would."""
    if strict:
        last = rank - 1
        if horizon is None:
            runs = [run for run in runs if run[2] >= last]
        else:
            runs = [run for run in runs if run[0] >= horizon and run[2] >= last]
    if test is None:
        return runs
    threshold = take.threshold
    if threshold is not None:
        op, position, slot = threshold
        a = values[position]
        kind, x = a.k, a.v
        if kind <= DOUBLE:
            if op == "<":
                return [
                    run
                    for run in runs
                    if (b := run[4][slot]) is not None and (x < b.v if b.k == kind else holds("<", a, b))
                ]
            if op == ">":
                return [
                    run
                    for run in runs
                    if (b := run[4][slot]) is not None and (x > b.v if b.k == kind else holds(">", a, b))
                ]
    return [run for run in runs if test(run[4], values)]


def _guarded(guards: list[tuple[Any, Any]], slots: tuple[Any, ...]) -> bool:
    for test, values in guards:  # noqa: SIM110 (a loop, not any(...): called for every run)
        if test is None or test(slots, values):
            return True
    return False


def _matches(accepted: list[tuple[Node, float, int]], rank: int, time: float) -> list[Match]:
    """A timestamp's matches in detection order, each (events, mapping) once (`Runtime._report`)."""
    out: list[Match] = []
    seen: dict[tuple[int, ...], list[dict[str, str]]] = {}
    for node, start_time, start_rank in accepted:
        taken = events_of(node)
        solution = mapping(node)
        same = seen.get(taken)
        if same is None:
            seen[taken] = [solution]
        elif solution in same:
            continue
        else:
            same.append(solution)
        out.append(Match(taken, start_time, time, start_rank, rank, solution))
    return out


def _slots(layout: tuple[tuple[str, int], ...], solution: Mapping[str, str]) -> tuple[Any, ...]:
    from rsep.plugin.expr.values import parse_term
    from rsep.plugin.nfa.lean_plan import TERM

    out = []
    for name, kind in layout:
        term = solution.get(name)
        out.append(term if term is None or kind == TERM else parse_term(term))
    return tuple(out)


__all__ = ["LeanRuntime", "LeanState", "Run"]
