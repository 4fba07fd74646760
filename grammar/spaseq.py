"""SPAseq: grammar/spaseq.lark's transformer to the event algebra.

A SPAseq query becomes an EventQuery whose WHERE is one MatchElement holding
the sequence expression; each `DEFINE GPM` becomes a GraphPatternEvent on the
stream IRIs its aliases name. Kleene+ contiguity between occurrences follows
Defs. 13-14 (docs/semantics.md): skip-till-next for a leading Kleene+, strict
inside a sequence.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from lark import Token
from lark.tree import Meta
from lark.visitors import v_args

from rsep.grammar.absolute_iris import AbsoluteIris
from rsep.grammar.dialect_spec import DialectSpec
from rsep.grammar.sparql_transformer import QueryParts, StaticSemanticsError
from rsep.plugin.algebra.events import (
    Conjunction,
    ConsumptionPolicy,
    Dialect,
    Disjunction,
    Duration,
    EventPattern,
    EventQuery,
    GraphPatternEvent,
    KleenePlus,
    MatchElement,
    Negation,
    OptionalEvent,
    ReportPolicy,
    SelectForm,
    SelectionStrategy,
    Sequence,
    SourcePosition,
    StreamDecl,
    TimeUnit,
)
from rsep.plugin.algebra.sparql import (
    IRI,
    GroupPattern,
    InlineData,
    Prologue,
    SolutionModifiers,
    Var,
)

SPASEQ = Dialect(
    "spaseq",
    selection=SelectionStrategy.SKIP_TILL_ANY,
    consumption=ConsumptionPolicy.UNRESTRICTED,
    report=ReportPolicy.CONTENT_CHANGE,
    interval_semantics=False,
)

_UNITS = {
    "MILLISECOND": TimeUnit.MILLISECONDS,
    "SECOND": TimeUnit.SECONDS,
    "MINUTE": TimeUnit.MINUTES,
    "HOUR": TimeUnit.HOURS,
    "DAY": TimeUnit.DAYS,
}


@dataclass(frozen=True, slots=True)
class _Partition:
    variables: tuple[Var, ...]
    positions: tuple[SourcePosition, ...]


@dataclass(frozen=True, slots=True)
class _Stream:
    alias: Token
    iri: IRI


@dataclass(frozen=True, slots=True)
class _GpmDefinition:
    name: Token
    streams: tuple[Token, ...]
    pattern: GroupPattern


@dataclass(frozen=True, slots=True)
class _Ref:
    """A GPM name in the SEQ expression, kept with its position until the
    definitions are known."""

    name: Token


@dataclass(frozen=True, slots=True)
class _Alternatives:
    options: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class _Conjuncts:
    operands: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class _Element:
    operand: Any
    modifier: str | None
    position: SourcePosition


@dataclass(frozen=True, slots=True)
class _SeqExpression:
    elements: tuple[_Element, ...]
    operators: tuple[SelectionStrategy, ...]


@dataclass(frozen=True, slots=True)
class _Body:
    sequence: _SeqExpression
    definitions: tuple[_GpmDefinition, ...]


class SpaseqTransformer(AbsoluteIris):
    """One method per rule spaseq.lark adds or overrides."""

    def within_clause(self, children: list[Token]) -> Duration:
        """A positive window (Def. 16's ω; the other dialects refuse zero-width windows too): with
        ω = 0 a match could span no time, so no sequence (`τ' < τ`) would ever match."""
        amount, unit = children
        if float(amount) <= 0:
            raise self.fail(
                f"WITHIN {amount} {unit}: the window must be longer than 0 (a match spans its "
                "first to its last event, and a sequence's events have distinct timestamps)",
                amount,
            )
        return Duration(float(amount), _UNITS[str(unit).upper().rstrip("S")])

    def partition_clause(self, children: list[Var]) -> _Partition:
        return _Partition(tuple(children), tuple(self._source_position(v) for v in children))

    def stream_clause(self, children: list[Any]) -> _Stream:
        alias, iri = children
        return _Stream(alias, iri)

    def gpm_definition(self, children: list[Any]) -> _GpmDefinition:
        name, *streams, pattern = children
        return _GpmDefinition(name, tuple(streams), pattern)

    def gpm_reference(self, children: list[Token]) -> _Ref:
        return _Ref(children[0])

    def seq_conjunction(self, children: list[Any]) -> Any:
        return children[0] if len(children) == 1 else _Conjuncts(tuple(children))

    def seq_alternatives(self, children: list[Any]) -> Any:
        return children[0] if len(children) == 1 else _Alternatives(tuple(children))

    @v_args(meta=True)
    def seq_element(self, meta: Meta, children: list[Any]) -> _Element:
        modifier = str(children[1]) if len(children) > 1 else None
        return _Element(children[0], modifier, self._source_position(meta))

    def seq_expression(self, children: list[Any]) -> _SeqExpression:
        elements = tuple(c for c in children if isinstance(c, _Element))
        operators = tuple(SelectionStrategy(str(c)) for c in children if isinstance(c, Token))
        return _SeqExpression(elements, operators)

    def seq_clause(self, children: list[_SeqExpression]) -> _SeqExpression:
        return children[0]

    def spaseq_where(self, children: list[Any]) -> _Body:
        sequence, *definitions = children
        return _Body(sequence, tuple(definitions))

    @v_args(meta=True)
    def select_query(self, meta: Meta, children: list[Any]) -> EventQuery:
        parts = QueryParts.collect(children)
        if parts.modifiers != SolutionModifiers():
            raise StaticSemanticsError(
                f"{_modifier_name(parts.modifiers)} does not apply to a SPAseq query: its matches are "
                "reported one by one as they are detected (GROUP BY, HAVING, ORDER BY, LIMIT and OFFSET "
                "are not SPAseq clauses)",
                *self.position(parts.modifiers),
            )
        if parts.dataset:
            raise self._error(
                "FROM and FROM NAMED do not apply to a SPAseq query: use GRAPH <kb> in a GPM", meta
            )
        body = next(e for e in parts.extras if isinstance(e, _Body))
        streams = self._streams([e for e in parts.extras if isinstance(e, _Stream)], meta)
        gpms = self._gpms(body.definitions, streams)
        within = [e for e in parts.extras if isinstance(e, Duration)]
        partitions = [e for e in parts.extras if isinstance(e, _Partition)]
        clause = parts.select
        assert clause is not None
        return EventQuery(
            dialect=SPASEQ,
            form=SelectForm(clause.projection, clause.distinct),
            streams=tuple(StreamDecl(iri.value, alias) for alias, iri in streams.items()),
            where=GroupPattern((MatchElement(self._pattern(body.sequence, gpms)),)),
            within=within[-1] if within else None,
            partition_by=tuple(v for e in partitions for v in e.variables),
            partition_positions=tuple(p for e in partitions for p in e.positions),
        )

    @v_args(meta=True)
    def solution_modifier(self, meta: Meta, children: list[Any]) -> SolutionModifiers:
        modifiers = super().solution_modifier(children)
        if not meta.empty:
            self.remember(modifiers, *self.position(meta))
        return modifiers

    def finish_query(self, form: Any, prologue: Prologue, values: InlineData | None) -> Any:
        if values is not None:
            raise StaticSemanticsError(
                "a trailing VALUES clause does not apply to a SPAseq query", *self.position(values)
            )
        return replace(form, prologue=prologue)

    @v_args(meta=True)
    def ask_query(self, meta: Meta, children: list[Any]) -> None:
        raise self._other_form("ASK", meta)

    @v_args(meta=True)
    def construct_query(self, meta: Meta, children: list[Any]) -> None:
        raise self._other_form("CONSTRUCT", meta)

    @v_args(meta=True)
    def describe_query(self, meta: Meta, children: list[Any]) -> None:
        raise self._other_form("DESCRIBE", meta)

    def _other_form(self, form: str, meta: Meta) -> StaticSemanticsError:
        return self._error(
            f"{form} is not a SPAseq query form: a SPAseq query is a SELECT query (SPAseq Def. 4), whose "
            "matches are reported as they are detected",
            meta,
        )

    # ------------------------------------------------------------------ resolution

    def _streams(self, declared: list[_Stream], query: Meta) -> dict[str, IRI]:
        streams: dict[str, IRI] = {}
        for stream in declared:
            if str(stream.alias) in streams:
                raise self._error(f"stream {stream.alias} is declared twice", stream.alias)
            streams[str(stream.alias)] = stream.iri
        if not streams:
            raise self._error(
                "a SPAseq query reads at least one stream: declare it after SELECT with "
                "FROM STREAM name <iri>",
                query,
            )
        return streams

    def _gpms(
        self, definitions: tuple[_GpmDefinition, ...], streams: dict[str, IRI]
    ) -> dict[str, GraphPatternEvent]:
        gpms: dict[str, GraphPatternEvent] = {}
        for definition in definitions:
            name = str(definition.name)
            if name in gpms:
                raise self._error(f"GPM {name} is defined twice", definition.name)
            iris = []
            for alias in definition.streams:
                if str(alias) not in streams:
                    known = ", ".join(streams)
                    raise self._error(f"unknown stream {alias} (the query declares {known})", alias)
                iris.append(streams[str(alias)].value)
            where = self._source_position(definition.name)
            gpms[name] = GraphPatternEvent(name, tuple(iris), definition.pattern, where)
        return gpms

    def _pattern(self, expression: _SeqExpression, gpms: dict[str, GraphPatternEvent]) -> EventPattern:
        elements = [
            self._element(element, gpms, leading=index == 0)
            for index, element in enumerate(expression.elements)
        ]
        if len(elements) == 1:
            return elements[0]
        return Sequence(tuple(elements), expression.operators)

    def _element(
        self, element: _Element, gpms: dict[str, GraphPatternEvent], *, leading: bool
    ) -> EventPattern:
        inner = self._operand(element.operand, gpms)
        if element.modifier == "+":
            iteration = SelectionStrategy.SKIP_TILL_NEXT if leading else SelectionStrategy.STRICT
            return KleenePlus(inner, iteration)
        if element.modifier == "?":
            return OptionalEvent(inner, element.position)
        if element.modifier == "!":
            return Negation(inner, element.position)
        return inner

    def _operand(self, operand: Any, gpms: dict[str, GraphPatternEvent]) -> EventPattern:
        if isinstance(operand, _Ref):
            gpm = gpms.get(str(operand.name))
            if gpm is None:
                defined = ", ".join(gpms) or "none"
                raise self._error(
                    f"SEQ uses GPM {operand.name}, which is not defined (defined: {defined})", operand.name
                )
            return gpm
        if isinstance(operand, _Conjuncts):
            return Conjunction(tuple(self._operand(o, gpms) for o in operand.operands))
        assert isinstance(operand, _Alternatives)
        return Disjunction(tuple(self._operand(o, gpms) for o in operand.options))

    def _source_position(self, where: object | Token | Meta) -> SourcePosition:
        return SourcePosition(*self.position(where))

    def _error(self, message: str, where: Token | Meta) -> StaticSemanticsError:
        line, column = self.position(where)
        return StaticSemanticsError(message, line, column)


def _modifier_name(modifiers: SolutionModifiers) -> str:
    """The first solution modifier written (their order is fixed: SPARQL 1.1 [18])."""
    if modifiers.group_by:
        return "GROUP BY"
    if modifiers.having:
        return "HAVING"
    if modifiers.order_by:
        return "ORDER BY"
    return "LIMIT or OFFSET"


DIALECT = DialectSpec(
    SPASEQ,
    "spaseq",
    SpaseqTransformer,
    not_event_syntax=frozenset(
        {
            "NAME",  # a stream or GPM name: it stands after STREAM, GPM, ON or inside SEQ (...)
        }
    ),
)
