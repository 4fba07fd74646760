"""The compiled, immutable NFA_scep automaton (SPAseq §6.1, Def. 17).

Each state is a place where a partial match (a *run*) waits for one element of
the sequence. Its outgoing edges, in Flink CEP's vocabulary:

- TAKE: an event group matching the state's atom (compatibly with the run's
  mapping, stateful filters included) is consumed and the run moves on to
  each of `after_take` (or completes a match when `accepting`);
- IGNORE: events are skipped and the run keeps waiting (skip-till-next until
  its first TAKE, skip-till-any always, strict contiguity only inside its
  rank window);
- PROCEED: epsilon moves past an optional or negated element. They are folded
  in at compile time: a state reached by proceeding carries the skipped
  elements as `guards` (atoms that must not occur in the gap) and a wider
  rank window for strict contiguity.

Atoms are the point patterns an event group at one timestamp can match: a GPM,
or a conjunction (same timestamp, Def. 8) or disjunction (Def. 9) of atoms.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Union

from rsep.plugin.algebra.events import ConsumptionPolicy, SelectionStrategy
from rsep.plugin.algebra.sparql import Expr


@dataclass(frozen=True, slots=True)
class GpmAtom:
    """Matches the events a GPM matched (by the GPM's index in the plan)."""

    gpm: int


@dataclass(frozen=True, slots=True)
class ConjunctionAtom:
    """All operands matched by events at the same timestamp, mappings joined."""

    operands: tuple[Atom, ...]


@dataclass(frozen=True, slots=True)
class DisjunctionAtom:
    """Any operand."""

    operands: tuple[Atom, ...]


@dataclass(frozen=True, slots=True)
class JoinAtom:
    """A join of GPMs in any temporal order (EP-SPARQL's BGP and Join, §4.2): at each
    timestamp, the joins of their occurrences that complete there (at least one
    occurrence at that timestamp), over the hull of the occurrences' intervals. The
    runtime keeps the occurrences per key (`NfaState.joins[memory]`), so the order the
    operands occur in needs no states of its own; `windowed` occurrences expire with
    the window. `orders[k]`: the order to join the operands in, starting from k;
    `variables[k]`: the variables operand k may bind."""

    operands: tuple[GpmAtom, ...]
    memory: int
    windowed: bool = True
    orders: tuple[tuple[int, ...], ...] = ()
    variables: tuple[frozenset[str], ...] = ()


Atom = Union[GpmAtom, ConjunctionAtom, DisjunctionAtom, JoinAtom]


def atom_gpms(atom: Atom) -> frozenset[int]:
    """GPM indices an atom reads (a state is only touched by groups holding them)."""
    if isinstance(atom, GpmAtom):
        return frozenset((atom.gpm,))
    return frozenset().union(*(atom_gpms(op) for op in atom.operands))


def starting_gpms(automaton: Automaton) -> frozenset[int] | None:
    """The GPMs whose rows can start a run: those of the initial states' atoms (None when an
    initial state's atom reads none, and so could start without a row). A partition key with no
    state whose rows are all of other GPMs has nothing those rows can continue or start."""
    found = [atom_gpms(automaton.states[i].atom) for i in automaton.initial]
    return frozenset().union(*found) if found and all(found) else None


class Action(Enum):
    TAKE = "take"
    """Consume the matching events and move to the target state."""
    IGNORE = "ignore"
    """Skip the event and keep waiting in the same state."""
    PROCEED = "proceed"
    """Move to the target without consuming (folded into guards at compile time)."""


class Relation(Enum):
    """How a remembered solution of an optional (or negated) side relates in
    time to the mandatory side, for an anti-join (EP-SPARQL's optional
    operators, CQELS-CEP's negation)."""

    BEFORE_START = "ends before the mandatory side starts"  # OPTIONALSEQ (SeqRightJoin), NO_HEAD
    SAME_INTERVAL = "has the same interval"  # EQUALSOPTIONAL (EqLeftJoin)
    NOT_AFTER_END = "ends no later than the mandatory side"  # OPTIONAL (LeftJoin)
    WITHIN_GAP = "lies within [end of `steps`, start of `later`]"  # CQELS-CEP SEQ_WO
    AFTER_END = "starts after the mandatory side ends"  # CQELS-CEP NO_TAIL

    @property
    def open(self) -> bool:
        """Can a solution that blocks the match still arrive after it is detected?
        Only for AFTER_END: such anti-joins are settled at evaluation time
        (`Runtime.settle`), not at detection."""
        return self is Relation.AFTER_END


EXTENSION_MARKER = "."
"""Mapping keys starting with this are no variables (no SPARQL variable name has a dot): they
record that a BIND or VALUES left a variable unbound (`extension_marker`)."""


def extension_marker(extension: int, var: str) -> str:
    """The mapping key extension number `extension` (a BIND or VALUES of the pattern) sets when it
    leaves ?var unbound: the variable may be bound in the run all the same, by a pattern outside
    the extension's group that occurred first, which the checks inside the group must not see."""
    return f"{EXTENSION_MARKER}{extension}.{var}"


@dataclass(frozen=True, slots=True)
class MaybeUnbound:
    """A variable in a check's scope that only BINDs or VALUES among the check's parts bind, each of
    which may leave it unbound (an error, UNDEF): the check sees it only if one of them bound it,
    that is unless every one of `markers` is in the run's mapping (SPARQL §18.2.2: a FILTER, a BIND
    and an anti-join see their own group's solution, not a binding from outside it)."""

    name: str
    markers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AntiJoin:
    """At acceptance: the match stands only if no remembered solution of the
    auxiliary pattern `aux` is compatible with it and `relation`-related to
    the interval of its steps `steps` (for WITHIN_GAP: to the gap between
    the end of `steps` and the start of `later`)."""

    aux: int
    steps: frozenset[int]
    """Positions of the mandatory side's parts (see IntervalSpec)."""
    relation: Relation
    later: frozenset[int] = frozenset()
    scope: frozenset[str] | None = None
    """The mandatory side's variables: compatibility is checked on those
    bindings only (None: the whole match)."""
    condition: Expr | None = None
    """The optional group's FILTER, over both sides (SPARQL's LeftJoin(P1, P2, F))."""
    unbound: tuple[MaybeUnbound, ...] = ()
    """Variables of `scope` that only the mandatory side's BINDs or VALUES may bind."""


@dataclass(frozen=True, slots=True)
class IntervalFilter:
    """A FILTER of a group in an interval pattern: checked once the group's
    parts `steps` (positions, see IntervalSpec) are taken, on the bindings of the group's variables `scope` (a
    FILTER sees only its own group, SPARQL §18.2.2) and its interval."""

    steps: frozenset[int]
    expr: Expr
    scope: frozenset[str] | None = None
    unbound: tuple[MaybeUnbound, ...] = ()
    """Variables of `scope` that only BINDs or VALUES of the group may bind."""


@dataclass(frozen=True, slots=True)
class IntervalBind:
    """A BIND of a group in an interval pattern (SPARQL Extend, §18.2.2.5): once the parts written
    before it, `steps`, are taken, `expr` is evaluated on their bindings (`scope`, `unbound` as in
    IntervalFilter) and their interval. The run's ?var unbound: it is bound to the value; already
    bound (by a later pattern of the join that occurred first): the run goes on only with the same
    term (the join). An error binds nothing and sets `marker`."""

    steps: frozenset[int]
    expr: Expr
    var: str
    marker: str
    scope: frozenset[str] | None = None
    unbound: tuple[MaybeUnbound, ...] = ()


@dataclass(frozen=True, slots=True)
class IntervalValues:
    """VALUES of a group (a join with a static table, SPARQL §18.2.2.6): the run's mapping joined
    with each compatible row, one run per row; a row's UNDEF (None) binds nothing and sets its
    variable's marker (`markers[i]` for `variables[i]`). Rows hold N-Triples terms."""

    variables: tuple[str, ...]
    rows: tuple[tuple[str | None, ...], ...]
    markers: tuple[str, ...]


IntervalCheck = Union[IntervalFilter, IntervalBind, IntervalValues]
"""What a state checks over the parts its run took: FILTERs hold or not, BINDs and VALUES extend
the mapping (VALUES into several)."""


@dataclass(frozen=True, slots=True)
class IntervalSpec:
    """What a state of an interval pattern (EP-SPARQL) checks beyond its atom.

    A run keeps the interval of every *part* it took (a GPM, or a join group's
    JoinAtom), numbered in the order taken; every set below holds such
    positions. `step` is the index of the step this state takes; `after[k]`
    lists the parts the k-th part of the state's atom must start after the
    end of (SeqJoin); `equal` pairs of part sets must span equal intervals
    (EqJoin) and `filters` FILTERs over the interval of their parts hold —
    both checked once all their parts are taken, `filters` in order with the
    BINDs and VALUES among them, which extend the mapping; `anti` is checked when the
    match completes; an accepting state with `records` set remembers its
    solutions for anti-joins instead of reporting them."""

    step: int
    after: tuple[frozenset[int], ...] = ()
    equal: tuple[tuple[frozenset[int], frozenset[int]], ...] = ()
    filters: tuple[IntervalCheck, ...] = ()
    own: int = 0
    """The first `own` of `filters` read only the parts this step takes (a FILTER, BIND or VALUES
    inside the element): under a consuming policy they decide which inputs the step may select.
    The others read parts of earlier steps too (a group's FILTER over a SEQ): they apply to what
    the policy selected (docs/semantics.md, "Selection and consumption policies")."""
    anti: tuple[AntiJoin, ...] = ()
    records: int | None = None
    auxiliary: bool = False
    """A step of an unbounded auxiliary pattern, whose solutions may block a
    match however long before it they ended (OPTIONALSEQ, OPTIONAL, NO_HEAD):
    its runs are not cut by the window, which bounds the reported matches only."""


@dataclass(frozen=True, slots=True)
class State:
    """Where a run waits for one element.

    `max_gap` bounds, for strict contiguity, how many ranks after the run's
    last event the element may occur (1, plus one per optional or negated
    element skipped on the way); None when some strategy crossed skips.
    `rebind` lists variables dropped from the run's mapping before joining
    (Kleene+ occurrences rebind their own variables, SPAseq Example 9).
    """

    id: int
    label: str
    element: int
    atom: Atom
    strategy: SelectionStrategy
    max_gap: int | None
    guards: tuple[Atom, ...]
    rebind: frozenset[str]
    after_take: tuple[int, ...]
    accepting: bool
    interval: IntervalSpec | None = None

    def edges(self) -> tuple[tuple[Action, int | None], ...]:
        """(action, target) pairs, for compiler tests and dumps; target None = accept."""
        takes: list[tuple[Action, int | None]] = [(Action.TAKE, t) for t in self.after_take]
        if self.accepting:
            takes.append((Action.TAKE, None))
        if self.strategy is not SelectionStrategy.STRICT or (self.max_gap or 0) > 1:
            takes.append((Action.IGNORE, self.id))
        return tuple(takes)


@dataclass(frozen=True, slots=True)
class ResidualFilter:
    """A FILTER of a GPM that reads variables bound elsewhere (SPAseq §7.2.1),
    evaluated by the runtime on the joined mapping."""

    expr: Expr
    variables: frozenset[str]


@dataclass(frozen=True, slots=True)
class GpmVariables:
    """The variables one GPM's rows may bind (`may`) and bind in every row (`certain`): what the
    lean runtime (`plugin/nfa/lean.py`) keeps of a run's bindings is planned from them."""

    may: frozenset[str]
    certain: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Automaton:
    """The whole compiled pattern: states, the states a new run starts from,
    and per GPM the residual filters the runtime applies."""

    states: tuple[State, ...]
    initial: tuple[int, ...]
    residuals: tuple[tuple[ResidualFilter, ...], ...]
    within: float | None
    policy: ConsumptionPolicy = ConsumptionPolicy.UNRESTRICTED
    inputs: tuple[tuple[str, str, str] | None, ...] = ()
    """Per GPM, what one input is for consuming policies: a triple pattern
    (N-Triples terms, variables as `?name`) when the GPM matches one triple
    of an event (EP-SPARQL's triple occurrences), else None: the whole event."""
    """Unrestricted: every run takes every compatible event. Chronological /
    recent (RSEP-QL SEQ^c / SEQ^r with consumption): each event is taken by the
    earliest / latest waiting run only, and the inputs of a match are consumed."""
    match_limit: int | None = field(default=None, metadata={"fingerprint": False})
    """Matches reported per key and timestamp by the shared buffer (`plugin/nfa/shared_buffer.py`;
    None: its default). A bound on output, not on what a state means: not fingerprinted."""
    variables: tuple[GpmVariables, ...] = field(default=(), metadata={"fingerprint": False})
    """Per GPM, the variables its rows bind (empty: unknown, and the general runtime runs the
    automaton). Not part of the fingerprint (`plugin/nfa/snapshot.py`): like the GPMs' queries it
    comes from, it says nothing about what a saved state means, and checkpoints written before
    the field existed stay valid."""

    def dump(self) -> str:
        """A readable listing of the automaton, one line per state."""
        lines = []
        for state in self.states:
            start = "start " if state.id in self.initial else ""
            gap = "" if state.max_gap is None else f" gap<={state.max_gap}"
            guards = f" unless {list(map(format_atom, state.guards))}" if state.guards else ""
            rebind = f" rebind {sorted(state.rebind)}" if state.rebind else ""
            after = [f"x{t}" for t in state.after_take] + (["accept"] if state.accepting else [])
            lines.append(
                f"{start}x{state.id} [{state.label}] take {format_atom(state.atom)} "
                f"'{state.strategy.value}'{gap}{guards}{rebind} -> {', '.join(after)}"
            )
        return "\n".join(lines)


def format_atom(atom: Atom) -> str:
    if isinstance(atom, GpmAtom):
        return f"g{atom.gpm}"
    if isinstance(atom, JoinAtom):
        return "join(" + ", ".join(format_atom(op) for op in atom.operands) + ")"
    joiner = " & " if isinstance(atom, ConjunctionAtom) else " | "
    return "(" + joiner.join(format_atom(op) for op in atom.operands) + ")"
