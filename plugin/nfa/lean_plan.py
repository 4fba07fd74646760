"""What the lean runtime (`plugin/nfa/lean.py`) plans once per automaton: which bindings a run
keeps at each state, and each state's checks compiled per candidate *shape*.

A lean run does not carry its solution mapping. It carries the rows it took (in its path,
`lean_state.Node`) and, in a small tuple of *slots*, only the bindings that the checks of its state
and of the states after it read from the run's side: the variables a candidate joins on and
the variables its pending (stateful) filters read. The slots of a state are its *layout*, found
by two passes over the automaton (`_Planner`): forward, which variables a run waiting in a state
may have bound; backward, which of them a check there or later reads. A slot holds the term
(`TERM`, for joins and the general evaluator) or its parsed value (`VALUE`, for the comparisons
compiled here); the mapping itself is rebuilt from the path only for a match.

A candidate's shape is what its checks depend on besides the values: the variables its mapping
binds and which residual filters wait for the run (`Shape`). Per (state, shape) a `Take` holds
the compiled join and filters (`test`) and how each child's slots are built (`builds`); a shape
is planned the first time it occurs. A row binding a variable its GPM was not declared with
(`Automaton.variables`), or missing a certain one, does not fit the plan: `Unplanned` is raised
before anything is processed, and the caller runs the general runtime instead.

The filters' compiled form is `plugin/nfa/lean_filters.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rsep.plugin.algebra.events import SelectionStrategy
from rsep.plugin.errors import InternalError
from rsep.plugin.expr import compile_filter
from rsep.plugin.nfa.automaton import (
    Atom,
    Automaton,
    ConjunctionAtom,
    DisjunctionAtom,
    GpmAtom,
    GpmVariables,
    State,
)
from rsep.plugin.nfa.candidates import pure
from rsep.plugin.nfa.lean_filters import (
    EMPTY,
    TERM,
    VALUE,
    Reads,
    Slot,
    Slots,
    Test,
    comparison,
    compile_residual,
    conjuncts,
    variables_of,
)

Build = Callable[[Slots, tuple[Any, ...]], Slots]


class Unplanned(InternalError):
    """A row the plan does not cover (a variable its GPM was not declared with): the caller
    runs the general runtime. Never leaves the lean runtime."""


# ---------------------------------------------------------------------- shapes


@dataclass(frozen=True, slots=True, eq=False)
class Shape:
    """What a candidate's checks depend on besides its values: the variables its mapping
    binds and the residual filters that wait for a run (`(gpm, index)` into
    `Automaton.residuals`). Interned: compared by identity."""

    keys: frozenset[str]
    pending: tuple[tuple[int, int], ...]


class Shapes:
    """Interned shapes of rows (per GPM and tuple of variable names) and of conjunctions, and
    the residual filters a row's shape can evaluate at once (`local`)."""

    __slots__ = ("_conj", "_residuals", "_rows", "local", "settled", "variables")

    def __init__(self, automaton: Automaton) -> None:
        self.variables = automaton.variables
        self._rows: list[dict[tuple[str, ...], Shape]] = [{} for _ in automaton.residuals]
        self.local: dict[Shape, tuple[Callable[[Mapping[str, str]], bool], ...]] = {}
        self._conj: dict[tuple[Shape, ...], Shape] = {}
        self._residuals = [
            [(r.variables, compile_filter(r.expr)) for r in filters] for filters in automaton.residuals
        ]
        self.settled = [
            not any(r.variables <= declared.may for r in filters)
            for filters, declared in zip(automaton.residuals, self.variables, strict=True)
        ]
        """Per GPM: no residual filter can be evaluated on its rows alone (it reads a variable
        the GPM does not bind), so its rows are its candidates as they are."""

    def rows(self, gpm: int) -> dict[tuple[str, ...], Shape]:
        """The shapes of `gpm`'s rows met so far, by their variable names."""
        return self._rows[gpm]

    def of_row(self, gpm: int, names: tuple[str, ...]) -> Shape:
        """The shape of a row of `gpm` binding `names` (Unplanned if the plan does not cover it)."""
        found = self._rows[gpm].get(names)
        if found is None:
            keys = frozenset(names)
            declared = self.variables[gpm]
            if not keys <= declared.may or not declared.certain <= keys:
                raise Unplanned(f"GPM {gpm} bound {sorted(keys)}, not within {sorted(declared.may)}")
            pending = []
            local = []
            for index, (variables, predicate) in enumerate(self._residuals[gpm]):
                if variables <= keys:
                    local.append(predicate)
                else:
                    pending.append((gpm, index))
            found = self._rows[gpm][names] = Shape(keys, tuple(pending))
            self.local[found] = tuple(local)
        return found

    def of_conjunction(self, parts: tuple[Shape, ...]) -> Shape:
        found = self._conj.get(parts)
        if found is None:
            keys = frozenset().union(*(p.keys for p in parts))
            found = self._conj[parts] = Shape(keys, tuple(x for p in parts for x in p.pending))
        return found


# ---------------------------------------------------------------------- per state


@dataclass(slots=True, eq=False)
class Take:
    """One state's checks of candidates of one shape: `values(mapping)` computes what they
    read of the candidate once per candidate; `test(slots, values)` is the join and the pending
    filters (None: always taken); `builds` gives, per target state, the child's slots (None:
    the parent's slots unchanged); `never`: no run can take it (a filter reads a variable the
    run cannot have bound)."""

    values: Callable[[Mapping[str, str]], tuple[Any, ...]]
    test: Test | None
    builds: tuple[tuple[int, Build | None], ...]
    never: bool = False
    join: tuple[tuple[int, int], ...] = ()
    """(slot, index into the values) of the join terms, for bucketing many candidates."""
    threshold: tuple[str, int, int] | None = None
    """When `test` is one comparison `x op r` of a candidate's number x (`values[i]`) with the
    run's slot r: (op, i, slot), for the runtime to inline it (`lean._passing`)."""
    rebind: frozenset[str] = frozenset()
    cover: frozenset[str] = frozenset()
    """The variables this step binds or rebinds: a parent step that binds and rebinds nothing
    else adds nothing to a mapping rebuilt from here (`skips`)."""
    same: bool = False
    """Every child keeps the parent's slots: one child tuple serves every target."""
    skips: dict[Any, bool] = field(default_factory=dict)
    """Per take of a parent step (None: an adopted or first step), whether its bindings are all
    covered by this step's (`lean_state.mapping` then skips it)."""
    outs: Any = None
    """The lean runtime's (list the children go to, build) per target, set on first use."""

    def __post_init__(self) -> None:
        self.same = all(build is None for _, build in self.builds)

    def skips_parent(self, parent: Take | None) -> bool:
        """Does the step that `parent` made add nothing visible once this step is taken? Its
        variables and rebind are all bound or rebound here."""
        found = self.skips.get(parent)
        if found is None:
            found = self.skips[parent] = parent is not None and parent.cover <= self.cover
        return found


@dataclass(slots=True, eq=False)
class StatePlan:
    """One state of the automaton, as the lean runtime runs it."""

    spec: State
    layout: tuple[Slot, ...]
    maybe: frozenset[str]
    """The variables a run waiting here may have bound."""
    within: float | None
    next_only: bool
    takes: dict[Shape, Take] = field(default_factory=dict)
    guards: dict[Shape, Take] = field(default_factory=dict)
    direct: int | None = None
    """The GPM whose rows are the state's candidates as they are (its atom is that GPM, no
    residual filter of it can be evaluated on a row alone) when it has no guards: the runtime
    reads them straight from the group (`LeanRuntime._advance`)."""
    strict: bool = False
    """Strict contiguity of one rank: a run waiting here takes at the next rank or is gone."""


class Plan:
    """The lean plan of an automaton: per state its `StatePlan`, and the compiled checks."""

    def __init__(self, automaton: Automaton, key: Sequence[str] = ()) -> None:
        self.automaton = automaton
        self.key = frozenset(key)
        self.shapes = Shapes(automaton)
        planner = _Planner(automaton, self.key)
        self.states = [
            StatePlan(
                spec,
                planner.layouts[spec.id],
                planner.maybe[spec.id],
                automaton.within,
                spec.strategy is SelectionStrategy.SKIP_TILL_NEXT,
            )
            for spec in automaton.states
        ]
        for plan in self.states:
            spec = plan.spec
            if isinstance(spec.atom, GpmAtom) and not spec.guards and self.shapes.settled[spec.atom.gpm]:
                plan.direct = spec.atom.gpm
            plan.strict = spec.max_gap == 1 and not plan.next_only
        self._initial: dict[int, dict[Shape, Take]] = {}
        self._residuals = automaton.residuals

    def take(self, plan: StatePlan | None, spec: State, shape: Shape) -> Take:
        """The checks of `spec` (waiting runs planned by `plan`; None: a new run) for `shape`."""
        memo = plan.takes if plan is not None else self.initial_takes(spec)
        found = memo.get(shape)
        if found is None:
            layout = plan.layout if plan is not None else EMPTY
            maybe = plan.maybe if plan is not None else frozenset()
            found = memo[shape] = self._compile(spec, layout, maybe, shape, spec.rebind, guard=False)
        return found

    def guard(self, plan: StatePlan, shape: Shape) -> Take:
        """The check "does a guard candidate of this shape occur compatibly with the run"."""
        found = plan.guards.get(shape)
        if found is None:
            found = plan.guards[shape] = self._compile(
                plan.spec, plan.layout, plan.maybe, shape, frozenset(), guard=True
            )
        return found

    def initial_takes(self, spec: State) -> dict[Shape, Take]:
        """The takes of an initial state for new runs, by shape (`take` fills it)."""
        return self._initial.setdefault(spec.id, {})

    def _compile(
        self,
        spec: State,
        layout: tuple[Slot, ...],
        maybe: frozenset[str],
        shape: Shape,
        rebind: frozenset[str],
        *,
        guard: bool,
    ) -> Take:
        where = {slot: i for i, slot in enumerate(layout)}
        reads = Reads(shape.keys, rebind, maybe, where)
        parts: list[Test] = []
        join: list[tuple[int, int]] = []
        for name in sorted(shape.keys - rebind - self.key):
            slot = where.get((name, TERM))
            if slot is not None:
                index = reads.cand(name, TERM)
                join.append((slot, index))
                parts.append(_joins(slot, index))
        never = False
        thresholds: list[tuple[str, int, int] | None] = [None] * len(parts)
        for gpm, index in shape.pending:
            compiled = compile_residual(self._residuals[gpm][index].expr, reads)
            if compiled is None:
                never = True
                break
            for test, threshold in compiled:
                parts.append(test)
                thresholds.append(threshold)
        builds: tuple[tuple[int, Build | None], ...] = ()
        if not guard:
            builds = tuple(
                (target, _build(layout, self.states[target].layout, shape.keys, rebind, maybe, reads))
                for target in spec.after_take
            )
        return Take(
            reads.values_of(),
            _all(parts),
            builds,
            never,
            tuple(join),
            threshold=thresholds[0] if len(parts) == 1 else None,
            rebind=rebind,
            cover=shape.keys | rebind,
        )


def _all(parts: list[Test]) -> Test | None:
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    tests = tuple(parts)

    def every(slots: Slots, values: tuple[Any, ...]) -> bool:
        for test in tests:  # noqa: SIM110 (a loop, not all(...): called for every run)
            if not test(slots, values):
                return False
        return True

    return every


def _joins(slot: int, index: int) -> Test:
    def joins(slots: Slots, values: tuple[Any, ...]) -> bool:
        bound = slots[slot]
        return bound is None or bound == values[index]

    return joins


def _build(
    layout: tuple[Slot, ...],
    target: tuple[Slot, ...],
    keys: frozenset[str],
    rebind: frozenset[str],
    maybe: frozenset[str],
    reads: Reads,
) -> Build | None:
    """The child's slots (`target` layout) from the parent's (`layout`) and the candidate:
    a variable the candidate binds comes from it, one the state rebinds (or no run here binds)
    is unbound, any other is the parent's. None when that is the parent's slots unchanged."""
    where = {slot: i for i, slot in enumerate(layout)}
    sources: list[tuple[int, int]] = []  # (0: parent slot, 1: candidate value, 2: unbound; index)
    for name, kind in target:
        if name in keys:
            sources.append((1, reads.cand(name, kind)))
        elif name in rebind or name not in maybe:
            sources.append((2, 0))
        else:
            sources.append((0, where[(name, kind)]))
    if layout == target and all(source == (0, i) for i, source in enumerate(sources)):
        return None
    if not sources:
        return lambda slots, values: EMPTY
    picks = tuple(sources)

    def build(slots: Slots, values: tuple[Any, ...]) -> Slots:
        return tuple([slots[i] if s == 0 else values[i] if s == 1 else None for s, i in picks])

    return build


# ---------------------------------------------------------------------- layouts


def leaves(atom: Atom) -> tuple[int, ...]:
    """The GPMs of an atom."""
    if isinstance(atom, GpmAtom):
        return (atom.gpm,)
    assert isinstance(atom, (ConjunctionAtom, DisjunctionAtom))
    return tuple(g for op in atom.operands for g in leaves(op))


def may_bind(atom: Atom, variables: tuple[GpmVariables, ...]) -> frozenset[str]:
    return frozenset().union(*(variables[g].may for g in leaves(atom)))


def certainly_binds(atom: Atom, variables: tuple[GpmVariables, ...]) -> frozenset[str]:
    if isinstance(atom, GpmAtom):
        return variables[atom.gpm].certain
    assert isinstance(atom, (ConjunctionAtom, DisjunctionAtom))
    parts = [certainly_binds(op, variables) for op in atom.operands]
    if isinstance(atom, ConjunctionAtom):
        return frozenset().union(*parts)
    return frozenset.intersection(*parts)


class _Planner:
    """`maybe[s]`: the variables a run waiting in state s may have bound (forward);
    `layouts[s]`: the slots it keeps, the bindings its checks or later ones read (backward)."""

    def __init__(self, automaton: Automaton, key: frozenset[str]) -> None:
        self.automaton = automaton
        self.key = key
        variables = automaton.variables
        states = automaton.states
        self.maybe: list[frozenset[str]] = [frozenset() for _ in states]
        changed = True
        while changed:
            changed = False
            for spec in states:
                out = (self.maybe[spec.id] - spec.rebind) | may_bind(spec.atom, variables)
                for target in spec.after_take:
                    if not out <= self.maybe[target]:
                        self.maybe[target] = self.maybe[target] | out
                        changed = True
        needs: list[set[Slot]] = [self._local(spec) for spec in states]
        changed = True
        while changed:
            changed = False
            for spec in states:
                certain = certainly_binds(spec.atom, variables)
                for target in spec.after_take:
                    for name, kind in needs[target]:
                        if name in spec.rebind or name in certain or name not in self.maybe[spec.id]:
                            continue
                        if (name, kind) not in needs[spec.id]:
                            needs[spec.id].add((name, kind))
                            changed = True
        self.layouts = [tuple(sorted(n)) for n in needs]

    def _local(self, spec: State) -> set[Slot]:
        """The bindings a run in `spec` is read for: join variables and the variables of the
        pending filters, of the state's atom (minus what it rebinds) and of its guards."""
        variables = self.automaton.variables
        maybe = self.maybe[spec.id]
        found: set[Slot] = set()
        for atom, rebind in ((spec.atom, spec.rebind), *((g, frozenset[str]()) for g in spec.guards)):
            usable = maybe - rebind
            found.update((n, TERM) for n in (may_bind(atom, variables) - self.key) & usable)
            for gpm in leaves(atom):
                for residual in self.automaton.residuals[gpm]:
                    parts = [comparison(p) for p in conjuncts(residual.expr)]
                    fast = pure(residual.expr) and all(p is not None for p in parts)
                    kind = VALUE if fast else TERM
                    found.update((n, kind) for n in variables_of(residual.expr) & usable)
        return found


def lean_eligible(automaton: Automaton) -> bool:
    """Does the lean runtime run this automaton exactly? Point patterns (GPMs, `&`, `|`) under
    every strategy, Kleene+ and guards, without consumption, intervals or join groups, and with
    the GPMs' variables known."""
    from rsep.plugin.algebra.events import ConsumptionPolicy

    if automaton.policy is not ConsumptionPolicy.UNRESTRICTED:
        return False
    if len(automaton.variables) != len(automaton.residuals):
        return False
    for spec in automaton.states:
        if spec.interval is not None:
            return False
        if not all(_point(atom) for atom in (spec.atom, *spec.guards)):
            return False
    return True


def buffered_eligible(automaton: Automaton) -> bool:
    """Does the shared buffer run this automaton? A lean one with WITHIN (which bounds the
    buffer) whose runs a skip-till-any state keeps and multiplies: one after a Kleene+ element
    or after another skip-till-any state."""
    if automaton.within is None or not lean_eligible(automaton):
        return False
    initial = set(automaton.initial)
    anys = [
        s for s in automaton.states if s.strategy is SelectionStrategy.SKIP_TILL_ANY and s.id not in initial
    ]
    kleene = any(s.rebind or s.id in s.after_take for s in automaton.states)
    return bool(anys) and (kleene or len(anys) > 1)


def _point(atom: Atom) -> bool:
    if isinstance(atom, GpmAtom):
        return True
    if isinstance(atom, (ConjunctionAtom, DisjunctionAtom)):
        return all(_point(op) for op in atom.operands)
    return False
