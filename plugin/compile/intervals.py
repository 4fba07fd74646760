"""Interval patterns (EP-SPARQL §4.2) -> alternatives of flat step sequences.

EP-SPARQL's operators are joins over interval-stamped solutions: Join (any
temporal order, interval = hull), SeqJoin (left ends before right starts),
EqJoin (equal intervals), their optional forms, and FILTERs that read the
interval. The NFA takes events in detection order (by end time), so a pattern
is rewritten into every detection order its leaves can occur in:

- a leaf (one triple pattern) is one step;
- `L SEQ R`: L's orders followed by R's, and every step of R must start
  after the end of L's last step (needed once derived events carry intervals);
- `L AND R` / `L EQUALS R`: every interleaving (shuffle) of an order of L with
  one of R, where steps of both may also fall on one timestamp (they then
  form a conjunction step); EQUALS also requires equal intervals;
- `L UNION R`: the orders of both;
- FILTER: checked as soon as the steps of its group are all taken, with the
  group's interval available to getDURATION()/getSTARTTIME()/getENDTIME().

The optional operators add *anti-joins*: the mandatory side stands alone only
if no compatible solution of the optional side exists with the required
temporal relation. The optional side is then also compiled as an auxiliary
pattern whose completed solutions the runtime remembers (per key, within the
window) and checks when the mandatory side completes — by which time, since
events arrive in end-time order, every solution that could match has been
seen (EP-SPARQL's time-wise monotonicity).

CQELS-CEP's SEQ with one negated element (§4.2) uses the same anti-joins, the
negated element being the auxiliary pattern: SEQ(!N, R...) is NO_HEAD (no
compatible N ends before the sequence starts), SEQ(L..., !N, R...) is SEQ_WO
(no compatible N lies within [end of L, start of R], compatible with the whole
mapping) and SEQ(L..., !N) is NO_TAIL (no compatible N starts after the
sequence ends, up to the evaluation time). NO_TAIL is the one anti-join a
later event can still violate after detection: the runtime keeps such matches
pending and decides them at an evaluation time (`Runtime.settle`).

The number of orders grows quickly with the number of unordered leaves
(13 for three, 75 for four); patterns beyond `MAX_ALTERNATIVES` are rejected.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
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
    EventFilter,
    EventJoin,
    EventLeftJoin,
    EventPattern,
    GraphPatternEvent,
    Negation,
    OptionalSequence,
    SelectionStrategy,
    Sequence,
    event_children,
)
from rsep.plugin.algebra.sparql import IRI, BinaryOp, Expr, FunctionCall, Literal
from rsep.plugin.compile.automaton import CompileError
from rsep.plugin.nfa.automaton import (
    AntiJoin,
    Atom,
    Automaton,
    ConjunctionAtom,
    GpmAtom,
    IntervalFilter,
    IntervalSpec,
    Relation,
    ResidualFilter,
    State,
)

MAX_ALTERNATIVES = 4096
_ANY = SelectionStrategy.SKIP_TILL_ANY


@dataclass(frozen=True, slots=True)
class Alternative:
    """One detection order: `steps[i]` are the leaf GPMs taken together at
    step i (one timestamp); `after[i]` the steps whose end step i must start
    after; `equal` pairs of step sets with equal intervals; `filters` the
    FILTERs with the steps of their group; `anti` the anti-joins checked at
    acceptance; `aux` set when this alternative records solutions for an
    anti-join instead of reporting matches."""

    steps: tuple[frozenset[str], ...]
    after: tuple[frozenset[int], ...]
    equal: tuple[tuple[frozenset[int], frozenset[int]], ...] = ()
    filters: tuple[IntervalFilter, ...] = ()
    anti: tuple[AntiJoin, ...] = ()
    aux: int | None = None


@dataclass
class _Context:
    """Auxiliary patterns handed out while flattening one query."""

    auxiliaries: list[list[Alternative]] = field(default_factory=list)

    def auxiliary(self, pattern: EventPattern) -> int:
        index = len(self.auxiliaries)
        self.auxiliaries.append([])  # reserve the index before recursing
        self.auxiliaries[index] = [replace(a, aux=index) for a in _alternatives(pattern, self)]
        return index


def flatten(pattern: EventPattern) -> tuple[list[Alternative], list[list[Alternative]]]:
    """The alternatives of `pattern`, and those of each auxiliary pattern."""
    context = _Context()
    main = _alternatives(pattern, context)
    total = len(main) + sum(map(len, context.auxiliaries))
    if total > MAX_ALTERNATIVES:
        raise CompileError(
            f"the pattern has {total} detection orders (more than {MAX_ALTERNATIVES}): "
            "split large unordered groups of triple patterns, or order them with SEQ"
        )
    return main, context.auxiliaries


def _alternatives(pattern: EventPattern, context: _Context) -> list[Alternative]:
    if isinstance(pattern, GraphPatternEvent):
        return [Alternative((frozenset((pattern.name,)),), (frozenset(),))]
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
        result = _alternatives(pattern.operands[0], context)
        for operand in pattern.operands[1:]:
            result = [s for a, b in product(result, _alternatives(operand, context)) for s in _shuffles(a, b)]
        return result
    if isinstance(pattern, Equals):
        return [
            replace(s, equal=(*s.equal, (frozenset(left), frozenset(right))))
            for a, b in product(_alternatives(pattern.left, context), _alternatives(pattern.right, context))
            for s, left, right in _shuffles_with_sides(a, b)
            if max(left) == max(right)  # equal ends: both sides complete at one timestamp
        ]
    if isinstance(pattern, Disjunction):
        return [a for operand in pattern.operands for a in _alternatives(operand, context)]
    if isinstance(pattern, EventFilter):
        scope = event_vars(pattern.element)
        return [_with_filter(a, pattern.expr, scope) for a in _alternatives(pattern.element, context)]
    if isinstance(pattern, OptionalSequence):
        positive = _alternatives(Sequence((pattern.left, pattern.right), (_ANY,)), context)
        return positive + _anti(pattern.right, pattern.left, Relation.BEFORE_START, context)
    if isinstance(pattern, EqualsOptional):
        positive = _alternatives(Equals(pattern.left, pattern.right), context)
        return positive + _anti(pattern.left, pattern.right, Relation.SAME_INTERVAL, context)
    if isinstance(pattern, EventLeftJoin):
        optional, condition = _peel_filters(pattern.right)
        scope = event_vars(pattern.left) | event_vars(optional)
        positive = [
            s if condition is None else _with_filter(s, condition, scope)
            for a, b in product(_alternatives(pattern.left, context), _alternatives(optional, context))
            for s, left, right in _shuffles_with_sides(a, b)
            if max(right) <= max(left)  # the optional side ends no later (docs/semantics.md: t'_end <= t_end)
        ]
        return positive + _anti(pattern.left, optional, Relation.NOT_AFTER_END, context, condition)
    if isinstance(pattern, Negation):
        raise CompileError("a negated element (!) is an element of a SEQ, between or beside positive ones")
    raise CompileError(f"{type(pattern).__name__} is not supported in an interval pattern")


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
    aux = context.auxiliary(negation.element)
    if any(a.anti for a in context.auxiliaries[aux]):
        raise CompileError("a negated element cannot itself hold a negated or optional element")
    left = _alternatives(_subsequence(pattern.elements[:index]), context) if index else []
    right_elements = pattern.elements[index + 1 :]
    right = _alternatives(_subsequence(right_elements), context) if right_elements else []
    if index == 0:  # NO_HEAD: no compatible N ends before the sequence starts
        return [_with_anti(b, AntiJoin(aux, _all_steps(b), Relation.BEFORE_START)) for b in right]
    if not right_elements:  # NO_TAIL: no compatible N starts after the sequence ends (settled at t)
        return [_with_anti(a, AntiJoin(aux, _all_steps(a), Relation.AFTER_END)) for a in left]
    result = []
    for a, b in product(left, right):  # SEQ_WO: no compatible N within [end of L, start of R]
        joined = _then(a, b)
        later = frozenset(range(len(a.steps), len(joined.steps)))
        result.append(_with_anti(joined, AntiJoin(aux, _all_steps(a), Relation.WITHIN_GAP, later)))
    return result


def _subsequence(elements: tuple[EventPattern, ...]) -> EventPattern:
    any_ = SelectionStrategy.SKIP_TILL_ANY
    return elements[0] if len(elements) == 1 else Sequence(elements, tuple(any_ for _ in elements[1:]))


def _all_steps(alternative: Alternative) -> frozenset[int]:
    return frozenset(range(len(alternative.steps)))


def _with_anti(alternative: Alternative, anti: AntiJoin) -> Alternative:
    return replace(alternative, anti=(*alternative.anti, anti))


def _require_skip_till_any(pattern: Sequence) -> None:
    if any(s is not SelectionStrategy.SKIP_TILL_ANY for s in pattern.strategies):
        raise CompileError("interval sequences (EP-SPARQL SEQ) select with skip-till-any only")


def _anti(
    mandatory: EventPattern,
    optional: EventPattern,
    relation: Relation,
    context: _Context,
    condition: Expr | None = None,
) -> list[Alternative]:
    """The mandatory side alone, unless a solution of the optional side is
    compatible with the mandatory side's bindings (not the whole match: the
    operator may sit inside a larger pattern) and satisfies `condition`."""
    aux = context.auxiliary(optional)
    scope = event_vars(mandatory)
    return [
        _with_anti(
            alternative, AntiJoin(aux, _all_steps(alternative), relation, scope=scope, condition=condition)
        )
        for alternative in _alternatives(mandatory, context)
    ]


def _peel_filters(pattern: EventPattern) -> tuple[EventPattern, Expr | None]:
    """An OPTIONAL group's own FILTERs, which SPARQL's LeftJoin evaluates over
    both sides."""
    conditions: list[Expr] = []
    while isinstance(pattern, EventFilter):
        conditions.append(pattern.expr)
        pattern = pattern.element
    if not conditions:
        return pattern, None
    return pattern, reduce(lambda x, y: BinaryOp("&&", x, y), conditions)


def event_vars(pattern: EventPattern) -> frozenset[str]:
    """Variables an event pattern may bind (its GPMs')."""
    if isinstance(pattern, GraphPatternEvent):
        return pattern_vars(pattern.pattern)
    return frozenset().union(*(event_vars(child) for child in event_children(pattern)))


def _then(a: Alternative, b: Alternative) -> Alternative:
    """a SEQ b: b's steps follow, each starting after a's last step ends."""
    offset = len(a.steps)
    last = frozenset((offset - 1,))
    return Alternative(
        steps=a.steps + b.steps,
        after=a.after + tuple(last | _shift(s, offset) for s in b.after),
        equal=a.equal + tuple((_shift(x, offset), _shift(y, offset)) for x, y in b.equal),
        filters=a.filters + tuple(replace(f, steps=_shift(f.steps, offset)) for f in b.filters),
        anti=a.anti
        + tuple(replace(j, steps=_shift(j.steps, offset), later=_shift(j.later, offset)) for j in b.anti),
    )


def _shift(steps: frozenset[int], offset: int) -> frozenset[int]:
    return frozenset(s + offset for s in steps)


def _shuffles(a: Alternative, b: Alternative) -> Iterator[Alternative]:
    for merged, _, _ in _shuffles_with_sides(a, b):
        yield merged


def _shuffles_with_sides(a: Alternative, b: Alternative) -> Iterator[tuple[Alternative, set[int], set[int]]]:
    """Every interleaving of a's and b's steps keeping each side's order,
    with steps of both sides possibly merged into one timestamp; yields the
    merged alternative and the new step indices of each side."""
    for plan in _interleavings(len(a.steps), len(b.steps)):
        place_a: list[int] = []
        place_b: list[int] = []
        steps: list[frozenset[str]] = []
        for index, (take_a, take_b) in enumerate(plan):
            names: frozenset[str] = frozenset()
            if take_a:
                place_a.append(index)
                names |= a.steps[len(place_a) - 1]
            if take_b:
                place_b.append(index)
                names |= b.steps[len(place_b) - 1]
            steps.append(names)
        after: list[frozenset[int]] = [frozenset()] * len(plan)
        for old, new in enumerate(place_a):
            after[new] |= _remap(a.after[old], place_a)
        for old, new in enumerate(place_b):
            after[new] |= _remap(b.after[old], place_b)
        merged = Alternative(
            steps=tuple(steps),
            after=tuple(after),
            equal=_remap_pairs(a.equal, place_a) + _remap_pairs(b.equal, place_b),
            filters=_remap_filters(a.filters, place_a) + _remap_filters(b.filters, place_b),
            anti=_remap_anti(a.anti, place_a) + _remap_anti(b.anti, place_b),
        )
        yield merged, set(place_a), set(place_b)


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


def _remap(steps: frozenset[int], places: list[int]) -> frozenset[int]:
    return frozenset(places[s] for s in steps)


def _remap_pairs(
    pairs: tuple[tuple[frozenset[int], frozenset[int]], ...], places: list[int]
) -> tuple[tuple[frozenset[int], frozenset[int]], ...]:
    return tuple((_remap(x, places), _remap(y, places)) for x, y in pairs)


def _remap_filters(filters: tuple[IntervalFilter, ...], places: list[int]) -> tuple[IntervalFilter, ...]:
    return tuple(replace(f, steps=_remap(f.steps, places)) for f in filters)


def _remap_anti(anti: tuple[AntiJoin, ...], places: list[int]) -> tuple[AntiJoin, ...]:
    return tuple(replace(j, steps=_remap(j.steps, places), later=_remap(j.later, places)) for j in anti)


def _with_filter(a: Alternative, expr: Expr, scope: frozenset[str]) -> Alternative:
    return replace(a, filters=(*a.filters, IntervalFilter(_all_steps(a), expr, scope)))


# --------------------------------------------------------------------------- alternatives -> automaton


@dataclass
class _Node:
    atom: Atom
    spec: IntervalSpec
    accepting: bool
    label: str
    children: list[int] = field(default_factory=list)


def compile_interval_automaton(
    pattern: EventPattern,
    gpm_index: Mapping[str, int],
    residuals: tuple[tuple[ResidualFilter, ...], ...],
    *,
    within: float | None = None,
    policy: ConsumptionPolicy = ConsumptionPolicy.UNRESTRICTED,
) -> Automaton:
    """One automaton for all alternatives: a trie, so that alternatives
    sharing their first steps share the states (and the runs) for them."""
    main, auxiliaries = flatten(pattern)
    nodes: list[_Node] = []
    memo: dict[tuple[object, ...], int] = {}
    roots: list[int] = []
    for alternative in [*main, *(a for group in auxiliaries for a in group)]:
        parent: int | None = None
        last = len(alternative.steps) - 1
        for index, leaves in enumerate(alternative.steps):
            node = _node(alternative, index, leaves, gpm_index, final=index == last)
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


def _node(
    alternative: Alternative, index: int, leaves: frozenset[str], gpm_index: Mapping[str, int], *, final: bool
) -> _Node:
    atoms = [GpmAtom(gpm_index[name]) for name in sorted(leaves, key=gpm_index.__getitem__)]
    atom: Atom = atoms[0] if len(atoms) == 1 else ConjunctionAtom(tuple(atoms))
    spec = IntervalSpec(
        step=index,
        after=alternative.after[index],
        equal=tuple(pair for pair in alternative.equal if max(pair[0] | pair[1]) == index),
        filters=tuple(f for f in alternative.filters if max(f.steps) == index),
        anti=alternative.anti if final else (),
        records=alternative.aux if final else None,
        auxiliary=alternative.aux is not None,
    )
    label = "+".join(sorted(leaves)) + ("" if alternative.aux is None else f" (aux {alternative.aux})")
    return _Node(atom, spec, final, label)


# --------------------------------------------------------------------------- window pushing

_DURATION = re.compile(
    r"^(-)?P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$"
)


def duration_bound(pattern: EventPattern) -> float | None:
    """The window implied by a top-level `getDURATION() < "P30D"` (or <=) FILTER
    conjunct (EP-SPARQL §5): runs older than that can never match, so they are
    pruned and memory stays bounded on an unbounded stream."""
    bounds: list[float] = []
    node = pattern
    while isinstance(node, EventFilter):
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


def _bound(expr: Expr) -> float | None:
    if not isinstance(expr, BinaryOp) or expr.op not in ("<", "<="):
        return None
    call, limit = expr.left, expr.right
    if not (
        isinstance(call, FunctionCall) and call.name == IRI(DURATION_FUNCTION) and isinstance(limit, Literal)
    ):
        return None
    match = _DURATION.match(limit.lexical)
    if match is None or match.group(1):
        return None  # years and months have no fixed length; negative bounds match nothing anyway
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups()[1:])
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds
