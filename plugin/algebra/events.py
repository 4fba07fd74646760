"""The event algebra every dialect maps onto (RSEP-QL as the model).

RSEP-QL (Dell'Aglio et al., EKAW 2016) evaluates *event patterns* over windows
of RDF graph streams into *event mappings* (µ, t_start, t_end), and embeds them
in SPARQL through `MATCH E`. The nodes below are that model, widened with the
operators of the concrete languages:

- SPAseq (Gillani et al.): GPM expressions, sequence with selection strategies
  (Defs. 10-12), Kleene+ (Defs. 13-14), conjunction and disjunction
  (Defs. 8-9), negation and optional (Appendix B), WITHIN (Def. 16).
- EP-SPARQL (Anicic et al., WWW 2011 §4): SEQ, EQUALS, OPTIONALSEQ,
  EQUALSOPTIONAL over interval-stamped solutions, consumption policies.
- C-SPARQL and CQELS: windows over streams (RSEP-QL window functions) queried
  with plain SPARQL; CQELS-CEP's SEQ with one negated element.

Dialect differences are data on these nodes (strategies, policies, window
parameters), never branches in the runtime.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Union

from rsep.plugin.algebra.sparql import (
    Expr,
    GroupPattern,
    InlineData,
    Node,
    Projection,
    Prologue,
    SolutionModifiers,
    TriplePattern,
    Var,
)
from rsep.plugin.algebra.sparql import SourcePosition as SourcePosition  # SPARQL nodes carry it too
from rsep.plugin.vocabulary import RSEP

DURATION_FUNCTION = RSEP + "duration"
START_TIME_FUNCTION = RSEP + "startTime"
END_TIME_FUNCTION = RSEP + "endTime"
TIME_FUNCTIONS = frozenset({DURATION_FUNCTION, START_TIME_FUNCTION, END_TIME_FUNCTION})
TIMESTAMP_FUNCTION = RSEP + "timestamp"
"""C-SPARQL's timestamp(?v [, <stream>]): when the most recent stream triple binding ?v arrived."""
"""Extension functions over the interval of the pattern a FILTER is placed in:
EP-SPARQL's getDURATION(), getSTARTTIME(), getENDTIME() (§4.1)."""


TICKS_PER_SECOND = 1_000_000
"""Windows count time in integer microseconds, so that their arithmetic is exact
(rsep.plugin.windows.window_functions)."""


# --------------------------------------------------------------------------- policies


class SelectionStrategy(Enum):
    """How the next element of a sequence is selected (SPAseq §4.2.2, §5.3)."""

    STRICT = ","
    """Strict contiguity (Def. 12): no event of any stream of the streamset lies
    strictly between the two selected events."""
    SKIP_TILL_NEXT = ";"
    """Skip-till-next (Def. 11): the first later event that matches compatibly."""
    SKIP_TILL_ANY = ":"
    """Skip-till-any (Def. 10): every later event that matches compatibly."""

    @property
    def permissiveness(self) -> int:
        """STRICT < SKIP_TILL_NEXT < SKIP_TILL_ANY: used to combine strategies
        around an element that may be absent (negation, optional)."""
        return {SelectionStrategy.STRICT: 0, SelectionStrategy.SKIP_TILL_NEXT: 1}.get(self, 2)


class ConsumptionPolicy(Enum):
    """Which inputs a detected match uses up (RSEP-QL §4.3-4.4, EP-SPARQL/ETALIS)."""

    UNRESTRICTED = "unrestricted"
    """Every input may take part in any number of matches."""
    CHRONOLOGICAL = "chronological"
    """Earliest compatible inputs are selected, then consumed."""
    RECENT = "recent"
    """Latest compatible inputs are selected, then consumed."""


class ReportPolicy(Enum):
    """When results are reported (RSEP-QL §3.4, the set ET of evaluation times)."""

    CONTENT_CHANGE = "content-change"
    """On every new input (SPAseq, EP-SPARQL, CQELS)."""
    WINDOW_CLOSE = "window-close"
    """When a window closes (C-SPARQL)."""


class TimeUnit(Enum):
    MILLISECONDS = 0.001
    SECONDS = 1.0
    MINUTES = 60.0
    HOURS = 3600.0
    DAYS = 86400.0


@dataclass(frozen=True, slots=True)
class Duration(Node):
    """A duration as written (`10 SECONDS`, `5m`), kept with its unit for printing."""

    amount: float
    unit: TimeUnit = TimeUnit.SECONDS

    @property
    def seconds(self) -> float:
        return self.amount * self.unit.value

    @property
    def ticks(self) -> int:
        """The duration in the windows' ticks (whole microseconds): 0 for one shorter than half a
        tick, which no window can use (the grammars refuse it where it is written)."""
        return round(self.seconds * TICKS_PER_SECOND)


# --------------------------------------------------------------------------- streams and windows


@dataclass(frozen=True, slots=True)
class TimeWindow(Node):
    """RSEP-QL time-based window W^τ(α, β): width α, slide β (tumbling when
    β = α). C-SPARQL `[RANGE α STEP β]`/`[RANGE α TUMBLING]`, CQELS `[RANGE α]`."""

    width: Duration
    slide: Duration | None = None


@dataclass(frozen=True, slots=True)
class CountWindow(Node):
    """The last n stream items (C-SPARQL `[RANGE TRIPLES n]`, CQELS `[TRIPLES n]`)."""

    size: int


@dataclass(frozen=True, slots=True)
class LandmarkWindow(Node):
    """Everything since the query started (RSEP-QL W^λ; CQELS `[ALL]`)."""


@dataclass(frozen=True, slots=True)
class NowWindow(Node):
    """Only the items at the current instant (CQELS `[NOW]`)."""


Window = Union[TimeWindow, CountWindow, LandmarkWindow, NowWindow]


@dataclass(frozen=True, slots=True)
class StreamDecl(Node):
    """A stream the query reads: its IRI, the name the query uses for it (SPAseq
    `FROM STREAM S1 <iri>`, CQELS `FROM NAMED WINDOW :w ON <iri>`), and an
    optional window."""

    iri: str
    alias: str | None = None
    window: Window | None = None
    position: SourcePosition | None = field(default=None, compare=False)
    """Where the stream (or its window) is declared, for the plan's errors about it."""


# --------------------------------------------------------------------------- event patterns


@dataclass(frozen=True, slots=True)
class GraphPatternEvent(Node):
    """A graph pattern matched against one event (SPAseq GPM expression (u, P),
    Def. 7; RSEP-QL basic event pattern `EVENT w P`).

    `pattern` may contain `GRAPH <kb> {...}` blocks over the background
    knowledge base (SPAseq Def. 15) and FILTERs over variables bound by earlier
    elements (stateful predicates, SPAseq §7.2.1)."""

    name: str
    streams: tuple[str, ...]
    pattern: GroupPattern
    position: SourcePosition | None = field(default=None, compare=False)
    """Where the GPM is defined (its name in `DEFINE GPM`), for compile errors."""


@dataclass(frozen=True, slots=True)
class Sequence(Node):
    """`e1 s1 e2 s2 ... en`: each element after a strictly later one, selected
    by the strategy between them (SPAseq Defs. 10-12; EP-SPARQL SEQ = SeqJoin
    over intervals, t_end(left) < t_start(right))."""

    elements: tuple[EventPattern, ...]
    strategies: tuple[SelectionStrategy, ...]

    def __post_init__(self) -> None:
        if len(self.elements) < 1 or len(self.strategies) != len(self.elements) - 1:
            raise ValueError("a sequence has n >= 1 elements and n - 1 strategies between them")


@dataclass(frozen=True, slots=True)
class KleenePlus(Node):
    """One or more occurrences (SPAseq Defs. 13-14). `iteration` is the strategy
    between consecutive occurrences. Variables first bound inside the element
    are rebound per occurrence; the match shows the last occurrence's values."""

    element: EventPattern
    iteration: SelectionStrategy = SelectionStrategy.STRICT


@dataclass(frozen=True, slots=True)
class Conjunction(Node):
    """All operands at the same time instant, joined (SPAseq Def. 8, `&`)."""

    operands: tuple[EventPattern, ...]


@dataclass(frozen=True, slots=True)
class Disjunction(Node):
    """Any operand (SPAseq Def. 9 `|`; EP-SPARQL UNION of event patterns)."""

    operands: tuple[EventPattern, ...]


@dataclass(frozen=True, slots=True)
class Negation(Node):
    """No compatible occurrence of `element` between its neighbours in a
    sequence (SPAseq Appendix B `!`; CQELS-CEP's negated SEQ element)."""

    element: EventPattern
    position: SourcePosition | None = field(default=None, compare=False)
    """Where the element is written in its sequence, for compile errors."""


@dataclass(frozen=True, slots=True)
class OptionalEvent(Node):
    """Zero or one occurrence inside a sequence (SPAseq Appendix B `?`)."""

    element: EventPattern
    position: SourcePosition | None = field(default=None, compare=False)
    """Where the element is written in its sequence, for compile errors."""


@dataclass(frozen=True, slots=True)
class Equals(Node):
    """Both operands over exactly the same interval (EP-SPARQL EQUALS, EqJoin)."""

    left: EventPattern
    right: EventPattern


@dataclass(frozen=True, slots=True)
class OptionalSequence(Node):
    """`left OPTIONALSEQ right` (EP-SPARQL SeqRightJoin)."""

    left: EventPattern
    right: EventPattern


@dataclass(frozen=True, slots=True)
class EqualsOptional(Node):
    """`left EQUALSOPTIONAL right` (EP-SPARQL EqLeftJoin)."""

    left: EventPattern
    right: EventPattern


@dataclass(frozen=True, slots=True)
class EventLeftJoin(Node):
    """`left OPTIONAL { right }` over events (EP-SPARQL LeftJoin): right joins
    when it ends before left does (t'_end < t_end), else left stands alone."""

    left: EventPattern
    right: EventPattern


@dataclass(frozen=True, slots=True)
class EventJoin(Node):
    """Operands in any temporal order, interval = their hull (EP-SPARQL AND
    and BGPs over triple occurrences; CQELS-CEP JOIN with `intersect`)."""

    operands: tuple[EventPattern, ...]
    intersect: bool = False


@dataclass(frozen=True, slots=True)
class EventFilter(Node):
    """A FILTER over event mappings, which may call the temporal functions
    (EP-SPARQL getDURATION/getSTARTTIME/getENDTIME, C-SPARQL timestamp)."""

    element: EventPattern
    expr: Expr


@dataclass(frozen=True, slots=True)
class EventBind(Node):
    """`BIND(expr AS ?var)` over event mappings (SPARQL 1.1 Extend, §18.2.2.5 and §18.5): every
    solution of `element` (its group's patterns written before the BIND) with ?var bound to the
    value of `expr`, or left unbound when `expr` raises an error; the interval stays `element`'s,
    which getDURATION() and friends read. Patterns after the BIND join on ?var. `leading`: the
    BIND is written before any triple pattern of its group, after that many VALUES and BINDs,
    which are the `leading` EventValues and EventBind nodes directly below it and all that `expr`
    reads (SPARQL extends what precedes it there; the patterns after it join); None: `expr` reads
    `element`."""

    element: EventPattern
    expr: Expr
    var: Var
    leading: int | None = None


@dataclass(frozen=True, slots=True)
class EventValues(Node):
    """Inline data (`VALUES`) joined with `element` (SPARQL 1.1 Join(P, ToMultiSet(data)),
    §18.2.2.6 and §18.2.4.3): a static table, which adds no triple occurrence, so the interval
    stays `element`'s. UNDEF in a row leaves its variable unbound (compatible with anything)."""

    element: EventPattern
    data: InlineData


@dataclass(frozen=True, slots=True)
class First(Node):
    """The earliest event mapping of `element` (RSEP-QL FIRST)."""

    element: EventPattern


@dataclass(frozen=True, slots=True)
class Last(Node):
    """The latest event mapping of `element` (RSEP-QL LAST)."""

    element: EventPattern


EventPattern = Union[
    GraphPatternEvent,
    Sequence,
    KleenePlus,
    Conjunction,
    Disjunction,
    Negation,
    OptionalEvent,
    Equals,
    OptionalSequence,
    EqualsOptional,
    EventLeftJoin,
    EventJoin,
    EventFilter,
    EventBind,
    EventValues,
    First,
    Last,
]


def event_children(pattern: EventPattern) -> tuple[EventPattern, ...]:
    """The direct sub-patterns of an event pattern, for generic walks."""
    if isinstance(pattern, Sequence):
        return pattern.elements
    if isinstance(pattern, (Conjunction, Disjunction, EventJoin)):
        return pattern.operands
    if isinstance(pattern, (Equals, OptionalSequence, EqualsOptional, EventLeftJoin)):
        return (pattern.left, pattern.right)
    if isinstance(
        pattern, (KleenePlus, Negation, OptionalEvent, EventFilter, EventBind, EventValues, First, Last)
    ):
        return (pattern.element,)
    return ()


# --------------------------------------------------------------------------- embedding in SPARQL


@dataclass(frozen=True, slots=True)
class MatchElement(Node):
    """`MATCH E` (RSEP-QL §3.3): an event pattern used as a group element; its
    event mappings lose their time annotations and join with the rest."""

    pattern: EventPattern


@dataclass(frozen=True, slots=True)
class WindowElement(Node):
    """A graph pattern over the current content of a stream window (CQELS
    `WINDOW :w {...}` / `STREAM <s> [RANGE ..] {...}`, C-SPARQL's merged
    windows when `stream` is None)."""

    stream: str | None
    pattern: GroupPattern
    position: SourcePosition | None = field(default=None, compare=False)
    """Where the block is written (None for C-SPARQL's merged windows), for the plan's errors."""


# --------------------------------------------------------------------------- queries


@dataclass(frozen=True, slots=True)
class SelectForm(Node):
    """SELECT form; `projection` None means `SELECT *`."""

    projection: tuple[Projection, ...] | None
    distinct: bool = False


@dataclass(frozen=True, slots=True)
class ConstructForm(Node):
    """CONSTRUCT form: each match yields the instantiated template as a new
    graph event (EP-SPARQL rules, C-SPARQL REGISTER STREAM)."""

    template: tuple[TriplePattern, ...]


QueryForm = Union[SelectForm, ConstructForm]


class RegistrationKind(Enum):
    """What a registered C-SPARQL query yields (EDBT 2010 §2: `REGISTER QUERY|STREAM name AS`)."""

    QUERY = "query"
    """The answer at each evaluation: the solution bag (SELECT, ASK) or the constructed graph."""
    STREAM = "stream"
    """A stream of results, each stamped with its evaluation time t' (RSEP-QL §3.4). A CONSTRUCT's
    results are graph events of the stream `Registration.stream` that other queries read with
    `FROM STREAM`; a SELECT's are solution mappings, which form no RDF stream (docs/semantics.md)."""


@dataclass(frozen=True, slots=True)
class Registration(Node):
    """`REGISTER QUERY|STREAM name [COMPUTED EVERY d] AS` before a C-SPARQL query."""

    kind: RegistrationKind
    name: str
    """As written: a bare name, or an IRI written `<...>` (resolved against the base)."""
    stream: str | None = None
    """The IRI of the stream the name denotes: the name read as an IRI reference and resolved
    against the query's base (`rsep run --base`, default the query file's address); None when
    it stays relative (no base)."""


@dataclass(frozen=True, slots=True)
class Dialect(Node):
    """A dialect's defaults: data, not branches in the runtime. The values of each dialect are
    defined with its grammar (`DIALECT.defaults` in rsep.grammar.<dialect>)."""

    name: str
    selection: SelectionStrategy = SelectionStrategy.SKIP_TILL_ANY
    consumption: ConsumptionPolicy = ConsumptionPolicy.UNRESTRICTED
    report: ReportPolicy = ReportPolicy.CONTENT_CHANGE
    interval_semantics: bool = False


@dataclass(frozen=True, slots=True)
class EventQuery(Node):
    """A continuous query: RSEP-QL's (SE, SDS, ET, QF) with the dialect's
    policies. `where` holds the pattern; for SPAseq it is one MatchElement."""

    dialect: Dialect
    form: QueryForm
    streams: tuple[StreamDecl, ...]
    where: GroupPattern
    within: Duration | None = None
    consumption: ConsumptionPolicy = ConsumptionPolicy.UNRESTRICTED
    partition_by: tuple[Var, ...] = ()
    partition_positions: tuple[SourcePosition, ...] = field(default=(), compare=False)
    """Where each `partition_by` variable is written (empty when not parsed from text)."""
    static_graphs: tuple[str, ...] = ()
    modifiers: SolutionModifiers = SolutionModifiers()
    registration: Registration | None = None
    prologue: Prologue = field(default_factory=Prologue)
    entailment: str | None = None
    """Entailment regime the patterns match under (`rdfs`; None: simple, the graphs as stored).
    A query option, not syntax: `rsep run --entailment`, `POST /queries?entailment=`
    (rsep.plugin.compile.entailment)."""
    solution_projection: tuple[Projection, ...] | None = None
    """A sub-SELECT's projection between the pattern and the form (EP-SPARQL rule (5):
    `CONSTRUCT {...} WHERE { SELECT ((?n + 1) AS ?m) WHERE { P } }`): every solution of `where`
    is projected, expressions computed, before the form sees it. None: no sub-SELECT."""
    position: SourcePosition | None = field(default=None, compare=False)
    """Where the query form (SELECT, CONSTRUCT, ASK) is written, for errors about the query as a
    whole found after parsing (a window query's SPARQL that Oxigraph refuses); None when unknown."""

    @property
    def name(self) -> str | None:
        """The registered name (C-SPARQL's REGISTER QUERY|STREAM), None for a plain query."""
        return self.registration.name if self.registration is not None else None

    @property
    def produced_stream(self) -> str | None:
        """The stream whose graph events this query's results are: a C-SPARQL
        `REGISTER STREAM <iri> AS CONSTRUCT ...`; None for any other query."""
        registration = self.registration
        if registration is None or registration.kind is not RegistrationKind.STREAM:
            return None
        return registration.stream if isinstance(self.form, ConstructForm) else None

    @property
    def event_pattern(self) -> EventPattern | None:
        """The single top-level MATCH pattern, when the query is pure CEP."""
        elements = self.where.elements
        if len(elements) == 1 and isinstance(elements[0], MatchElement):
            return elements[0].pattern
        return None
