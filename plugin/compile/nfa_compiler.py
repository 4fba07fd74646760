"""Sequence expression -> NFA_scep automaton (SPAseq §6.2, Appendix C.4).

The algorithm, in the order it runs:

1. Flatten the sequence into elements, each an atom (GPM, `&`, `|`) with a
   modifier (one, `+`, `?`, `!`) and the strategy that connects it to the
   element before it.
2. For every position p (0 = nothing matched yet, i = element i matched),
   collect the elements a run at p may take next: the following element, and
   past every optional or negated element also the one after it. Crossing
   such an element adds it as a guard (it must not occur in the gap), widens
   strict contiguity by one rank (the slot it could have filled), and makes
   the connection as permissive as the most permissive strategy crossed.
3. One state per (position, next element); a Kleene+ element also gets an
   iteration state that loops on itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum

from rsep.plugin.algebra.events import (
    Conjunction,
    Disjunction,
    EventPattern,
    GraphPatternEvent,
    KleenePlus,
    Negation,
    OptionalEvent,
    SelectionStrategy,
    Sequence,
    SourcePosition,
)
from rsep.plugin.errors import InvalidInput
from rsep.plugin.nfa.automaton import (
    Atom,
    Automaton,
    ConjunctionAtom,
    DisjunctionAtom,
    GpmAtom,
    GpmVariables,
    ResidualFilter,
    State,
    format_atom,
)


class CompileError(InvalidInput):
    """A query the compiler rejects, with the reason and, when the query was parsed from text,
    where the construct at fault is written. `str()` is the message alone until `located` names
    the source: then it is `source:line:column: message` (or `source: message`)."""

    def __init__(
        self, message: str, position: SourcePosition | None = None, source: str | None = None
    ) -> None:
        super().__init__(message)
        self.message, self.position, self.source = message, position, source
        if position is not None:
            self.line, self.column = position.line, position.column

    def __str__(self) -> str:
        if self.source is None:
            return self.message
        if self.position is None:
            return f"{self.source}: {self.message}"
        return f"{self.source}:{self.position.line}:{self.position.column}: {self.message}"

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.message, self.position, self.source))

    def at(self, position: SourcePosition | None) -> CompileError:
        """This error, positioned at `position` unless it already has a position."""
        if self.position is not None or position is None:
            return self
        return type(self)(self.message, position, self.source)

    def located(self, source: str) -> CompileError:
        """This error, in the query text named `source` (a file name, `query`)."""
        return type(self)(self.message, self.position, source)


class Modifier(Enum):
    ONE = ""
    PLUS = "+"
    OPTIONAL = "?"
    NEGATED = "!"


@dataclass(frozen=True, slots=True)
class Element:
    atom: Atom
    modifier: Modifier
    strategy: SelectionStrategy  # connecting it to the previous element
    iteration: SelectionStrategy  # between Kleene+ occurrences
    label: str
    variables: frozenset[str]
    written: str = ""
    """The element as the query writes it (GPM names), for error messages."""
    position: SourcePosition | None = None


@dataclass(frozen=True, slots=True)
class _Target:
    element: int
    strategy: SelectionStrategy
    max_gap: int | None
    guards: tuple[Atom, ...]


def compile_automaton(
    pattern: EventPattern,
    gpm_index: Mapping[str, int],
    gpm_vars: Callable[[GraphPatternEvent], frozenset[str]],
    residuals: tuple[tuple[ResidualFilter, ...], ...],
    *,
    key: frozenset[str] = frozenset(),
    within: float | None = None,
    gpm_certain: Callable[[GraphPatternEvent], frozenset[str]] | None = None,
) -> Automaton:
    """Compile a SPAseq-shaped event pattern. `gpm_index` maps GPM names to
    their index in the plan; `gpm_vars` gives the variables a GPM may bind
    (`gpm_certain`, those it binds in every solution); `key` are the
    partition-key variables (never rebound by Kleene+)."""
    elements = _flatten(pattern, gpm_index, gpm_vars)
    _check_ends(elements)
    _check_negations(elements)
    builder = _Builder(elements, key)
    initial = tuple(builder.state_for(0, target) for target in builder.targets_from(0))
    variables = _variables(pattern, gpm_index, gpm_vars, gpm_certain)
    return Automaton(tuple(builder.states), initial, residuals, within, variables=variables)


def _variables(
    pattern: EventPattern,
    gpm_index: Mapping[str, int],
    gpm_vars: Callable[[GraphPatternEvent], frozenset[str]],
    gpm_certain: Callable[[GraphPatternEvent], frozenset[str]] | None,
) -> tuple[GpmVariables, ...]:
    """Per GPM index, the variables its rows bind (`Automaton.variables`)."""
    found: dict[int, GpmVariables] = {}
    pending: list[EventPattern] = [pattern]
    while pending:
        node = pending.pop()
        if isinstance(node, GraphPatternEvent):
            certain = gpm_certain(node) if gpm_certain is not None else frozenset()
            found[gpm_index[node.name]] = GpmVariables(gpm_vars(node), certain)
        elif isinstance(node, Sequence):
            pending.extend(node.elements)
        elif isinstance(node, (Conjunction, Disjunction)):
            pending.extend(node.operands)
        elif isinstance(node, (KleenePlus, OptionalEvent, Negation)):
            pending.append(node.element)
    if sorted(found) != list(range(len(found))):
        return ()
    return tuple(found[i] for i in range(len(found)))


def _flatten(
    pattern: EventPattern,
    gpm_index: Mapping[str, int],
    gpm_vars: Callable[[GraphPatternEvent], frozenset[str]],
) -> list[Element]:
    if isinstance(pattern, Sequence):
        items, strategies = pattern.elements, (SelectionStrategy.STRICT, *pattern.strategies)
    else:
        items, strategies = (pattern,), (SelectionStrategy.STRICT,)
    return [
        _element(item, strategy, gpm_index, gpm_vars)
        for item, strategy in zip(items, strategies, strict=True)
    ]


def _element(
    item: EventPattern,
    strategy: SelectionStrategy,
    gpm_index: Mapping[str, int],
    gpm_vars: Callable[[GraphPatternEvent], frozenset[str]],
) -> Element:
    modifier, iteration, inner = Modifier.ONE, SelectionStrategy.STRICT, item
    position = None
    if isinstance(item, KleenePlus):
        modifier, iteration, inner = Modifier.PLUS, item.iteration, item.element
    elif isinstance(item, OptionalEvent):
        modifier, inner, position = Modifier.OPTIONAL, item.element, item.position
    elif isinstance(item, Negation):
        modifier, inner, position = Modifier.NEGATED, item.element, item.position
    atom, variables = _atom(inner, gpm_index, gpm_vars)
    label = format_atom(atom) + modifier.value
    return Element(
        atom, modifier, strategy, iteration, label, variables, _written(inner) + modifier.value, position
    )


def _written(item: EventPattern) -> str:
    """An element as the query writes it: GPM names, not the plan's indices."""
    if isinstance(item, GraphPatternEvent):
        return item.name
    if isinstance(item, (Conjunction, Disjunction)):
        joiner = " & " if isinstance(item, Conjunction) else " | "
        return "(" + joiner.join(map(_written, item.operands)) + ")"
    return type(item).__name__


def _atom(
    item: EventPattern,
    gpm_index: Mapping[str, int],
    gpm_vars: Callable[[GraphPatternEvent], frozenset[str]],
) -> tuple[Atom, frozenset[str]]:
    if isinstance(item, GraphPatternEvent):
        return GpmAtom(gpm_index[item.name]), gpm_vars(item)
    if isinstance(item, (Conjunction, Disjunction)):
        parts = [_atom(op, gpm_index, gpm_vars) for op in item.operands]
        atoms = tuple(atom for atom, _ in parts)
        variables = frozenset().union(*(v for _, v in parts))
        node: Atom = ConjunctionAtom(atoms) if isinstance(item, Conjunction) else DisjunctionAtom(atoms)
        return node, variables
    raise CompileError(
        f"{type(item).__name__} cannot appear inside a conjunction, a disjunction or a modifier; "
        "only GPMs and nested '&'/'|' groups can"
    )


def _check_ends(elements: list[Element]) -> None:
    absent = (Modifier.OPTIONAL, Modifier.NEGATED)
    first, last = elements[0], elements[-1]
    if first.modifier in absent:
        raise CompileError(
            f"the sequence cannot start with '{first.written}': an optional or negated element "
            "needs an element before it to delimit the gap it talks about",
            first.position,
        )
    if last.modifier in absent:
        raise CompileError(
            f"the sequence cannot end with '{last.written}': an optional or negated element "
            "needs an element after it to delimit the gap it talks about",
            last.position,
        )


def _check_negations(elements: list[Element]) -> None:
    """A negated element is matched against the events of the gap with what the elements before
    it bound (SPAseq App. B; Algorithm 9 tests Gpm(Ge, Pθ, H) over the run's history H, which does
    not hold the next element's bindings). A variable it shares only with later elements is
    therefore free when the gap is checked, and any such event would block the match whatever
    the later element binds: refused, since the query surely means the correlation."""
    for index, element in enumerate(elements):
        if element.modifier is not Modifier.NEGATED:
            continue
        before = frozenset().union(
            *(e.variables for e in elements[:index] if e.modifier is not Modifier.NEGATED)
        )
        after = frozenset().union(*(e.variables for e in elements[index + 1 :]))
        late = sorted((element.variables & after) - before)
        if late:
            names = ", ".join(f"?{name}" for name in late)
            raise CompileError(
                f"'{element.written}' shares {names} only with elements after it: a negated element "
                "is checked against the events of the gap with what the elements before it bound "
                f"(SPAseq App. B, Algorithm 9), so {names} would be free there and any such event "
                "would block the match, whatever the later element binds; bind it in an element "
                "before the negation, or rename it in the negated GPM if it is not meant to be shared",
                element.position,
            )


class _Builder:
    """Creates states on demand, one per (position, target), memoised."""

    def __init__(self, elements: list[Element], key: frozenset[str]) -> None:
        self.elements = elements
        self.key = key
        self.states: list[State] = []
        self._memo: dict[tuple[object, ...], int] = {}

    def targets_from(self, position: int) -> list[_Target]:
        """Elements a run that has matched `position` elements may take next."""
        targets: list[_Target] = []
        strategy: SelectionStrategy | None = None
        gap = 1
        guards: tuple[Atom, ...] = ()
        for index in range(position, len(self.elements)):
            element = self.elements[index]
            strategy = element.strategy if strategy is None else _weaker(strategy, element.strategy)
            if position == 0:
                strategy = SelectionStrategy.SKIP_TILL_ANY  # any event may start a run
            max_gap = gap if strategy is SelectionStrategy.STRICT else None
            if element.modifier is not Modifier.NEGATED:
                targets.append(_Target(index, strategy, max_gap, guards))
            if element.modifier not in (Modifier.OPTIONAL, Modifier.NEGATED):
                break
            gap, guards = gap + 1, (*guards, element.atom)
        return targets

    def state_for(self, position: int, target: _Target, *, iterating: bool = False) -> int:
        memo_key = (target, iterating)
        if memo_key in self._memo:
            return self._memo[memo_key]
        element = self.elements[target.element]
        state_id = len(self.states)
        self._memo[memo_key] = state_id
        self.states.append(self._placeholder(state_id))  # reserve the id before recursing
        after = [self.state_for(target.element + 1, t) for t in self.targets_from(target.element + 1)]
        if element.modifier is Modifier.PLUS:
            after.append(self._iteration_state(target.element))
        label = element.label + (" (again)" if iterating else "")
        self.states[state_id] = State(
            id=state_id,
            label=label,
            element=target.element,
            atom=element.atom,
            strategy=target.strategy,
            max_gap=target.max_gap,
            guards=target.guards,
            rebind=self._rebind(target.element) if iterating else frozenset(),
            after_take=tuple(after),
            accepting=target.element == len(self.elements) - 1,
        )
        return state_id

    def _iteration_state(self, index: int) -> int:
        element = self.elements[index]
        gap = 1 if element.iteration is SelectionStrategy.STRICT else None
        return self.state_for(index, _Target(index, element.iteration, gap, ()), iterating=True)

    def _rebind(self, index: int) -> frozenset[str]:
        """Variables first bound by this Kleene+ element (minus the partition
        key): each occurrence binds them afresh (SPAseq Example 9)."""
        before = frozenset().union(*(e.variables for e in self.elements[:index]))
        return self.elements[index].variables - before - self.key

    @staticmethod
    def _placeholder(state_id: int) -> State:
        return State(state_id, "", -1, GpmAtom(-1), SelectionStrategy.STRICT, 1, (), frozenset(), (), False)


def _weaker(a: SelectionStrategy, b: SelectionStrategy) -> SelectionStrategy:
    return a if a.permissiveness >= b.permissiveness else b
