"""Interval patterns (EP-SPARQL §4.2) -> alternatives of flat step sequences.

EP-SPARQL's operators are joins over interval-stamped solutions: Join (any
temporal order, interval = hull), SeqJoin (left ends before right starts),
EqJoin (equal intervals), their optional forms, and FILTERs that read the
interval. The NFA takes events in detection order (by end time), so a pattern
is rewritten into the detection orders its parts can occur in. A *part* is
what one position of a run's intervals stands for: a leaf (one GPM, one
triple pattern) or a *join group*:

- a join of leaves (a BGP, or juxtaposed triple patterns) is one part, a
  `JoinAtom` the runtime evaluates as a whole: it keeps the occurrences of
  its leaves and yields, at each timestamp, the joins completed there (at
  least one occurrence at that timestamp), with the hull of their intervals.
  The order in which the leaves occur does not matter to a join, so it is
  not enumerated, under any policy (GPMs with residual filters keep leaf
  parts);
- `L SEQ R`: L's orders followed by R's, and every part of R must start
  after the end of L (needed once derived events or join groups carry
  intervals);
- `L AND R` / `L EQUALS R` (other operands): every interleaving (shuffle) of
  an order of L with one of R, where steps of both may also fall on one
  timestamp (they then form a conjunction step); EQUALS also requires equal
  intervals;
- `L UNION R`: the orders of both;
- FILTER: checked as soon as the parts of its group are all taken, with the
  group's interval available to getDURATION()/getSTARTTIME()/getENDTIME();
  one inside the element taken at that step is part of what the step may
  select under a consuming policy, one over a group holding earlier steps too
  applies to what was selected (`IntervalSpec.own`);
- BIND (SPARQL's Extend) and VALUES (a join with a static table): applied at
  the same moment over the parts written before them in their group, in
  order with the FILTERs: BIND binds its variable if the run has not bound
  it yet (a later pattern of the join may have occurred first) and otherwise
  keeps the run only with the same term; VALUES joins the run's mapping
  with each compatible row. Neither adds a part, so the interval is the
  parts'. What a check sees of the mapping is what its group binds: a
  variable only a BIND or VALUES of the group binds, and which it left
  unbound (an error, UNDEF), is hidden even when a pattern outside the group
  bound it (`MaybeUnbound`).

Every constraint names the parts it reads, and a run keeps the interval of
each part it took, so a conjunction step holding parts of both sides of an
EQUALS still compares each side's own interval.

The optional operators add *anti-joins*: the mandatory side stands alone only
if no compatible solution of the optional side exists with the required
temporal relation (and the optional group's FILTERs, its condition F, true on
both). The optional side is then also compiled as an auxiliary pattern whose
completed solutions the runtime remembers (per key) and checks when the
mandatory side completes — by which time, since events arrive in end-time
order, every solution that could match has been seen (EP-SPARQL's time-wise
monotonicity). An auxiliary pattern is *bounded* when its solutions only
matter while they are recent (EQUALSOPTIONAL: same interval as a mandatory
side, which the window bounds): its runs, join occurrences and remembered
solutions expire with the window. Otherwise (OPTIONALSEQ, OPTIONAL, NO_HEAD:
a solution ended however long ago still blocks) they are kept.

CQELS-CEP's SEQ with one negated element (§4.2) uses the same anti-joins, the
negated element being the auxiliary pattern: SEQ(!N, R...) is NO_HEAD (no
compatible N ends before the sequence starts), SEQ(L..., !N, R...) is SEQ_WO
(no compatible N lies within [end of L, start of R], compatible with the whole
mapping) and SEQ(L..., !N) is NO_TAIL (no compatible N starts after the
sequence ends, up to the evaluation time). NO_TAIL is the one anti-join a
later event can still violate after detection: the runtime keeps such matches
pending and decides them at an evaluation time (`Runtime.settle`).

The number of orders grows quickly with the number of unordered operands
that are not leaves (13 for three, 75 for four); patterns beyond
`MAX_ALTERNATIVES` are rejected.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import reduce
from itertools import product

from rsep.plugin.algebra.analysis import pattern_vars
from rsep.plugin.algebra.events import (
    DURATION_FUNCTION,
    ConsumptionPolicy,
    Disjunction,
    Equals,
    EqualsOptional,
    EventBind,
    EventFilter,
    EventJoin,
    EventLeftJoin,
    EventPattern,
    EventValues,
    GraphPatternEvent,
    Negation,
    OptionalSequence,
    SelectionStrategy,
    Sequence,
    event_children,
)
from rsep.plugin.algebra.sparql import IRI, BinaryOp, Expr, FunctionCall, Literal
from rsep.plugin.algebra.terms import term_to_nt
from rsep.plugin.compile.nfa_compiler import CompileError
from rsep.plugin.expr import stored_nt
from rsep.plugin.nfa.automaton import (
    AntiJoin,
    Atom,
    Automaton,
    ConjunctionAtom,
    GpmAtom,
    IntervalBind,
    IntervalCheck,
    IntervalFilter,
    IntervalSpec,
    IntervalValues,
    JoinAtom,
    MaybeUnbound,
    Relation,
    ResidualFilter,
    State,
    extension_marker,
)

MAX_ALTERNATIVES = 4096
_ANY = SelectionStrategy.SKIP_TILL_ANY
_BOUNDED = frozenset({Relation.SAME_INTERVAL, Relation.WITHIN_GAP})
"""Anti-join relations a remembered solution can only satisfy while it is younger than the
window (it must lie within the mandatory side's interval or gap, which the window bounds)."""

Part = tuple[str, ...]
"""The GPM names of a part: one for a leaf, several for a join group."""
Parts = frozenset[Part]


@dataclass(frozen=True, slots=True)
class View:
    """What a check over some parts sees of a run's mapping: the variables they bind (`scope`),
    of which `unbound` are bound by BINDs or VALUES only, which may leave them unbound."""

    scope: frozenset[str]
    unbound: tuple[MaybeUnbound, ...] = ()


@dataclass(frozen=True, slots=True)
class PartFilter:
    """A FILTER over the interval of `parts`, checked once `needs` (⊇ parts) are taken."""

    parts: Parts
    expr: Expr
    view: View
    needs: Parts


Binding = tuple[str, str, bool]
"""What a BIND or VALUES binds: (variable, its marker when left unbound, bound in every solution)."""


@dataclass(frozen=True, slots=True)
class PartBind:
    """`IntervalBind` over parts: applied once `needs` (the parts written before it) are taken."""

    needs: Parts
    expr: Expr
    view: View
    binds: tuple[Binding, ...]
    """One: the BIND's variable."""


@dataclass(frozen=True, slots=True)
class PartValues:
    """`IntervalValues`, applied once `needs` (the parts written before it) are taken."""

    needs: Parts
    rows: tuple[tuple[str | None, ...], ...]
    binds: tuple[Binding, ...]


PartCheck = PartFilter | PartBind | PartValues


@dataclass(frozen=True, slots=True)
class PartAnti:
    """`AntiJoin` over parts (see there)."""

    aux: int
    parts: Parts
    relation: Relation
    later: Parts = frozenset()
    view: View | None = None
    condition: Expr | None = None


@dataclass(frozen=True, slots=True)
class Alternative:
    """One detection order: `steps[i]` are the parts taken together at step i
    (one timestamp); `after[part]` the parts whose end `part` must start
    after; `equal` pairs of part sets with equal intervals; `filters` the
    FILTERs over the parts of their group, and the BINDs and VALUES over the
    parts before them, in the order they apply; `anti` the anti-joins checked at
    acceptance; `aux` set when this alternative records solutions for an
    anti-join instead of reporting matches."""

    steps: tuple[Parts, ...]
    after: Mapping[Part, Parts] = field(default_factory=dict)
    equal: tuple[tuple[Parts, Parts], ...] = ()
    filters: tuple[PartCheck, ...] = ()
    anti: tuple[PartAnti, ...] = ()
    aux: int | None = None

    @property
    def parts(self) -> Parts:
        return frozenset().union(*self.steps)


@dataclass
class _Context:
    """Auxiliary patterns handed out while flattening one query, whether each
    is bounded (its solutions expire with the window), and whether leaves
    may form join groups."""

    joins: bool = True
    variables: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Per GPM name, the variables its own group binds (without the knowledge base joined in)."""
    joined: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Per GPM name, the variables it binds with the knowledge base joined in."""
    top: frozenset[int] = frozenset()
    """The nodes that join the whole pattern (by `id`), whose checks see the knowledge base."""
    auxiliaries: list[list[Alternative]] = field(default_factory=list)
    bounded: list[bool] = field(default_factory=list)
    owner_bounded: bool = True
    extensions: dict[EventPattern, int] = field(default_factory=dict)
    """A number per BIND and VALUES node, for its markers (`extension_marker`)."""

    def auxiliary(self, pattern: EventPattern, relation: Relation) -> int:
        index = len(self.auxiliaries)
        bounded = self.owner_bounded and relation in _BOUNDED
        self.auxiliaries.append([])  # reserve the index before recursing
        self.bounded.append(bounded)
        outer, self.owner_bounded = self.owner_bounded, bounded
        try:
            self.auxiliaries[index] = [replace(a, aux=index) for a in _alternatives(pattern, self)]
        finally:
            self.owner_bounded = outer
        return index

    def view(self, alternative: Alternative, node: EventPattern) -> View:
        """The variables an alternative's parts, BINDs and VALUES bind: what a FILTER, a BIND or
        an anti-join over it (`node`) sees (the bindings of its own group's solution, SPARQL
        §18.2.2, not of other parts that bind the same names, nor of the branches of a UNION not
        taken). The knowledge base joined into a leaf is seen only by what joins the whole pattern."""
        variables = self.joined if id(node) in self.top else self.variables
        gpms = frozenset().union(*(variables[name] for part in alternative.parts for name in part))
        binds = (b for check in alternative.filters if not isinstance(check, PartFilter) for b in check.binds)
        return _view(gpms, binds)

    def binds(self, extension: EventBind | EventValues) -> tuple[Binding, ...]:
        """What the BIND or VALUES node binds, with the markers of its number."""
        number = self.extensions.setdefault(extension, len(self.extensions))
        if isinstance(extension, EventBind):
            var = extension.var.name
            return ((var, extension_marker(number, var), False),)
        rows = extension.data.rows
        return tuple(
            (v.name, extension_marker(number, v.name), all(row[i] is not None for row in rows))
            for i, v in enumerate(extension.data.vars)
        )

    def leading_view(self, bind: EventBind) -> View:
        """What a BIND written before any pattern of its group sees: the VALUES and BINDs before
        it, the `bind.leading` nodes directly below it."""
        binds: list[Binding] = []
        node = bind.element
        for _ in range(bind.leading or 0):
            assert isinstance(node, (EventBind, EventValues))
            binds += self.binds(node)
            node = node.element
        return _view(frozenset(), binds)


def _view(certain: frozenset[str], binds: Iterable[Binding]) -> View:
    """The view of parts binding `certain`, with BINDs and VALUES binding `binds`."""
    always, maybe = set(certain), dict[str, list[str]]()
    for var, marker, bound in binds:
        if bound:
            always.add(var)
        else:
            maybe.setdefault(var, []).append(marker)
    unbound = tuple(MaybeUnbound(v, tuple(m)) for v, m in sorted(maybe.items()) if v not in always)
    return View(frozenset(always | maybe.keys()), unbound)


def flatten(
    pattern: EventPattern,
    *,
    joins: bool = True,
    scopes: Mapping[str, frozenset[str]] | None = None,
    outer: int = 0,
) -> tuple[list[Alternative], _Context]:
    """The alternatives of `pattern`, and the context holding those of each auxiliary pattern.
    `scopes`: per GPM, the variables of its own group when the knowledge base was joined into it
    (`compile.plan.attach_background`), which only the `outer` FILTER and VALUES nodes at the
    root, those that join the whole pattern, see."""
    joined = _gpm_variables(pattern)
    own = {**joined, **(scopes or {})}
    context = _Context(joins=joins, variables=own, joined=joined, top=_outer(pattern, outer))
    main = _alternatives(pattern, context)
    total = len(main) + sum(map(len, context.auxiliaries))
    if total > MAX_ALTERNATIVES:
        raise CompileError(
            f"the pattern has {total} detection orders (more than {MAX_ALTERNATIVES}): "
            "it joins too many groups that are not plain triple patterns in one group; "
            "order some of them with SEQ, or split the query"
        )
    return main, context


def _outer(pattern: EventPattern, count: int) -> frozenset[int]:
    """The first `count` nodes from the root (by `id`), FILTERs and VALUES."""
    found: list[int] = []
    node = pattern
    while len(found) < count and isinstance(node, (EventFilter, EventValues)):
        found.append(id(node))
        node = node.element
    return frozenset(found)


def _alternatives(pattern: EventPattern, context: _Context) -> list[Alternative]:
    if isinstance(pattern, GraphPatternEvent):
        return [_leaf((pattern.name,))]
    if isinstance(pattern, Sequence):
        _require_skip_till_any(pattern)
        if any(isinstance(element, Negation) for element in pattern.elements):
            return _sequence_without(pattern, context)
        result = _alternatives(pattern.elements[0], context)
        for element in pattern.elements[1:]:
            result = [_then(a, b) for a, b in product(result, _alternatives(element, context))]
        return result
    if isinstance(pattern, EventJoin) and pattern.intersect:
        raise CompileError(
            "CQELS-CEP's JOIN of event clauses (interval intersection) is evaluated by the window "
            "runtime, not inside an event pattern"
        )
    if isinstance(pattern, EventJoin):
        return _join(pattern, context)
    if isinstance(pattern, Equals):
        return [
            replace(s, equal=(*s.equal, (a.parts, b.parts)))
            for a, b in product(_alternatives(pattern.left, context), _alternatives(pattern.right, context))
            for s, last_a, last_b in _shuffles_with_sides(a, b)
            if last_a == last_b  # equal ends: both sides complete at one timestamp
        ]
    if isinstance(pattern, Disjunction):
        return [a for operand in pattern.operands for a in _alternatives(operand, context)]
    if isinstance(pattern, EventFilter):
        return [
            _with_filter(a, pattern.expr, context.view(a, pattern))
            for a in _alternatives(pattern.element, context)
        ]
    if isinstance(pattern, (EventBind, EventValues)):
        return [_extended(a, pattern, context) for a in _alternatives(pattern.element, context)]
    if isinstance(pattern, (OptionalSequence, EqualsOptional, EventLeftJoin)):
        return _optional(pattern, context)
    if isinstance(pattern, Negation):
        raise CompileError("a negated element (!) is an element of a SEQ, between or beside positive ones")
    raise CompileError(f"{type(pattern).__name__} is not supported in an interval pattern")


def _leaf(part: Part) -> Alternative:
    return Alternative((frozenset((part,)),))


def _join(pattern: EventJoin, context: _Context) -> list[Alternative]:
    """Join: the leaf operands form one join group (or stay leaves, see the module
    docstring); the other operands are shuffled with it and with each other."""
    operands = _join_operands(pattern)
    leaves = [op for op in operands if isinstance(op, GraphPatternEvent)]
    others = [op for op in operands if not isinstance(op, GraphPatternEvent)]
    if context.joins and len(leaves) > 1:
        units = [[_leaf(tuple(leaf.name for leaf in leaves))]]
    else:
        units = [[_leaf((leaf.name,))] for leaf in leaves]
    units += [_alternatives(op, context) for op in others]
    result = units[0]
    for unit in units[1:]:
        result = [s for a, b in product(result, unit) for s, _, _ in _shuffles_with_sides(a, b)]
    return result


def _join_operands(pattern: EventJoin) -> list[EventPattern]:
    """The operands of nested joins (`{ {P1} { {P2} {P3} } }`): Join is associative,
    hull included, so they are one join."""
    out: list[EventPattern] = []
    for operand in pattern.operands:
        nested = isinstance(operand, EventJoin) and not operand.intersect
        out.extend(_join_operands(operand) if nested else [operand])  # type: ignore[arg-type]
    return out


def _optional(
    pattern: OptionalSequence | EqualsOptional | EventLeftJoin, context: _Context
) -> list[Alternative]:
    """The positive join, with the optional group's FILTERs F as its condition, plus the
    mandatory side alone under an anti-join (§4.2: SeqRightJoin, EqLeftJoin, LeftJoin)."""
    if isinstance(pattern, OptionalSequence):  # SeqRightJoin(Ψ' = left, optional; Ψ = right)
        optional, condition = _peel_filters(pattern.left)
        mandatory, relation = pattern.right, Relation.BEFORE_START
        joined = _alternatives(Sequence((optional, mandatory), (_ANY,)), context)
        positive = [_with_condition(a, condition, a.parts, context, pattern) for a in joined]
    elif isinstance(pattern, EqualsOptional):  # EqLeftJoin(Ψ = left; Ψ' = right, optional)
        mandatory, relation = pattern.left, Relation.SAME_INTERVAL
        optional, condition = _peel_filters(pattern.right)
        joined = _alternatives(Equals(mandatory, optional), context)
        positive = [_with_condition(a, condition, a.parts, context, pattern) for a in joined]
    else:  # LeftJoin: the optional side ends no later (docs/semantics.md: t'_end <= t_end)
        mandatory, relation = pattern.left, Relation.NOT_AFTER_END
        optional, condition = _peel_filters(pattern.right)
        positive = [
            _with_condition(s, condition, a.parts, context, pattern)
            for a, b in product(_alternatives(mandatory, context), _alternatives(optional, context))
            for s, last_a, last_b in _shuffles_with_sides(a, b)
            if last_b <= last_a
        ]
    return positive + _anti(mandatory, optional, relation, context, pattern, condition)


def _with_condition(
    alternative: Alternative, condition: Expr | None, interval: Parts, context: _Context, node: EventPattern
) -> Alternative:
    """F over the joined mapping; getDURATION() and friends read the interval of
    `interval` (the joined solution for Filter(F, SeqJoin/EqJoin), the mandatory
    side for LeftJoin, as §4.2 writes them)."""
    if condition is None:
        return alternative
    check = PartFilter(interval, condition, context.view(alternative, node), alternative.parts)
    return replace(alternative, filters=(*alternative.filters, check))


def _sequence_without(pattern: Sequence, context: _Context) -> list[Alternative]:
    """CQELS-CEP §4.2: NO_HEAD, SEQ_WO or NO_TAIL, by where the one negated element stands."""
    negated = [i for i, element in enumerate(pattern.elements) if isinstance(element, Negation)]
    if len(negated) > 1:
        raise CompileError("a SEQ has at most one negated element (CQELS-CEP §3.2)")
    index = negated[0]
    if len(pattern.elements) < 2:
        raise CompileError("a SEQ with a negated element needs a positive element")
    negation = pattern.elements[index]
    assert isinstance(negation, Negation)
    right_elements = pattern.elements[index + 1 :]
    relation = (
        Relation.BEFORE_START
        if index == 0
        else Relation.AFTER_END
        if not right_elements
        else Relation.WITHIN_GAP
    )
    aux = context.auxiliary(negation.element, relation)
    if any(a.anti for a in context.auxiliaries[aux]):
        raise CompileError("a negated element cannot itself hold a negated or optional element")
    left = _alternatives(_subsequence(pattern.elements[:index]), context) if index else []
    right = _alternatives(_subsequence(right_elements), context) if right_elements else []
    if index == 0:  # NO_HEAD: no compatible N ends before the sequence starts
        return [_with_anti(b, PartAnti(aux, b.parts, relation)) for b in right]
    if not right_elements:  # NO_TAIL: no compatible N starts after the sequence ends (settled at t)
        return [_with_anti(a, PartAnti(aux, a.parts, relation)) for a in left]
    result = []
    for a, b in product(left, right):  # SEQ_WO: no compatible N within [end of L, start of R]
        joined = _then(a, b)
        result.append(_with_anti(joined, PartAnti(aux, a.parts, relation, b.parts)))
    return result


def _subsequence(elements: tuple[EventPattern, ...]) -> EventPattern:
    any_ = SelectionStrategy.SKIP_TILL_ANY
    return elements[0] if len(elements) == 1 else Sequence(elements, tuple(any_ for _ in elements[1:]))


def _with_anti(alternative: Alternative, anti: PartAnti) -> Alternative:
    return replace(alternative, anti=(*alternative.anti, anti))


def _require_skip_till_any(pattern: Sequence) -> None:
    if any(s is not SelectionStrategy.SKIP_TILL_ANY for s in pattern.strategies):
        raise CompileError("interval sequences (EP-SPARQL SEQ) select with skip-till-any only")


def _anti(
    mandatory: EventPattern,
    optional: EventPattern,
    relation: Relation,
    context: _Context,
    node: EventPattern,
    condition: Expr | None = None,
) -> list[Alternative]:
    """The mandatory side alone, unless a solution of the optional side is
    compatible with the mandatory side's bindings (not the whole match: the
    operator may sit inside a larger pattern) and satisfies `condition`."""
    aux = context.auxiliary(optional, relation)
    return [
        _with_anti(
            alternative,
            PartAnti(
                aux, alternative.parts, relation, view=context.view(alternative, node), condition=condition
            ),
        )
        for alternative in _alternatives(mandatory, context)
    ]


def _peel_filters(pattern: EventPattern) -> tuple[EventPattern, Expr | None]:
    """An optional group's own FILTERs, which the optional operators (SPARQL's LeftJoin,
    and EP-SPARQL's SeqRightJoin and EqLeftJoin, §4.2) evaluate over both sides."""
    conditions: list[Expr] = []
    while isinstance(pattern, EventFilter):
        conditions.append(pattern.expr)
        pattern = pattern.element
    if not conditions:
        return pattern, None
    return pattern, reduce(lambda x, y: BinaryOp("&&", x, y), conditions)


def _then(a: Alternative, b: Alternative) -> Alternative:
    """a SEQ b: b's steps follow, each of b's parts starting after a ends (a's last step)."""
    last = a.steps[-1]
    return Alternative(
        steps=a.steps + b.steps,
        after={**a.after, **{part: b.after.get(part, frozenset()) | last for part in b.parts}},
        equal=a.equal + b.equal,
        filters=a.filters + b.filters,
        anti=a.anti + b.anti,
    )


def _shuffles_with_sides(a: Alternative, b: Alternative) -> Iterator[tuple[Alternative, int, int]]:
    """Every interleaving of a's and b's steps keeping each side's order,
    with steps of both sides possibly merged into one timestamp; yields the
    merged alternative and the index of each side's last step in it."""
    for plan in _interleavings(len(a.steps), len(b.steps)):
        steps: list[Parts] = []
        taken_a = taken_b = 0
        last_a = last_b = -1
        for index, (take_a, take_b) in enumerate(plan):
            parts: Parts = frozenset()
            if take_a:
                parts |= a.steps[taken_a]
                taken_a, last_a = taken_a + 1, index
            if take_b:
                parts |= b.steps[taken_b]
                taken_b, last_b = taken_b + 1, index
            steps.append(parts)
        merged = Alternative(
            steps=tuple(steps),
            after={**a.after, **b.after},
            equal=a.equal + b.equal,
            filters=a.filters + b.filters,
            anti=a.anti + b.anti,
        )
        yield merged, last_a, last_b


def _interleavings(m: int, n: int) -> Iterator[list[tuple[bool, bool]]]:
    """Sequences of (take from a, take from b) covering m and n steps in order."""
    if m == 0 and n == 0:
        yield []
        return
    if m:
        for rest in _interleavings(m - 1, n):
            yield [(True, False), *rest]
    if n:
        for rest in _interleavings(m, n - 1):
            yield [(False, True), *rest]
    if m and n:
        for rest in _interleavings(m - 1, n - 1):
            yield [(True, True), *rest]


def _with_filter(a: Alternative, expr: Expr, view: View) -> Alternative:
    parts = a.parts
    return replace(a, filters=(*a.filters, PartFilter(parts, expr, view, parts)))


def _extended(a: Alternative, pattern: EventBind | EventValues, context: _Context) -> Alternative:
    """`a` with the BIND or VALUES over its parts applied last (see the module docstring)."""
    check: PartCheck
    if isinstance(pattern, EventBind):
        view = context.view(a, pattern) if pattern.leading is None else context.leading_view(pattern)
        check = PartBind(a.parts, pattern.expr, view, context.binds(pattern))
    else:
        rows = tuple(
            tuple(None if t is None else stored_nt(term_to_nt(t)) for t in row) for row in pattern.data.rows
        )
        check = PartValues(a.parts, rows, context.binds(pattern))
    return replace(a, filters=(*a.filters, check))


# --------------------------------------------------------------------------- alternatives -> automaton


@dataclass
class _Node:
    atom: Atom
    spec: IntervalSpec
    accepting: bool
    label: str
    children: list[int] = field(default_factory=list)


@dataclass
class _Builder:
    """Turns alternatives into trie nodes: parts get positions in a run's
    intervals (in step order, within a step in the order of the step's atom),
    join groups get their `JoinAtom` (one memory per group and boundedness)."""

    gpm_index: Mapping[str, int]
    bounded: list[bool]
    joins: dict[tuple[Part, bool], JoinAtom] = field(default_factory=dict)
    variables: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def atom(self, part: Part, bounded: bool) -> Atom:
        if len(part) == 1:
            return GpmAtom(self.gpm_index[part[0]])
        key = (part, bounded)
        found = self.joins.get(key)
        if found is None:
            names = sorted(part, key=self.gpm_index.__getitem__)
            variables = tuple(self.variables.get(n, frozenset()) for n in names)
            found = self.joins[key] = JoinAtom(
                tuple(GpmAtom(self.gpm_index[n]) for n in names),
                memory=len(self.joins),
                windowed=bounded,
                orders=_join_orders(list(variables)),
                variables=variables,
            )
        return found

    def order(self, step: Parts) -> list[Part]:
        return sorted(step, key=lambda part: min(map(self.gpm_index.__getitem__, part)))

    def nodes(self, alternative: Alternative) -> Iterator[_Node]:
        bounded = alternative.aux is None or self.bounded[alternative.aux]
        ordered = [self.order(step) for step in alternative.steps]
        position = {part: i for i, part in enumerate(p for step in ordered for p in step)}
        step_of = {part: i for i, step in enumerate(ordered) for part in step}

        def at(parts: Parts) -> frozenset[int]:
            return frozenset(position[p] for p in parts)

        def due(parts: Parts) -> int:
            return max(step_of[p] for p in parts)

        last = len(ordered) - 1
        for index, parts in enumerate(ordered):
            atoms = [self.atom(part, bounded) for part in parts]
            final = index == last
            checks = [f for f in alternative.filters if due(f.needs) == index]
            own = [f for f in checks if f.needs <= frozenset(parts)]  # inside the element taken here
            spec = IntervalSpec(
                step=index,
                after=tuple(at(alternative.after.get(part, frozenset())) for part in parts),
                equal=tuple((at(x), at(y)) for x, y in alternative.equal if due(x | y) == index),
                filters=tuple(_check(f, at) for f in [*own, *(f for f in checks if f not in own)]),
                own=len(own),
                anti=tuple(
                    AntiJoin(
                        j.aux,
                        at(j.parts),
                        j.relation,
                        at(j.later),
                        None if j.view is None else j.view.scope,
                        j.condition,
                        () if j.view is None else j.view.unbound,
                    )
                    for j in alternative.anti
                )
                if final
                else (),
                records=alternative.aux if final else None,
                auxiliary=not bounded,
            )
            label = " ".join("+".join(part) for part in parts)
            if alternative.aux is not None:
                label += f" (aux {alternative.aux})"
            yield _Node(atoms[0] if len(atoms) == 1 else ConjunctionAtom(tuple(atoms)), spec, final, label)


def _check(check: PartCheck, at: Callable[[Parts], frozenset[int]]) -> IntervalCheck:
    """A check over parts as the state's check over positions."""
    if isinstance(check, PartFilter):
        return IntervalFilter(at(check.parts), check.expr, check.view.scope, check.view.unbound)
    if isinstance(check, PartBind):
        ((var, marker, _),) = check.binds
        view = check.view
        return IntervalBind(at(check.needs), check.expr, var, marker, view.scope, view.unbound)
    return IntervalValues(tuple(b[0] for b in check.binds), check.rows, tuple(b[1] for b in check.binds))


def _gpm_variables(pattern: EventPattern) -> dict[str, frozenset[str]]:
    if isinstance(pattern, GraphPatternEvent):
        return {pattern.name: pattern_vars(pattern.pattern)}
    return {name: found for child in event_children(pattern) for name, found in _gpm_variables(child).items()}


def _join_orders(variables: list[frozenset[str]]) -> tuple[tuple[int, ...], ...]:
    """Per first operand, an order to join a group's operands in: next the one sharing
    most variables with those already bound (a hash join on them), the first of those left on
    a tie. Each operand's count of bound variables is kept up to date as variables are bound,
    and the next one is taken from a heap: O(n log n) a first operand, not O(n^2) (an
    EP-SPARQL operand of 400 triple patterns, a 400-way join, took 26 s to compile)."""
    users: dict[str, list[int]] = {}
    for k, names in enumerate(variables):
        for name in names:
            users.setdefault(name, []).append(k)
    return tuple(_join_order(first, variables, users) for first in range(len(variables)))


def _join_order(
    first: int, variables: list[frozenset[str]], users: Mapping[str, list[int]]
) -> tuple[int, ...]:
    shared = [0] * len(variables)
    taken = [False] * len(variables)
    heap = [(0, k) for k in range(len(variables)) if k != first]  # (-shared, k): most, then first
    order: list[int] = []
    bound: set[str] = set()
    k = first
    while True:
        taken[k] = True
        order.append(k)
        for name in variables[k] - bound:
            bound.add(name)
            for user in users[name]:
                if not taken[user]:
                    shared[user] += 1
                    heapq.heappush(heap, (-shared[user], user))
        while heap and (taken[heap[0][1]] or -heap[0][0] != shared[heap[0][1]]):
            heapq.heappop(heap)  # stale: taken, or its count has grown since
        if not heap:
            return tuple(order)
        k = heapq.heappop(heap)[1]


def compile_interval_automaton(
    pattern: EventPattern,
    gpm_index: Mapping[str, int],
    residuals: tuple[tuple[ResidualFilter, ...], ...],
    *,
    within: float | None = None,
    policy: ConsumptionPolicy = ConsumptionPolicy.UNRESTRICTED,
    scopes: Mapping[str, frozenset[str]] | None = None,
    outer: int = 0,
) -> Automaton:
    """One automaton for all alternatives: a trie, so that alternatives
    sharing their first steps share the states (and the runs) for them
    (`scopes`, `outer`: see `flatten`)."""
    main, context = flatten(pattern, joins=not any(residuals), scopes=scopes, outer=outer)
    builder = _Builder(gpm_index, context.bounded, variables=_gpm_variables(pattern))
    nodes: list[_Node] = []
    memo: dict[tuple[object, ...], int] = {}
    roots: list[int] = []
    for alternative in [*main, *(a for group in context.auxiliaries for a in group)]:
        parent: int | None = None
        for node in builder.nodes(alternative):
            key = (parent, node.atom, node.spec, node.accepting)
            found = memo.get(key)
            if found is None:
                found = memo[key] = len(nodes)
                nodes.append(node)
                (roots if parent is None else nodes[parent].children).append(found)
            parent = found
    states = tuple(
        State(
            id=i,
            label=node.label,
            element=node.spec.step,
            atom=node.atom,
            strategy=SelectionStrategy.SKIP_TILL_ANY,
            max_gap=None,
            guards=(),
            rebind=frozenset(),
            after_take=tuple(node.children),
            accepting=node.accepting,
            interval=node.spec,
        )
        for i, node in enumerate(nodes)
    )
    return Automaton(states, tuple(roots), residuals, within, policy)


# --------------------------------------------------------------------------- window pushing

_XSD = "http://www.w3.org/2001/XMLSchema#"
_DURATION = re.compile(
    r"^(-)?P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$"
)


def duration_bound(pattern: EventPattern) -> float | None:
    """The window implied by a top-level `getDURATION() < "P30D"^^xsd:duration` (or
    <=, or the comparison written the other way round) FILTER conjunct (EP-SPARQL
    §5): runs, join occurrences and bounded remembered solutions older than that
    can never be part of a match, so they are dropped and memory stays bounded on
    an unbounded stream."""
    bounds: list[float] = []
    node = pattern
    while isinstance(node, (EventFilter, EventBind, EventValues)):  # BIND, VALUES keep the interval
        if isinstance(node, EventFilter):
            for conjunct in _conjuncts(node.expr):
                bound = _bound(conjunct)
                if bound is not None:
                    bounds.append(bound)
        node = node.element
    return min(bounds) if bounds else None


def _conjuncts(expr: Expr) -> list[Expr]:
    if isinstance(expr, BinaryOp) and expr.op == "&&":
        return _conjuncts(expr.left) + _conjuncts(expr.right)
    return [expr]


_FLIPPED = {">": "<", ">=": "<="}
_DURATION_TYPES = frozenset(_XSD + name for name in ("duration", "dayTimeDuration"))


def _bound(expr: Expr) -> float | None:
    """`getDURATION() < d` or `<=` (also written `d > getDURATION()` or `>=`): d in seconds."""
    if not isinstance(expr, BinaryOp):
        return None
    call, limit, op = expr.left, expr.right, expr.op
    if op in _FLIPPED:
        call, limit, op = limit, call, _FLIPPED[op]
    if op not in ("<", "<="):
        return None
    if not (
        isinstance(call, FunctionCall)
        and call.name == IRI(DURATION_FUNCTION)
        and isinstance(limit, Literal)
        and limit.datatype in _DURATION_TYPES
    ):
        return None
    match = _DURATION.match(limit.lexical)
    if match is None or match.group(1):
        return None  # years and months have no fixed length; negative bounds match nothing anyway
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups()[1:])
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds
