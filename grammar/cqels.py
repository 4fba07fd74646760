"""CQELS-QL and CQELS-CEP: grammar/cqels.lark's transformer to the event algebra.

Each stream graph pattern `STREAM <s> [window] {P}` (CQELS-QL) or window
block `WINDOW :w {P}` over `FROM NAMED WINDOW :w ON <s> [window]`
(CQELS-CEP §3.1; or written inline, §3.1's WinSpec `WINDOW :w ON <s> [window] {P}`,
which is the same declaration and block) becomes a WindowElement in place, matched against that one
window (RSEP-QL's `WINDOW w P`, §3.3); everything outside them reads the
static data. The dialect reports on every new input (content change,
RSEP-QL §3.4).

A query with SEQ is a CQELS-CEP query Q = (V, P, D, EC) (§3.2): its top-level
window blocks and SEQ clauses over windows are the event clauses EC, the rest
of WHERE is P over the static data D, and [[Q, t]] = JOIN([[EC, t]], [[P, t]]_D)
(§4.3, (1)). The WHERE becomes `MatchElement(E)` followed by P, E being the one
event clause or their EventJoin(intersect=True) (CQELS-CEP's JOIN, (2)):

- `WINDOW :w {P}` -> GraphPatternEvent on :w (matched per event, (16));
- `WINDOW :w { SEQ({P1}, !{P2}, {P3}) }` -> Sequence of GraphPatternEvents on :w,
  skip-till-any between them, the negated one inside Negation ((9)-(15));
- `SEQ(:w1, !:w2, :w3)` -> Sequence of the windows' own patterns ((3)-(8)).

Element patterns are named P1, P2, ... as the clauses are assembled (SEQ clauses over
windows first, then the other window blocks, each in the order written).

Nested paths (§3.1) become PathNested(step, test); a test that names the node it must
reach, `[q o]`, ends in nSPARQL's self::o (PathSelf).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, cast

from lark import Token
from lark.tree import Meta
from lark.visitors import v_args

from rsep.grammar.csparql import check_window, checked_duration
from rsep.grammar.dialect_spec import DialectSpec
from rsep.grammar.sparql_transformer import QueryParts
from rsep.grammar.window_forms import WindowQueryForms
from rsep.plugin.algebra.events import (
    ConstructForm,
    ConsumptionPolicy,
    CountWindow,
    Dialect,
    EventJoin,
    EventPattern,
    EventQuery,
    GraphPatternEvent,
    LandmarkWindow,
    MatchElement,
    Negation,
    NowWindow,
    ReportPolicy,
    SelectForm,
    SelectionStrategy,
    Sequence,
    SourcePosition,
    StreamDecl,
    TimeWindow,
    Window,
    WindowElement,
)
from rsep.plugin.algebra.nested_paths import PathSelf
from rsep.plugin.algebra.sparql import (
    IRI,
    Bind,
    GroupPattern,
    InlineData,
    MinusPattern,
    Node,
    OptionalPattern,
    Path,
    PathAlternative,
    PathNested,
    PathSequence,
    Prologue,
    Term,
)

CQELS = Dialect(
    "cqels",
    selection=SelectionStrategy.SKIP_TILL_ANY,
    consumption=ConsumptionPolicy.UNRESTRICTED,
    report=ReportPolicy.CONTENT_CHANGE,
    interval_semantics=True,
)


@dataclass(frozen=True, slots=True)
class _NamedWindow:
    name: IRI
    stream: IRI
    window: Window
    meta: Meta


@dataclass(frozen=True, slots=True)
class _Use:
    """A window block as written: the stream (STREAM form) or window name (WINDOW form)."""

    named: bool
    target: IRI
    window: Window | None
    meta: Meta


@dataclass(frozen=True, slots=True)
class _SeqItem:
    negated: bool
    target: GroupPattern | IRI
    meta: Meta


@dataclass(eq=False)
class _EventClause(Node):
    """`SEQ(...)` as written, until the query is assembled (then it is a Sequence)."""

    items: tuple[_SeqItem, ...]
    meta: Meta

    @property
    def over_windows(self) -> bool:
        return isinstance(self.items[0].target, IRI)


@dataclass(frozen=True, slots=True)
class _NodeTest:
    """`[test]` in a path, until it is attached to the step before it."""

    test: Path
    meta: Meta


@dataclass
class _Clauses:
    """Builds a CQELS-CEP query's event clauses (rsep.plugin.algebra.events nodes)."""

    transformer: CqelsTransformer
    names: int = 0
    blocks: dict[str, list[WindowElement]] = field(default_factory=dict)

    def gpm(self, window: str, pattern: GroupPattern, where: object | Meta) -> GraphPatternEvent:
        """Element pattern P<n>, positioned where it is written (its `{`, or its window block)
        for the errors found after parsing (compile_query, Oxigraph's check of its query)."""
        self.names += 1
        position = SourcePosition(*self.transformer.position(where))
        return GraphPatternEvent(f"P{self.names}", (window,), pattern, position)

    def sequence(self, elements: list[EventPattern]) -> Sequence:
        any_ = SelectionStrategy.SKIP_TILL_ANY
        return Sequence(tuple(elements), tuple(any_ for _ in elements[1:]))

    def block(self, block: WindowElement) -> EventPattern:
        """A window block's triple sequence pattern: one graph pattern, or one SEQ of them."""
        assert block.stream is not None
        clauses = [e for e in block.pattern.elements if isinstance(e, _EventClause)]
        if not clauses:
            return self.gpm(block.stream, block.pattern, block)
        clause = clauses[0]
        if len(block.pattern.elements) > 1:
            raise self.transformer.fail(
                "a window block holds one triple sequence pattern: a graph pattern or one SEQ(...)",
                clause.meta,
            )
        if clause.over_windows:
            raise self.transformer.fail(
                "SEQ over window names is an event clause of its own: write it outside window blocks",
                clause.meta,
            )
        elements: list[EventPattern] = []
        for item in clause.items:
            assert isinstance(item.target, GroupPattern)
            gpm = self.gpm(block.stream, item.target, item.meta)
            elements.append(Negation(gpm) if item.negated else gpm)
        return self.sequence(elements)

    def over_windows(self, clause: _EventClause) -> EventPattern:
        elements: list[EventPattern] = []
        for item in clause.items:
            assert isinstance(item.target, IRI)
            found = self.blocks.get(item.target.value, [])
            if len(found) != 1:
                how = "no WINDOW block" if not found else f"{len(found)} WINDOW blocks"
                raise self.transformer.fail(
                    f"SEQ names window <{item.target.value}>, which has {how} at the top level of "
                    "WHERE: write exactly one WINDOW :w { ... } for each window a SEQ names",
                    item.meta,
                )
            element = self.block(found[0])
            elements.append(Negation(element) if item.negated else element)
        return self.sequence(elements)


class CqelsTransformer(WindowQueryForms):
    """One method per rule cqels.lark adds or overrides."""

    def __init__(self, base_iri: str | None = None) -> None:
        super().__init__(base_iri)
        self._uses: list[_Use] = []
        self._inline: list[_NamedWindow] = []
        """Windows declared where they are used, `WINDOW :w ON <s> [window] { ... }`."""
        self._blocks: list[WindowElement] = []
        self._seqs: list[_EventClause] = []

    def range_window(self, children: list[Token]) -> TimeWindow:
        width = checked_duration(self, children[0], "RANGE")
        return TimeWindow(width, checked_duration(self, children[1], "SLIDE") if len(children) > 1 else None)

    def now_window(self, children: list[Any]) -> NowWindow:
        return NowWindow()

    def all_window(self, children: list[Any]) -> LandmarkWindow:
        return LandmarkWindow()

    def count_window(self, children: list[Token]) -> CountWindow:
        return CountWindow(int(children[0]))

    @v_args(meta=True)
    def named_window_clause(self, meta: Meta, children: list[Any]) -> _NamedWindow:
        name, stream, window = (c for c in children if not isinstance(c, Token))
        check_window(self, window, meta)
        return _NamedWindow(name, stream, window, meta)

    @v_args(meta=True)
    def stream_graph_pattern(self, meta: Meta, children: list[Any]) -> WindowElement:
        stream, window, pattern = children
        check_window(self, window, meta)
        self._uses.append(_Use(False, stream, window, meta))
        return self._element(stream, pattern, meta)

    @v_args(meta=True)
    def window_graph_pattern(self, meta: Meta, children: list[Any]) -> WindowElement:
        name, *source, pattern = children
        if source:  # WINDOW :w ON <s> [window] {...}: FROM NAMED WINDOW :w ON <s> [window]
            stream, window = source[0]
            check_window(self, window, meta)
            self._inline.append(_NamedWindow(name, stream, window, meta))
        self._uses.append(_Use(True, name, None, meta))
        return self._element(name, pattern, meta)

    def window_source(self, children: list[Any]) -> tuple[IRI, Window]:
        stream, window = children
        return stream, window

    # ------------------------------------------------------------------ CQELS-CEP SEQ

    @v_args(meta=True)
    def seq_item(self, meta: Meta, children: list[Any]) -> _SeqItem:
        return _SeqItem(len(children) == 2, children[-1], meta)

    @v_args(meta=True)
    def event_clause(self, meta: Meta, children: list[_SeqItem]) -> _EventClause:
        """SEQ(...) with at most one negated element (§3.2), all graph patterns (a triple sequence
        pattern) or all window names (an event clause)."""
        if sum(item.negated for item in children) > 1:
            second = [item for item in children if item.negated][1]
            raise self.fail("a SEQ has at most one negated element (CQELS-CEP §3.2)", second.meta)
        kinds = {isinstance(item.target, IRI) for item in children}
        if len(kinds) > 1:
            raise self.fail(
                "a SEQ sequences either graph patterns {...} (inside a window block) or window names",
                meta,
            )
        if all(item.negated for item in children[1:]) and children[0].negated:
            raise self.fail("a SEQ needs a positive element", meta)
        clause = _EventClause(tuple(children), meta)
        self._seqs.append(clause)
        positive = [item.target for item in children if not item.negated]
        scope = set().union(*(self.scope(t) for t in positive if isinstance(t, GroupPattern)))
        self.set_scope(clause, scope)
        return clause

    # ------------------------------------------------------------------ nested paths

    def steps(self, children: list[Any]) -> Path:
        """[90] PathSequence with node tests: `a/[t]/b` is `a[t]/b`, a test constrains the node
        the step before it reached."""
        path: list[Path] = []
        for child in children:
            if isinstance(child, _NodeTest):
                if not path:
                    raise self.fail(
                        "a nested test [...] follows a path step: write p/[test] or p[test]", child.meta
                    )
                path[-1] = PathNested(path[-1], child.test)
            else:
                path.append(child)
        return path[0] if len(path) == 1 else PathSequence(tuple(path))

    def inner_alternative(self, children: list[Path]) -> Path:
        return children[0] if len(children) == 1 else PathAlternative(tuple(children))

    def tested_step(self, children: list[Any]) -> Path:
        """`elt[t1][t2]`: the node reached by elt passes t1 and t2."""
        step: Path = children[0]
        for test in children[1:]:
            step = PathNested(step, test.test)
        return step

    @v_args(meta=True)
    def node_test(self, meta: Meta, children: list[Any]) -> _NodeTest:
        """`[q]` or `[q o]`: the node has a q path (to o): nSPARQL `[q]` / `[q/self::o]`."""
        test: Path = children[0]
        if len(children) == 2:
            node: Term = children[1]
            test = PathSequence((test, cast(Path, PathSelf(node))))
        return _NodeTest(test, meta)

    def _element(self, target: IRI, pattern: GroupPattern, meta: Meta) -> WindowElement:
        node = WindowElement(target.value, pattern, SourcePosition(*self.position(meta)))
        self.remember(node, *self.position(meta))
        self._blocks.append(node)
        self.set_scope(node, self.scope(pattern))
        return node

    # ------------------------------------------------------------------ query forms

    def finish_query(self, form: Any, prologue: Prologue, values: InlineData | None) -> Any:
        if values is not None:
            raise self.fail("a trailing VALUES clause does not apply to a CQELS query", values)
        return replace(form, prologue=prologue)

    def _query(self, form: SelectForm | ConstructForm, parts: QueryParts, meta: Meta) -> EventQuery:
        if not self._uses:
            raise self.fail(
                "a CQELS query matches at least one STREAM <iri> [window] { ... } or WINDOW :w { ... }",
                meta,
            )
        assert parts.where is not None
        named = [e for e in parts.extras if isinstance(e, _NamedWindow)] + self._inline
        where = parts.where
        if self._seqs:
            where = self._event_clauses(where)
        return EventQuery(
            dialect=CQELS,
            form=form,
            streams=self._streams(named),
            where=where,
            static_graphs=tuple(d.graph.value for d in parts.dataset if not d.named),
            modifiers=parts.modifiers,
        )

    def _event_clauses(self, where: GroupPattern) -> GroupPattern:
        """A CQELS-CEP WHERE: `MatchElement(E)` then P (§4.3 (1)-(2)); see the module docstring."""
        top = where.elements
        placed = {id(e) for e in top} | {
            id(inner) for e in top if isinstance(e, WindowElement) for inner in e.pattern.elements
        }
        blocks = [b for b in self._blocks if id(b) not in placed]
        seqs = [c for c in self._seqs if id(c) not in placed]
        if blocks or seqs:
            raise self.fail(
                "in a query with SEQ, window blocks and SEQ clauses are its event clauses and stand "
                "at the top level of WHERE (CQELS-CEP §3.2: Q = (V, P, D, EC))",
                seqs[0].meta if seqs else self._uses[[id(b) for b in self._blocks].index(id(blocks[0]))].meta,
            )
        builder = _Clauses(self)
        for element in top:
            if isinstance(element, WindowElement):
                assert element.stream is not None
                builder.blocks.setdefault(element.stream, []).append(element)
        sequences = [e for e in top if isinstance(e, _EventClause)]
        for clause in sequences:
            if not clause.over_windows:
                raise self.fail(
                    "a SEQ of graph patterns reads a window: write it inside WINDOW :w { SEQ(...) }",
                    clause.meta,
                )
        clauses: list[EventPattern] = [builder.over_windows(c) for c in sequences]
        named = {item.target.value for c in sequences for item in c.items if isinstance(item.target, IRI)}
        for element in top:
            if isinstance(element, WindowElement) and element.stream not in named:
                clauses.append(builder.block(element))
        pattern = clauses[0] if len(clauses) == 1 else EventJoin(tuple(clauses), intersect=True)
        return GroupPattern(self._in_written_place(top, MatchElement(pattern)))

    def _in_written_place(self, top: tuple[Node, ...], match: MatchElement) -> tuple[Node, ...]:
        """P with the event clauses where they are written: SPARQL's translation of a group
        (§18.2.2.6) joins its elements in order, and only OPTIONAL, MINUS and BIND do not commute
        with a join, so the clauses stand in place of the first one, which is exact when no such
        element stands between two of them; one that does is refused (the clauses are one
        solution set, joined by interval intersection, eq. (2), before they meet P)."""
        at = [i for i, e in enumerate(top) if isinstance(e, (WindowElement, _EventClause))]
        between = [e for e in top[at[0] : at[-1]] if isinstance(e, (OptionalPattern, MinusPattern, Bind))]
        if between:
            later = next(top[i] for i in at if i > top.index(between[0]))
            keyword = type(between[0]).__name__.removesuffix("Pattern").upper()
            raise self.fail(
                f"the event clauses stand on both sides of {keyword}: rsep joins them into one "
                "solution set (CQELS-CEP eq. (2)) that meets P where they are written, so write "
                "them together, before or after it",
                later.meta if isinstance(later, _EventClause) else later,
            )
        rest = [e for e in top if not isinstance(e, (WindowElement, _EventClause))]
        first = sum(1 for e in top[: at[0]] if not isinstance(e, (WindowElement, _EventClause)))
        return (*rest[:first], match, *rest[first:])

    def _streams(self, named: list[_NamedWindow]) -> tuple[StreamDecl, ...]:
        """One StreamDecl per named window (alias = its name) and per stream read with the STREAM
        form (no alias); a stream read through two different windows needs named windows."""
        decls: dict[str, StreamDecl] = {}
        for window in named:
            if window.name.value in decls:
                raise self.fail(f"window <{window.name.value}> is declared twice", window.meta)
            position = SourcePosition(*self.position(window.meta))
            decls[window.name.value] = StreamDecl(
                window.stream.value, window.name.value, window.window, position
            )
        by_stream: dict[str, StreamDecl] = {}
        for use in self._uses:
            if use.named:
                if use.target.value not in decls:
                    known = ", ".join(f"<{name}>" for name in decls) or "none"
                    raise self.fail(
                        f"window <{use.target.value}> is not declared by FROM NAMED WINDOW "
                        f"(declared: {known})",
                        use.meta,
                    )
                continue
            position = SourcePosition(*self.position(use.meta))
            previous = by_stream.setdefault(
                use.target.value, StreamDecl(use.target.value, None, use.window, position)
            )
            if previous.window != use.window:
                raise self.fail(
                    f"stream <{use.target.value}> is read through two different windows; "
                    "name them with FROM NAMED WINDOW :w ON <stream> [...] and use WINDOW :w { ... }",
                    use.meta,
                )
        return (*decls.values(), *by_stream.values())


DIALECT = DialectSpec(
    CQELS,
    "cqels",
    CqelsTransformer,
    not_event_syntax=frozenset(
        {
            # nested paths (CQELS-CEP §3.1, nSPARQL's node tests): paths in the graph, not streams
            "steps",
            "path_step",
            "inner_path",
            "inner_alternative",
            "inner_sequence",
            "inner_step",
            "tested_step",
            "node_test",
            "test_node",
        }
    ),
)
