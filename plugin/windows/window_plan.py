"""EventQuery -> WindowPlan: the windows a C-SPARQL or CQELS query reads and the one SPARQL query
Oxigraph runs at each evaluation.

The query is generated from the syntax tree (never by string surgery):

- C-SPARQL merges every window into one graph (EDBT 2010 §3.2): the runtime
  loads the windows' triples into MERGED_GRAPH, which joins the static
  graphs in the query's default graph, and `WindowElement(None, P)` is just P;
- CQELS matches each window block against its own window (RSEP-QL's
  `WINDOW w P`, §4.1): each window is loaded into its own named graph and
  `WindowElement(s, P)` becomes `GRAPH <window graph> { P }`; the static data
  is the default graph;
- timestamp() calls become latestTime() calls (rsep.plugin.windows.timestamp);
- under an entailment regime, window blocks match the entailed windows: each
  triple pattern also reads the window's hidden graph of entailed triples
  (`entailed_graph`, filled by rsep.plugin.store.entailed);
- an ASK (SELECT DISTINCT with an empty projection, as the grammar writes it)
  becomes an ASK query; a CONSTRUCT becomes a SELECT of its template's
  variables, whose solutions the runtime instantiates per evaluation time
  (rsep.plugin.windows.construct: fresh blank nodes per evaluation);
- CQELS-CEP: the event clauses (the top-level `MatchElement`) run on the NFA
  (rsep.plugin.windows.cep) and their solutions enter the query as a VALUES
  block in place of the MatchElement, with their intervals in two hidden
  variables that a plain SELECT also projects; the query text is rebuilt from
  `node` at each evaluation with that evaluation's rows;
- nested paths `p[q]` become paths over materialised node tests in scratch
  graphs (rsep.plugin.compile.paths);
- the graphs the store makes for the plan (`internal_graphs`: window graphs,
  their entailed graphs, scratch graphs) are named in the query's dataset, so
  that the query's own GRAPH blocks read them, but a user's `GRAPH ?g { P }`
  becomes `{ GRAPH ?g { P } FILTER (?g NOT IN (<internal graphs>)) }`: ?g
  ranges over the knowledge base's named graphs only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from rsep.plugin.algebra.events import (
    ConstructForm,
    EventQuery,
    MatchElement,
    ReportPolicy,
    SelectForm,
    StreamDecl,
    TimeWindow,
    Window,
    WindowElement,
)
from rsep.plugin.algebra.serialize import to_sparql
from rsep.plugin.algebra.sparql import (
    IRI,
    Aggregate,
    AskQuery,
    Filter,
    GraphGraphPattern,
    GroupPattern,
    In,
    InlineData,
    Node,
    Projection,
    SelectQuery,
    Term,
    Var,
    has_scheme,
)
from rsep.plugin.compile.entailment import entail_window_pattern
from rsep.plugin.compile.nfa_compiler import CompileError
from rsep.plugin.compile.paths import NestedPathError, NestedSite, compile_nested_paths
from rsep.plugin.vocabulary import RSEP
from rsep.plugin.windows.cep import (
    INTERVAL_END,
    INTERVAL_START,
    CepPlan,
    EventClauseError,
    Solution,
    plan_event_clauses,
    values_rows,
)
from rsep.plugin.windows.construct import construct_select
from rsep.plugin.windows.timestamp import (
    TimestampFunctionError,
    check_no_timestamp,
    rewrite_timestamps,
    uses_timestamp,
)
from rsep.plugin.windows.tree import rebuild, walk

MERGED_GRAPH = RSEP + "window"
"""The graph that holds the merged windows of a C-SPARQL query."""
WINDOW_GRAPH = RSEP + "window-"
"""Prefix of the graph that holds window i of a CQELS query."""
STATIC_GRAPH = RSEP + "static"
"""The merge of several static FROM graphs, when a query names more than one."""
ENTAILED_SUFFIX = "-entailed"


class WindowPlanError(CompileError):
    """A window query the runtime cannot run: the message says why, the position (when known)
    where the construct at fault is written."""


class Form(Enum):
    SELECT = "select"
    CONSTRUCT = "construct"
    ASK = "ask"


@dataclass(frozen=True, slots=True)
class WindowSpec:
    """One window of the query: the stream it reads, the window function, the graph that holds
    its content, and the name WindowElements use for it (the alias, else the stream IRI)."""

    stream: str
    window: Window
    graph: str
    name: str


@dataclass(frozen=True, slots=True)
class WindowPlan:
    query: EventQuery
    windows: tuple[WindowSpec, ...]
    sparql: str
    form: Form
    merged: bool
    timestamps: bool
    node: Node | None = None
    """The query node `sparql` prints (with an empty VALUES block for the event clauses)."""
    cep: CepPlan | None = None
    """CQELS-CEP's event clauses, run on the NFA at each evaluation."""
    intervals: bool = False
    """Do solutions carry their interval (INTERVAL_START/END)? A CQELS-CEP SELECT without
    aggregates does."""
    nested: tuple[NestedSite, ...] = ()

    @property
    def warnings(self) -> tuple[str, ...]:
        """The compiler's notes: a time-based window whose step is longer than its width never
        shows the items that arrive between two windows (RSEP-QL Def. 3: (k·β − α, k·β])."""
        notes = []
        for spec in self.windows:
            window = spec.window
            if isinstance(window, TimeWindow) and window.slide is not None:
                width, step = window.width.seconds, window.slide.seconds
                if step > width:
                    notes.append(
                        f"the window on <{spec.stream}> steps {step:g} s but is {width:g} s wide: "
                        f"an item arriving in the {step - width:g} s between two windows is never seen"
                    )
        return tuple(notes)

    @property
    def report(self) -> ReportPolicy:
        return self.query.dialect.report

    @property
    def streams(self) -> tuple[str, ...]:
        """The stream IRIs the query reads, each once, in declaration order."""
        return tuple(dict.fromkeys(w.stream for w in self.windows))

    @property
    def static_graphs(self) -> tuple[str, ...]:
        return self.query.static_graphs

    @property
    def internal_graphs(self) -> tuple[str, ...]:
        return internal_graphs(self.windows, self.merged, self.query.entailment, self.nested)

    @property
    def ordered(self) -> bool:
        """ORDER BY fixes the order of an evaluation's solutions; otherwise the runtime sorts them."""
        return bool(self.query.modifiers.order_by)

    @property
    def projection(self) -> tuple[str, ...] | None:
        form = self.query.form
        if isinstance(form, SelectForm) and form.projection is not None:
            return tuple(p.var.name for p in form.projection)
        return None


def is_window_query(query: EventQuery) -> bool:
    """A query whose pattern reads windows (C-SPARQL, CQELS; CQELS-CEP's event clauses read
    windowed streams): the window runtime runs it."""
    return any(isinstance(node, WindowElement) for node in walk(query.where)) or any(
        stream.window is not None for stream in query.streams
    )


def plan_windows(query: EventQuery) -> WindowPlan:
    """The plan of a window query; WindowPlanError says why a query cannot run."""
    _check_absolute(query)
    windows = tuple(_spec(index, decl) for index, decl in enumerate(query.streams))
    merged = _merged(query.where)
    try:
        where = _timestamps(query)
        where, cep = _event_clauses(query, where, windows)
    except (TimestampFunctionError, EventClauseError) as error:
        raise _plan_error(error) from None
    if query.entailment is not None:
        where = _entailed(where, query.entailment, windows, merged)
    where = rebuild(where, lambda node: _window_block(node, windows, merged))
    try:
        compiled, nested = compile_nested_paths(where)
    except NestedPathError as error:
        raise _plan_error(error) from None
    assert isinstance(compiled, GroupPattern)
    where = _outside_internal_graphs(compiled, internal_graphs(windows, merged, query.entailment, nested))
    if len(where.elements) == 1 and isinstance(where.elements[0], GroupPattern):
        where = where.elements[0]
    intervals = cep is not None and isinstance(query.form, SelectForm) and not _aggregated(query)
    kind, node = _query_node(query, where, intervals)
    timestamps = uses_timestamp(query.where)
    return WindowPlan(query, windows, to_sparql(node), kind, merged, timestamps, node, cep, intervals, nested)


def _plan_error(error: ValueError) -> WindowPlanError:
    """The error of a planning step, keeping the position a CompileError carries."""
    if isinstance(error, CompileError):
        return WindowPlanError(error.message, error.position)
    return WindowPlanError(str(error))


def _event_clauses(
    query: EventQuery, where: GroupPattern, windows: tuple[WindowSpec, ...]
) -> tuple[GroupPattern, CepPlan | None]:
    """CQELS-CEP: the top-level MatchElement planned on the NFA, replaced by the VALUES block its
    solutions fill at each evaluation (`values_block`)."""
    matches = [e for e in where.elements if isinstance(e, MatchElement)]
    if len(matches) > 1 or len(matches) != sum(isinstance(n, MatchElement) for n in walk(where)):
        raise EventClauseError("a window query holds its event clauses once, at the top level of WHERE")
    if not matches:
        return where, None
    cep = plan_event_clauses(query, matches[0].pattern, [w.name for w in windows])
    block = values_block(cep, ())
    return GroupPattern(tuple(block if e is matches[0] else e for e in where.elements)), cep


def values_block(cep: CepPlan, rows: tuple[tuple[Term | None, ...], ...]) -> InlineData:
    """The event clauses' solutions as `VALUES (?v ... ?__rsep_start ?__rsep_end) { ... }`."""
    names = (*cep.variables, INTERVAL_START, INTERVAL_END)
    return InlineData(tuple(Var(name) for name in names), rows)


def is_values_block(node: Node) -> bool:
    return isinstance(node, InlineData) and node.vars[-2:] == (Var(INTERVAL_START), Var(INTERVAL_END))


def evaluation_query(plan: WindowPlan, found: Iterable[Solution]) -> str:
    """The plan's SPARQL, with the event clauses' solutions of this evaluation in its VALUES
    block (rebuilt from the syntax tree, then printed)."""
    if plan.cep is None or plan.node is None:
        return plan.sparql
    block = values_block(plan.cep, values_rows(plan.cep.variables, found))
    return to_sparql(rebuild(plan.node, lambda node: block if is_values_block(node) else node))


def _aggregated(query: EventQuery) -> bool:
    """GROUP BY or an aggregate: solutions are groups, which carry no interval."""
    form = query.form
    projection = form.projection if isinstance(form, SelectForm) else None
    found = walk((projection or (), query.modifiers))
    return bool(query.modifiers.group_by) or any(isinstance(node, Aggregate) for node in found)


def _timestamps(query: EventQuery) -> GroupPattern:
    """The WHERE pattern with timestamp() evaluated through latestTime(), which only FILTERs may call."""
    where = rewrite_timestamps(query.where, [s.iri for s in query.streams])
    form = query.form
    if isinstance(form, SelectForm):
        for projection in form.projection or ():
            if projection.expr is not None:
                check_no_timestamp(projection.expr, "SELECT")
    check_no_timestamp(query.modifiers, "GROUP BY, HAVING or ORDER BY")
    check_no_timestamp(where, "BIND or a nested query")
    return where


def entailed_graph(graph: str) -> str:
    """The hidden graph beside a window graph that holds what an entailment regime derives from
    the window and the window does not hold (C-SPARQL: from the merged default graph)."""
    return graph + ENTAILED_SUFFIX


def _entailed(
    where: GroupPattern, regime: str, windows: tuple[WindowSpec, ...], merged: bool
) -> GroupPattern:
    """Window blocks under the regime; static patterns read the knowledge base as stored."""

    def visit(node: Node) -> Node:
        if isinstance(node, WindowElement):
            graph = MERGED_GRAPH if merged else _window_of(node, windows).graph
            return WindowElement(
                node.stream, entail_window_pattern(node.pattern, entailed_graph(graph), regime)
            )
        return node

    try:
        entailed: GroupPattern = rebuild(where, visit)
    except CompileError as error:
        raise _plan_error(error) from None
    return entailed


def internal_graphs(
    windows: tuple[WindowSpec, ...], merged: bool, entailment: str | None, nested: tuple[NestedSite, ...]
) -> tuple[str, ...]:
    """The graphs the window store makes for a plan: results of the plan, not background
    knowledge (rsep.plugin.store.windows)."""
    graphs = [MERGED_GRAPH] if merged else [w.graph for w in windows]
    if entailment is not None:
        graphs += [entailed_graph(g) for g in graphs]
    return (*graphs, STATIC_GRAPH, *(site.graph for site in nested))


def _outside_internal_graphs(where: GroupPattern, graphs: tuple[str, ...]) -> GroupPattern:
    """Every `GRAPH ?g { P }` as `{ GRAPH ?g { P } FILTER (?g NOT IN (graphs)) }` (the plan's own
    GRAPH blocks name their graph)."""
    excluded = tuple(IRI(g) for g in graphs)

    def visit(node: Node) -> Node:
        if isinstance(node, GraphGraphPattern) and isinstance(node.name, Var):
            return GroupPattern((node, Filter(In(node.name, excluded, negated=True))))
        return node

    found: GroupPattern = rebuild(where, visit)
    return found


def _check_absolute(query: EventQuery) -> None:
    """Oxigraph runs the generated query without a base, so every IRI must be absolute. The grammar
    refuses a relative IRI where it is written; this guards queries built without parsing."""
    iris = [node.value for node in walk((query.form, query.where, query.modifiers)) if isinstance(node, IRI)]
    for iri in [*iris, *query.static_graphs, *(s.iri for s in query.streams)]:
        if not has_scheme(iri):
            raise WindowPlanError(f"<{iri}> is a relative IRI: declare a BASE <...> in the query")


def _spec(index: int, decl: StreamDecl) -> WindowSpec:
    window = decl.window
    if window is None:
        raise WindowPlanError(f"stream <{decl.iri}> has no window", decl.position)
    durations = (window.width, window.slide) if isinstance(window, TimeWindow) else ()
    if any(d is not None and d.ticks <= 0 for d in durations):
        raise WindowPlanError(
            f"the window of <{decl.iri}> has a width or slide under 1µs (windows count whole microseconds)",
            decl.position,
        )
    return WindowSpec(decl.iri, window, f"{WINDOW_GRAPH}{index}", decl.alias or decl.iri)


def _merged(where: GroupPattern) -> bool:
    """C-SPARQL's WindowElement(None, P) merges all windows; CQELS names one per block."""
    targets = {node.stream is None for node in walk(where) if isinstance(node, WindowElement)}
    if len(targets) > 1:
        raise WindowPlanError("a query either merges all windows (C-SPARQL) or names one per block (CQELS)")
    return targets == {True}


def _window_block(node: Node, windows: tuple[WindowSpec, ...], merged: bool) -> Node:
    if not isinstance(node, WindowElement):
        return node
    if merged:
        return node.pattern
    return GraphGraphPattern(IRI(_window_of(node, windows).graph), node.pattern)


def _window_of(node: WindowElement, windows: tuple[WindowSpec, ...]) -> WindowSpec:
    matches = [w for w in windows if w.name == node.stream]
    if not matches:
        known = ", ".join(f"<{w.name}>" for w in windows)
        raise WindowPlanError(f"no window is declared for <{node.stream}> (declared: {known})", node.position)
    return matches[0]


def _query_node(query: EventQuery, where: GroupPattern, intervals: bool) -> tuple[Form, Node]:
    form = query.form
    if isinstance(form, ConstructForm):
        return Form.CONSTRUCT, construct_select(form.template, where, query.modifiers)
    if form.projection == ():
        return Form.ASK, AskQuery(where, modifiers=query.modifiers)
    projection = form.projection
    if intervals and projection is not None:  # SELECT * shows them anyway
        projection = (*projection, Projection(Var(INTERVAL_START)), Projection(Var(INTERVAL_END)))
    select = SelectQuery(projection, where, distinct=form.distinct, modifiers=query.modifiers)
    return Form.SELECT, select
