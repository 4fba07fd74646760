"""The pieces of the lean runtime's step (`plugin/nfa/lean.py`): what an atom matches at a
group, the runs that take a candidate, the steps they make, a timestamp's matches."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rsep.plugin.expr.values import DOUBLE, parse_term
from rsep.plugin.nfa.automaton import Atom, ConjunctionAtom, DisjunctionAtom, GpmAtom
from rsep.plugin.nfa.lean_filters import TERM, holds
from rsep.plugin.nfa.lean_plan import Shape, Take
from rsep.plugin.nfa.lean_state import LeanRun, Node
from rsep.plugin.nfa.lean_state import events as events_of
from rsep.plugin.nfa.lean_state import mapping as mapping_of
from rsep.plugin.nfa.outcomes import join
from rsep.plugin.nfa.runs import Match

Cand = tuple[tuple[int, ...], Mapping[str, str], Shape]
"""What an atom matches at a group: the events taken, their mapping, its shape."""
Rows = dict[int, list[Cand]]
"""A group's rows by GPM, as candidates: `((event,), mapping, shape)`."""


def candidates(runtime: Any, atom: Atom, rows: Rows, cache: dict[int, list[Cand]]) -> list[Cand]:
    """What an atom matches in a group (`Candidates._compute_matches`, lean): a GPM's rows whose
    residual filters over their own variables hold, a conjunction's operands joined, a
    disjunction's united (each (events, mapping) once)."""
    if isinstance(atom, GpmAtom):
        found = rows.get(atom.gpm)
        if found is None:
            return []
        known = runtime.plan.shapes
        if known.settled[atom.gpm]:
            return found
        local = known.local
        return [
            cand
            for cand in found
            if not (checks := local[cand[2]]) or all(check(cand[1]) for check in checks)
        ]
    if isinstance(atom, DisjunctionAtom):
        unique: dict[tuple[object, ...], Cand] = {}
        for operand in atom.operands:
            for cand in runtime._cands(operand, rows, cache):
                unique.setdefault((cand[0], tuple(sorted(cand[1].items()))), cand)
        return list(unique.values())
    assert isinstance(atom, ConjunctionAtom)
    parts: list[tuple[tuple[int, ...], Mapping[str, str], tuple[Shape, ...]]] = [((), {}, ())]
    for operand in atom.operands:
        joined: list[tuple[tuple[int, ...], Mapping[str, str], tuple[Shape, ...]]] = []
        for events, left, shapes in parts:
            for more, right, shape in runtime._cands(operand, rows, cache):
                both = join(left, right)
                if both is not None:
                    events_both = events + tuple(e for e in more if e not in events)
                    joined.append((events_both, both, (*shapes, shape)))
        parts = joined
        if not parts:
            break
    return [(events, both, runtime.plan.shapes.of_conjunction(shapes)) for events, both, shapes in parts]


class Index:
    """`outcomes.CandidateIndex` for lean runs: a group's candidates bucketed by the join terms
    all of them read (the same run slots), so a run with those slots bound meets only its
    bucket, in the candidates' order."""

    __slots__ = ("buckets", "offers", "slots")

    def __init__(self, offers: list[Any]) -> None:
        self.offers = offers
        takes: list[Take] = [offer[4] for offer in offers]
        common = set.intersection(*(set(s for s, _ in take.join) for take in takes))
        self.slots = tuple(sorted(common))
        self.buckets: dict[tuple[Any, ...], list[Any]] | None = None
        if self.slots:
            self.buckets = {}
            for offer in offers:
                where = dict(offer[4].join)
                bucket = tuple(offer[3][where[s]] for s in self.slots)
                self.buckets.setdefault(bucket, []).append(offer)

    def meeting(self, slots: tuple[Any, ...]) -> list[Any]:
        if self.buckets is None:
            return self.offers
        values = tuple([slots[s] for s in self.slots])
        if None in values:
            return self.offers
        return self.buckets.get(values, [])


def step(events: tuple[int, ...], parent: Node, cand_mapping: Mapping[str, str], take: Take) -> Node:
    """The step of a run that takes a candidate (`lean_state.Node`)."""
    return (events, parent, cand_mapping, take, parent[4] if take.skips_parent(parent[3]) else parent)


def passing(runs: list[LeanRun], take: Take, test: Any, values: tuple[Any, ...]) -> list[LeanRun]:
    """The runs that take the candidate. A single comparison of the candidate's number with the
    runs' is inlined (`Take.threshold`): a run's value of the same numeric kind is compared by
    Python, any other by `holds`, as the compiled test would."""
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


def guarded(guards: list[tuple[Any, Any]], slots: tuple[Any, ...]) -> bool:
    for test, values in guards:  # noqa: SIM110 (a loop, not any(...): called for every run)
        if test is None or test(slots, values):
            return True
    return False


def matches(
    accepted: Iterable[tuple[Node, float, int]], rank: int, time: float, limit: int | None = None
) -> tuple[list[Match], bool]:
    """A timestamp's matches in detection order (the order of `accepted`), each (events,
    mapping) once (`Runtime._report`); at most `limit`. Also: whether the limit left any out."""
    out: list[Match] = []
    seen: dict[tuple[int, ...], list[dict[str, str]]] = {}
    for node, start_time, start_rank in accepted:
        taken = events_of(node)
        solution = mapping_of(node)
        same = seen.get(taken)
        if same is None:
            seen[taken] = [solution]
        elif solution in same:
            continue
        else:
            same.append(solution)
        if len(out) == limit:
            return out, True
        out.append(Match(taken, start_time, time, start_rank, rank, solution))
    return out, False


def slots_of(layout: tuple[tuple[str, int], ...], solution: Mapping[str, str]) -> tuple[Any, ...]:
    out = []
    for name, kind in layout:
        term = solution.get(name)
        out.append(term if term is None or kind == TERM else parse_term(term))
    return tuple(out)
