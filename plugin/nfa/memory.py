"""What an interval pattern's runtime remembers besides its runs, and when it may forget it.

- **Join occurrences** (`NfaState.joins`): the occurrences of a join group's
  GPMs (`JoinAtom`), from which each timestamp's new joins are computed with
  a delta join: every combination of remembered occurrences with at least
  one of this timestamp's (EP-SPARQL's BGP and Join, §4.2, in any order).
- **Remembered solutions** (`NfaState.history`): the completed solutions of
  an auxiliary pattern, which anti-joins read.

Both would grow with the stream. A pushed window (a top-level
`getDURATION() < d`, EP-SPARQL §5) bounds what a reported match can hold:
its interval starts at or after `now - d`. So a windowed join occurrence that
started before `now - d` can join nothing reportable, and neither can a
remembered solution that an anti-join only reads while it lies within the
mandatory side (EQUALSOPTIONAL's same interval, CQELS-CEP's gap): both are
dropped (`forget`). A solution that blocks however long before the mandatory
side it ended (OPTIONALSEQ, OPTIONAL, NO_HEAD) never expires under the
definitions, but only the earliest one per binding of what the anti-join
reads (the mandatory side's variables and the condition's) can matter: it
blocks whenever a later one would, so later ones are dropped (`compact`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from rsep.plugin.algebra.analysis import expr_vars
from rsep.plugin.nfa.automaton import AntiJoin, Automaton, JoinAtom, Relation

Occurrence = tuple[int, int, dict[str, str], float, float]
"""(operand, event id, solution mapping, start, end) of one GPM row a join group remembers."""
Remembered = tuple[dict[str, str], tuple[float, float]]
"""(solution mapping, (start, end)) of an auxiliary pattern."""
Fresh = Sequence[Sequence[tuple[int, dict[str, str], float]]]
"""Per operand, this timestamp's rows: (event id, mapping, start time)."""

_EXPIRING = frozenset({Relation.SAME_INTERVAL, Relation.WITHIN_GAP})
_FIRST_SUFFICES = frozenset({Relation.BEFORE_START, Relation.NOT_AFTER_END})


# --------------------------------------------------------------------------- join groups


def new_joins(
    atom: JoinAtom, memory: Sequence[Occurrence], fresh: Fresh
) -> Iterator[tuple[tuple[int, ...], dict[str, str], float]]:
    """The joins of `atom`'s operands with at least one of this timestamp's rows
    (`fresh`), each once: seeded by the first operand k that takes a fresh row,
    operands before k take remembered rows only, those after k either. Yields
    (event ids, those of earlier timestamps first, mapping, start of the hull):
    a match's last event is one of its last timestamp's."""
    old: list[list[tuple[int, dict[str, str], float]]] = [[] for _ in atom.operands]
    earlier: set[int] = set()
    for operand, event, mapping, start, _ in memory:
        old[operand].append((event, mapping, start))
        earlier.add(event)
    seen: set[tuple[float, frozenset[tuple[str, str]]]] = set()
    for seed, rows in enumerate(fresh):
        if not rows:
            continue
        pools = [old[k] if k < seed else [*old[k], *fresh[k]] for k in range(len(fresh))]
        pools[seed] = list(rows)
        if not all(pools):
            continue
        for events, mapping, start in _extend(atom.orders[seed], pools, 0, {}, (), float("inf")):
            key = (start, frozenset(mapping.items()))
            if key not in seen:  # the same solution from other occurrences: reported once anyway
                seen.add(key)
                yield tuple(sorted(set(events), key=lambda e: (e not in earlier, e))), mapping, start


def _extend(
    order: tuple[int, ...],
    pools: list[list[tuple[int, dict[str, str], float]]],
    level: int,
    mapping: dict[str, str],
    events: tuple[int, ...],
    start: float,
) -> Iterator[tuple[tuple[int, ...], dict[str, str], float]]:
    if level == len(order):
        yield events, mapping, start
        return
    for event, row, begin in pools[order[level]]:
        joined = _compatible_union(mapping, row)
        if joined is not None:
            yield from _extend(order, pools, level + 1, joined, (*events, event), min(start, begin))


def _compatible_union(a: Mapping[str, str], b: Mapping[str, str]) -> dict[str, str] | None:
    for name, value in b.items():
        bound = a.get(name)
        if bound is not None and bound != value:
            return None
    return {**a, **b}


def remember_rows(atom: JoinAtom, joins: dict[int, list[Occurrence]], fresh: Fresh, time: float) -> None:
    rows = [
        (k, event, mapping, start, time) for k, found in enumerate(fresh) for event, mapping, start in found
    ]
    if rows:
        joins.setdefault(atom.memory, []).extend(rows)


# --------------------------------------------------------------------------- forgetting


class Forgetting:
    """What an automaton's memories may drop, read once from its states."""

    def __init__(self, automaton: Automaton) -> None:
        self.within = automaton.within
        self.windowed_joins: set[int] = set()
        bounded: set[int] = set()
        anti_joins: dict[int, list[AntiJoin]] = {}
        for state in automaton.states:
            spec = state.interval
            if spec is None:
                continue
            for atom in (state.atom, *getattr(state.atom, "operands", ())):
                if isinstance(atom, JoinAtom) and atom.windowed:
                    self.windowed_joins.add(atom.memory)
            if spec.records is not None and not spec.auxiliary:
                bounded.add(spec.records)
            for anti in spec.anti:
                anti_joins.setdefault(anti.aux, []).append(anti)
        # one relation per auxiliary pattern; scopes differ with the mandatory side's alternative
        self.expiring = {
            aux for aux in bounded & anti_joins.keys() if anti_joins[aux][0].relation in _EXPIRING
        }
        self.keys = {aux: _reads(antis) for aux, antis in anti_joins.items()}

    def forget(
        self, joins: dict[int, list[Occurrence]], history: dict[int, list[Remembered]], time: float
    ) -> None:
        """Drop what no match reported at `time` or later can use (see the module docstring)."""
        horizon = None if self.within is None else time - self.within
        if horizon is not None:
            for memory in self.windowed_joins & joins.keys():
                if any(occ[3] < horizon for occ in joins[memory]):
                    joins[memory] = [occ for occ in joins[memory] if occ[3] >= horizon]
        for aux, remembered in history.items():
            if horizon is not None and aux in self.expiring and any(r[1][0] < horizon for r in remembered):
                remembered = [r for r in remembered if r[1][0] >= horizon]
            history[aux] = compact(remembered, self.keys.get(aux))


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
    """An index per history list in use (a bounded cache: lists are replaced when
    compacted or copied, and an evicted index is rebuilt on demand)."""

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self._found: dict[tuple[int, frozenset[str]], RememberedIndex] = {}

    def meeting(
        self, entries: list[Remembered], scope: frozenset[str] | None, base: Mapping[str, str]
    ) -> Sequence[Remembered]:
        if scope is None or len(entries) < INDEX_FROM:
            return entries
        key = (id(entries), scope)
        index = self._found.get(key)
        if index is None or index.entries is not entries or not index.catch_up():
            if len(self._found) >= self.limit:
                self._found.clear()
            index = self._found[key] = RememberedIndex(entries, scope)
        return index.meeting(base)
