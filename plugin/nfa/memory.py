"""What an interval pattern's runtime remembers besides its runs, and when it may forget it.

- **Join occurrences** (`NfaState.joins`): the occurrences of a join group's
  GPMs (`JoinAtom`), from which each timestamp's new joins are computed
  (`plugin/nfa/joins.py`).
- **Remembered solutions** (`NfaState.history`): the completed solutions of
  an auxiliary pattern, which anti-joins read.

Both would grow with the stream. A pushed window (a top-level
`getDURATION() < d`, EP-SPARQL §5) bounds what a reported match can hold:
its interval starts at or after `now - d`. So a windowed join occurrence that
started before `now - d` can join nothing reportable, and neither can a
remembered solution that an anti-join only reads while it lies within the
mandatory side (EQUALSOPTIONAL's same interval, CQELS-CEP's gap): both are
dropped (`forget`; a large join memory once a quarter of it has expired, so that it and
its index are not rebuilt at every step: lookups skip the expired ones meanwhile,
`joins.expire`). A solution that blocks however long before the mandatory
side it ended (OPTIONALSEQ, OPTIONAL, NO_HEAD) never expires under the
definitions, but only the earliest one per binding of what the anti-join
reads (the mandatory side's variables and the condition's) can matter: it
blocks whenever a later one would, so later ones are dropped (`compact`). The
same holds for the occurrences of a join group that is the whole of such an
optional side: only the first per binding of what the anti-join reads and
the triple patterns share can matter (`compact_occurrences`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rsep.plugin.algebra.analysis import expr_vars
from rsep.plugin.algebra.events import ConsumptionPolicy
from rsep.plugin.nfa.automaton import AntiJoin, Automaton, JoinAtom, Relation, State
from rsep.plugin.nfa.joins import Occurrence, expire
from rsep.plugin.nfa.list_indexes import ListIndexes

Remembered = tuple[dict[str, str], tuple[float, float]]
"""(solution mapping, (start, end)) of an auxiliary pattern."""

_EXPIRING = frozenset({Relation.SAME_INTERVAL, Relation.WITHIN_GAP})
_FIRST_SUFFICES = frozenset({Relation.BEFORE_START, Relation.NOT_AFTER_END})


# --------------------------------------------------------------------------- forgetting


class Forgetting:
    """What an automaton's memories may drop, read once from its states."""

    def __init__(self, automaton: Automaton) -> None:
        self.within = automaton.within
        uses = _join_uses(automaton)
        self.windowed_joins = {memory for memory, (atom, _) in uses.items() if atom.windowed}
        bounded: set[int] = set()
        anti_joins: dict[int, list[AntiJoin]] = {}
        for state in automaton.states:
            spec = state.interval
            if spec is None:
                continue
            if spec.records is not None and not spec.auxiliary:
                bounded.add(spec.records)
            for anti in spec.anti:
                anti_joins.setdefault(anti.aux, []).append(anti)
        # one relation per auxiliary pattern; scopes differ with the mandatory side's alternative
        self.expiring = {
            aux for aux in bounded & anti_joins.keys() if anti_joins[aux][0].relation in _EXPIRING
        }
        self.keys = {aux: _reads(antis) for aux, antis in anti_joins.items()}
        self.occurrence_keys: dict[int, tuple[frozenset[str], ...]] = {}
        """Per join memory whose occurrences only matter by some of their bindings (see
        `_occurrence_keys`): those bindings, per operand."""
        if automaton.policy is ConsumptionPolicy.UNRESTRICTED:  # consumption may take the one kept
            for memory, (atom, states) in uses.items():
                found = self._occurrence_keys(automaton, atom, states)
                if found is not None:
                    self.occurrence_keys[memory] = found

    def _occurrence_keys(
        self, automaton: Automaton, atom: JoinAtom, states: list[State]
    ) -> tuple[frozenset[str], ...] | None:
        """When a join group is the whole of every auxiliary alternative that uses it, and
        the anti-joins reading those only read the end of a solution and some of its
        bindings (`_reads`: OPTIONALSEQ's and OPTIONAL's optional side as a BGP), a new
        join of a remembered occurrence ends now, whichever of the occurrences that agree
        on those bindings and on the variables the operands share it takes: the first
        such one is enough (`compact_occurrences`)."""
        if not atom.variables:
            return None
        reads: frozenset[str] = frozenset()
        for state in states:
            spec = state.interval
            whole = state.atom is atom and state.id in automaton.initial and state.accepting
            if spec is None or not whole or state.after_take or spec.filters or spec.equal or spec.anti:
                return None
            found = None if spec.records is None else self.keys.get(spec.records)
            if found is None:
                return None
            reads |= found
        return tuple(
            (own & frozenset().union(*(v for i, v in enumerate(atom.variables) if i != k))) | reads
            for k, own in enumerate(atom.variables)
        )

    def forget(
        self, joins: dict[int, list[Occurrence]], history: dict[int, list[Remembered]], time: float
    ) -> None:
        """Drop what no match reported at `time` or later can use (see the module docstring)."""
        horizon = None if self.within is None else time - self.within
        if horizon is not None:
            for memory in self.windowed_joins & joins.keys():
                joins[memory] = expire(joins[memory], horizon)[0]  # a large one: once a quarter expired
        for aux, remembered in history.items():
            if horizon is not None and aux in self.expiring and any(r[1][0] < horizon for r in remembered):
                remembered = [r for r in remembered if r[1][0] >= horizon]
            history[aux] = compact(remembered, self.keys.get(aux))
        for memory in self.occurrence_keys.keys() & joins.keys():
            joins[memory] = compact_occurrences(joins[memory], self.occurrence_keys[memory])


def _join_uses(automaton: Automaton) -> dict[int, tuple[JoinAtom, list[State]]]:
    """Per join memory, its join group and the states whose atoms read it."""
    uses: dict[int, tuple[JoinAtom, list[State]]] = {}
    for state in automaton.states:
        for atom in (state.atom, *getattr(state.atom, "operands", ())):
            if isinstance(atom, JoinAtom):
                uses.setdefault(atom.memory, (atom, []))[1].append(state)
    return uses


def compact_occurrences(memory: list[Occurrence], keys: tuple[frozenset[str], ...]) -> list[Occurrence]:
    """The first occurrence per operand and binding of its `keys` (see `_occurrence_keys`)."""
    if len(memory) < 2:
        return memory
    kept: dict[tuple[object, ...], Occurrence] = {}
    for occurrence in memory:
        names = keys[occurrence[0]]
        bound = tuple(sorted((k, v) for k, v in occurrence[2].items() if k in names))
        kept.setdefault((occurrence[0], bound), occurrence)
    return list(kept.values()) if len(kept) < len(memory) else memory


def _reads(antis: Sequence[AntiJoin]) -> frozenset[str] | None:
    """What of a remembered solution the anti-joins of one auxiliary pattern read, when
    the earliest per binding of it is all that matters (see `compact`); None when every
    solution may."""
    reads: frozenset[str] = frozenset()
    for anti in antis:
        if anti.relation not in _FIRST_SUFFICES or anti.scope is None:
            return None
        reads |= anti.scope | (expr_vars(anti.condition) if anti.condition is not None else frozenset())
    return reads


def compact(remembered: list[Remembered], reads: frozenset[str] | None) -> list[Remembered]:
    """The first (earliest ending) solution per binding of `reads`; all when None."""
    if reads is None or len(remembered) < 2:
        return remembered
    kept: dict[tuple[tuple[str, str], ...], Remembered] = {}
    for mapping, span in remembered:
        key = tuple(sorted((k, v) for k, v in mapping.items() if k in reads))
        kept.setdefault(key, (mapping, span))
    return list(kept.values()) if len(kept) < len(remembered) else remembered


# --------------------------------------------------------------------------- looking up


INDEX_FROM = 16
"""Below this many remembered solutions, an anti-join scans them all."""


class RememberedIndex:
    """The remembered solutions of one auxiliary pattern bucketed by the values of the
    variables its anti-join reads that all of them bind, so that an anti-join meets only
    the compatible ones. Built over one list and kept up with what is appended to it
    (the runtime only appends to a history list, or replaces it)."""

    __slots__ = ("buckets", "count", "entries", "names")

    def __init__(self, entries: list[Remembered], scope: frozenset[str]) -> None:
        self.entries = entries
        common = frozenset(scope)
        for mapping, _ in entries:
            common &= mapping.keys()
        self.names = tuple(sorted(common))
        self.buckets: dict[tuple[str, ...], list[Remembered]] = {}
        self.count = 0
        self.catch_up()

    def catch_up(self) -> bool:
        """Add what was appended since; False when an entry lacks one of `names` (rebuild)."""
        for entry in self.entries[self.count :]:
            mapping = entry[0]
            if any(name not in mapping for name in self.names):
                return False
            self.buckets.setdefault(tuple(mapping[n] for n in self.names), []).append(entry)
        self.count = len(self.entries)
        return True

    def meeting(self, base: Mapping[str, str]) -> Sequence[Remembered]:
        """The entries that may be compatible with `base` (all of them when `base` lacks a name)."""
        if not self.names or any(name not in base for name in self.names):
            return self.entries
        return self.buckets.get(tuple(base[n] for n in self.names), ())


class RememberedIndexes:
    """An index per history list in use (`ListIndexes`: lists are replaced when compacted
    or copied, the replaced ones' indexes swept out, and an evicted index is rebuilt on
    demand)."""

    def __init__(self, limit: int = 4096) -> None:
        self._found: ListIndexes[RememberedIndex] = ListIndexes(limit)

    def __len__(self) -> int:
        return len(self._found)

    def meeting(
        self, entries: list[Remembered], scope: frozenset[str] | None, base: Mapping[str, str]
    ) -> Sequence[Remembered]:
        if scope is None or len(entries) < INDEX_FROM:
            return entries
        index = self._found.get(entries, scope)
        if index is None or not index.catch_up():
            index = self._found.put(entries, scope, RememberedIndex(entries, scope))
        return index.meeting(base)
