"""Does a run take a candidate? Its mapping joined with the candidate's, then the
candidate's deferred (stateful) filters (`checked`).

That is the runtime's innermost work, done for every run of a state at every
group, so it is shared where it can be: runs that agree on what a candidate
reads share one outcome (`Outcomes`, switched on per state by `SharingGate`),
and a run only meets the candidates it may join (`CandidateIndex`).
"""

from __future__ import annotations

from collections.abc import Mapping

from rsep.plugin.nfa.automaton import EXTENSION_MARKER, State
from rsep.plugin.nfa.runs import Candidate, Mapping_, Run

SHARE_MIN_RUNS = 8
"""Below this many runs in a state, sharing outcomes (`Outcomes`) costs more than it saves."""
SHARE_PAUSE = 32
"""Groups a state goes without sharing after its runs did not share enough to pay for it."""


class Outcomes:
    """`checked(cand, base)` for the runs of one state at one group, where
    `base` is a run's mapping without the state's `rebind` variables.

    The outcome depends only on what the candidate reads of `base`, so with
    `share` runs that agree there share one join and one evaluation of the
    stateful filters: e.g. the many runs a skip-till-next Kleene+ leaves
    waiting for `C` all carry `A`'s price, the only binding `C`'s filter
    compares with. Only successes build their joined mapping, which those
    runs need anyway."""

    __slots__ = ("cand", "lookups", "names", "rebind", "seen")

    def __init__(self, cand: Candidate, rebind: frozenset[str], share: bool) -> None:
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
            return checked(self.cand, mapping, self.rebind)
        if ok:
            return merged(mapping, self.cand.mapping, self.rebind)
        joined = checked(self.cand, mapping, self.rebind)
        self.seen[key] = joined is not None
        return joined


class CandidateIndex:
    """A hash join of a state's runs with a group's candidates, instead of
    trying every candidate on every run: candidates are bucketed by their
    values of the variables all of them bind (minus the state's `rebind`)
    and the first run binds, and a run that binds those only meets its
    bucket. The others would fail to join on one of those variables; the
    bucket keeps the candidates' order, so runs spawn in the same order.
    This is what keeps one NFA for many keys (no partition key) linear."""

    __slots__ = ("buckets", "checks", "common", "names")

    def __init__(self, checks: list[Outcomes], rebind: frozenset[str]) -> None:
        self.checks = checks
        self.common = frozenset.intersection(*(frozenset(c.cand.mapping) for c in checks)) - rebind
        self.names: tuple[str, ...] | None = None
        self.buckets: dict[tuple[str | None, ...], list[Outcomes]] | None = None

    def meeting(self, mapping: Mapping_) -> list[Outcomes]:
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


class SharingGate:
    """Share outcomes between a state's runs (see `Outcomes`)? Only for many
    runs, and not for a while after they last failed to agree on at least a
    quarter of the lookups (then the bookkeeping costs more than the
    evaluations it saves)."""

    __slots__ = ("pause",)

    def __init__(self) -> None:
        self.pause: dict[int, int] = {}
        """Per state id, the groups it still goes without sharing."""

    def share(self, spec: State, runs: list[Run]) -> bool:
        if len(runs) < SHARE_MIN_RUNS:
            return False
        pause = self.pause.get(spec.id, 0)
        if pause:
            self.pause[spec.id] = pause - 1
            return False
        return True

    def learn(self, spec: State, checks: list[Outcomes]) -> None:
        lookups = sum(check.lookups for check in checks)
        distinct = sum(len(check.seen) for check in checks)
        if 4 * distinct > 3 * lookups:
            self.pause[spec.id] = SHARE_PAUSE


def join(
    base: Mapping[str, str], mapping: Mapping[str, str], drop: frozenset[str] = frozenset()
) -> Mapping_ | None:
    """`base` (without its `drop` variables) joined with `mapping`, or None if they disagree."""
    for name, value in mapping.items():
        bound = base.get(name)
        if bound is not None and bound != value and name not in drop:
            return None
    return merged(base, mapping, drop)


def merged(base: Mapping[str, str], mapping: Mapping[str, str], drop: frozenset[str]) -> Mapping_:
    joined = {k: v for k, v in base.items() if k not in drop} if drop else dict(base)
    joined.update(mapping)
    return joined


def checked(cand: Candidate, base: Mapping[str, str], drop: frozenset[str] = frozenset()) -> Mapping_ | None:
    """Join a candidate into a run's mapping (without its `drop` variables)
    and apply its deferred filters."""
    joined = join(base, cand.mapping, drop)
    if joined is None:
        return None
    for predicate in cand.pending:  # a loop, not all(...): this is the runtime's innermost call
        if not predicate(joined):
            return None
    return joined


def unmarked(mapping: Mapping[str, str]) -> Mapping_:
    """Without the markers BINDs and VALUES leave (`EXTENSION_MARKER`), which matches and
    remembered solutions shed."""
    return {k: v for k, v in mapping.items() if not k.startswith(EXTENSION_MARKER)}


def without(mapping: Mapping_, names: frozenset[str]) -> Mapping_:
    return {k: v for k, v in mapping.items() if k not in names} if names else mapping
