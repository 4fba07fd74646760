"""Selection and consumption under the consuming policies (RSEP-QL SEQ^c, SEQ^r):
which run takes an input, which of a timestamp's matches is reported, and what
a reported match uses up.

An input (`Unit`: an event, or one triple of it) is used once (RSEP-QL §4.4);
in interval patterns (EP-SPARQL) once per triple pattern, each reading the
stream on its own (the unit names its GPM: `Candidates.unit`).
Chronological selection prefers the earliest inputs, recent the latest. The
run loop that offers a state's candidates to its runs is `Runtime._select_runs`;
this module holds the decisions it and the end of a timestamp make
(docs/semantics.md, "Selection and consumption policies").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from collections.abc import Sequence as Seq

from rsep.plugin.nfa.automaton import JoinAtom
from rsep.plugin.nfa.runs import Candidate, NfaState, Step, Unit


class Consumption:
    """One consuming policy, for one automaton: its preference among inputs, and
    the inputs a match uses up (`unit` names them)."""

    __slots__ = ("event_of", "join_atoms", "recent", "unit")

    def __init__(
        self,
        recent: bool,
        join_atoms: Mapping[int, JoinAtom],
        unit: Callable[[int, int, Mapping[str, str]], Unit],
        event_of: Callable[[Unit], object],
    ) -> None:
        self.recent = recent
        self.join_atoms = join_atoms
        self.unit = unit
        self.event_of = event_of

    def preference(self, events: Seq[int]) -> tuple[int, ...]:
        """Sorts inputs the policy prefers first: the earliest (chronological) or the
        latest (recent), compared from the earliest or the latest one on."""
        if self.recent:
            return tuple(-event for event in sorted(events, reverse=True))
        return tuple(sorted(events))

    def offer_order(self, cand: Candidate) -> tuple[object, ...]:
        """The order a state's runs are offered a timestamp's candidates in: by arrival of
        their inputs of this timestamp, then (join groups) by the policy's preference among
        the earlier inputs they join."""
        if not cand.earlier:
            return cand.events, (), sorted(cand.mapping.items())
        now = tuple(event for event in cand.events if event not in cand.earlier)
        return now, self.preference(cand.earlier), sorted(cand.mapping.items())

    def select_matches(self, step: Step) -> None:
        """A timestamp's matches share no input (RSEP-QL §4.4: an input is used once): where
        they would (several joins of a join group, or runs holding one earlier input), the
        policy's preferred one (`preference`) is reported. Solutions of exactly the same
        inputs (VALUES rows, UNION branches) are one match: all of them are reported."""
        if len(step.matches) < 2:
            return
        ranked = sorted(step.matches.items(), key=lambda item: self.preference(item[1].events))
        used: set[Unit] = set()
        reported: set[frozenset[Unit]] = set()
        kept: set[tuple[object, ...]] = set()
        for key, match in ranked:
            units = frozenset(step.units.get(id(match), ()))
            if units in reported or used.isdisjoint(units):
                used.update(units)
                reported.add(units)
                kept.add(key)
        if len(kept) < len(step.matches):
            step.matches = {key: match for key, match in step.matches.items() if key in kept}

    def consume(self, state: NfaState, step: Step) -> None:
        """Inputs of a reported match are used up: no run may still hold them, and no join
        group may still join them."""
        used = {unit for match in step.matches.values() for unit in step.units.get(id(match), ())}
        for state_id, runs in list(state.runs.items()):
            kept = [run for run in runs if used.isdisjoint(run.units or ())]
            if kept:
                state.runs[state_id] = kept
            else:
                del state.runs[state_id]
        events = {self.event_of(unit) for unit in used}
        for memory, occurrences in list(state.joins.items()):
            operands = self.join_atoms[memory].operands
            if any(o[1] in events and self.unit(operands[o[0]].gpm, o[1], o[2]) in used for o in occurrences):
                state.joins[memory] = [
                    o for o in occurrences if self.unit(operands[o[0]].gpm, o[1], o[2]) not in used
                ]


def free(units: tuple[Unit, ...], held: frozenset[Unit], step: Step) -> bool:
    """May the partial match holding `held` take these inputs? Unless another partial
    match took one of them at this timestamp."""
    return all(unit not in step.consumed or step.takers.get(unit) == held for unit in units)


def move_on(state: NfaState, moved: set[frozenset[Unit]]) -> None:
    """The partial matches that took an input at this timestamp no longer wait where
    they did, in any state (their runs there that took it are already gone)."""
    for state_id, runs in list(state.runs.items()):
        kept = [run for run in runs if frozenset(run.units or ()) not in moved]
        if len(kept) < len(runs):
            state.runs[state_id] = kept
