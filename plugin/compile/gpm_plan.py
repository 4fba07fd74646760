"""GPM expression -> the queries the GPM stage runs (SPAseq Defs. 7 and 15, §7.2.1).

A GPM's group pattern has three kinds of parts:

- the event part, matched against each event graph: one SPARQL query per
  batch of events, `SELECT ?event ... WHERE { GRAPH ?event { P } }`;
- the background part, the top-level `GRAPH <kb> {...}` blocks: evaluated
  against the knowledge base once per KB version and hash-joined with the
  event solutions (Def. 15; §8.2 shows why not per event);
- residual FILTERs that read variables bound by other GPMs (stateful
  predicates) or by both parts: evaluated by the NFA on candidate transitions.

When moving the background part out would change the group's meaning (it is
nested in OPTIONAL/UNION, or an OPTIONAL/MINUS/BIND observes its variables),
the whole GPM runs as one query over a batch store that also holds copies of
the referenced KB graphs.

When the event part is a basic graph pattern with FILTERs over its own variables, `GpmPlan.simple`
holds it (rsep.plugin.compile.simple_gpm): the GPM stage then matches it in Python against each
event's triples instead of running `event_query`, with the same rows.

Under an entailment regime (rsep.plugin.compile.entailment) a GPM may also hold
lookups: tables over the knowledge base, evaluated once per KB version and
hash-joined one after the other after the background part; the variables the
rewrite introduced are then dropped (`hidden`) and the rows made distinct.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from rsep.plugin.algebra.analysis import (
    certain_vars,
    expr_contains,
    expr_vars,
    graph_names,
    map_expr,
    mentioned_vars,
    pattern_vars,
    service_blocks,
)
from rsep.plugin.algebra.events import GraphPatternEvent, SourcePosition
from rsep.plugin.algebra.groups import map_group, map_in_graph
from rsep.plugin.algebra.serialize import to_sparql
from rsep.plugin.algebra.sparql import (
    BGP,
    Aggregate,
    BinaryOp,
    Bind,
    Exists,
    Expr,
    Filter,
    FunctionCall,
    GraphGraphPattern,
    GroupCondition,
    GroupPattern,
    InlineData,
    Literal,
    MinusPattern,
    Node,
    OptionalPattern,
    Projection,
    SelectQuery,
    SubSelect,
    UnionPattern,
    Var,
)
from rsep.plugin.compile.entailment import BackgroundLookup, is_blank_node_var, is_hidden
from rsep.plugin.compile.nfa_compiler import CompileError
from rsep.plugin.compile.simple_gpm import SimpleGpm, simple_gpm
from rsep.plugin.nfa.automaton import Atom, ResidualFilter

EVENT_VAR = "__rsep_event"
EVENT_GRAPH_PREFIX = "urn:rsep:event:"
_ORDER_SENSITIVE = (OptionalPattern, MinusPattern, Bind, SubSelect)


@dataclass(frozen=True, slots=True)
class Lookup:
    """A table joined into a GPM's rows: `query` runs over the knowledge base once per version,
    its solutions are hash-joined on `keys` (an entailment regime's schema closure)."""

    query: str
    keys: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GpmPlan:
    """What the GPM stage runs for one GPM."""

    index: int
    name: str
    streams: tuple[str, ...]
    event_query: str
    event_vars: tuple[str, ...]
    kb_query: str | None
    kb_vars: tuple[str, ...]
    join_vars: tuple[str, ...]
    kb_graphs_in_batch: tuple[str, ...]
    residuals: tuple[ResidualFilter, ...]
    variables: frozenset[str]
    certain: frozenset[str]
    lookups: tuple[Lookup, ...] = ()
    hidden: tuple[str, ...] = ()
    """Variables dropped from the rows after the joins (then made distinct)."""
    needs: tuple[tuple[Atom, ...], ...] | None = None
    """None: matched against every event. Otherwise a lazy conjunction operand, matched only at
    the timestamps where, for one of these conjunctions, every atom has rows
    (rsep.plugin.compile.lazy)."""
    position: SourcePosition | None = field(default=None, compare=False)
    """Where the GPM is defined, for errors found after planning (`rsep.plugin.store.prepare`)."""
    simple: SimpleGpm | None = None
    """The event query's pattern when the GPM stage may match it in Python instead of running
    `event_query` (rsep.plugin.compile.simple_gpm); None: Oxigraph runs it."""


def plan_gpm(index: int, gpm: GraphPatternEvent, outer: frozenset[str] = frozenset()) -> GpmPlan:
    """The GPM's queries. `outer`: the variables the query's other GPMs bind, which a FILTER
    [NOT] EXISTS pattern reads from the match (SPARQL's substitution) rather than binds itself."""
    elements = gpm.pattern.elements
    lookups = [e for e in elements if isinstance(e, BackgroundLookup)]
    kb_blocks = [e for e in elements if isinstance(e, GraphGraphPattern)]
    filters = split_conjuncts([e for e in elements if isinstance(e, Filter)])
    rest = [e for e in elements if not isinstance(e, (GraphGraphPattern, Filter, BackgroundLookup))]
    nested = frozenset().union(*(graph_names(e) for e in rest), *(graph_names(f) for f in filters))
    if None in nested or any(isinstance(b.name, Var) for b in kb_blocks):
        raise CompileError(
            f"GPM {gpm.name}: GRAPH ?variable is not supported inside a GPM; name the knowledge-base graph",
            gpm.position,
        )
    if service_blocks(gpm.pattern):
        raise CompileError(
            f"GPM {gpm.name}: SERVICE is not supported inside a GPM: GPMs are matched batch by batch "
            "(on Spark executors too), where a remote call would make matches depend on the network; "
            "load that data into the knowledge base and read it with GRAPH <kb> {...}",
            gpm.position,
        )
    map_in_graph(gpm.pattern, lambda e: _check_subselect(gpm, e))
    hidden = frozenset(n for n in pattern_vars(gpm.pattern) if is_hidden(n))
    late = pattern_vars(GroupPattern(tuple(lookups))) - hidden  # bound by lookups, after the query
    outer = outer | pattern_vars(gpm.pattern)
    graphs = nested | _block_names(kb_blocks)
    if nested or not _separable(rest, kb_blocks):
        return _combined_plan(index, gpm, [*rest, *kb_blocks], filters, graphs, lookups, hidden, outer)
    event_group = GroupPattern(tuple(rest))
    kb_group = GroupPattern(tuple(kb_blocks))
    event_vars, event_certain = pattern_vars(event_group), certain_vars(event_group)
    kb_vars, kb_certain = pattern_vars(kb_group), certain_vars(kb_group)
    event_filters, kb_filters, residuals = [], [], []
    for flt in filters:
        used = _read(flt, outer)
        if used <= event_vars and used & (kb_vars | late) <= event_certain:
            event_filters.append(flt)
        elif expr_contains(flt.expr, Exists):  # its pattern is matched in the event graph: one query
            return _combined_plan(index, gpm, [*rest, *kb_blocks], filters, graphs, lookups, hidden, outer)
        elif kb_blocks and used <= kb_vars and used & (event_vars | late) <= kb_certain:
            kb_filters.append(flt)
        else:
            residuals.append(_residual(flt))
    planned = tuple(_lookup(b, event_certain | kb_certain) for b in lookups)
    event_vars_sorted = _projected(event_vars, hidden, planned)
    kb_query = None
    if kb_blocks:
        kb_query = to_sparql(_select(sorted(kb_vars), GroupPattern((*kb_blocks, *kb_filters))))
    return GpmPlan(
        index=index,
        name=gpm.name,
        streams=gpm.streams,
        event_query=to_sparql(
            _event_select(event_vars_sorted, (*rest, *event_filters), distinct=bool(hidden))
        ),
        event_vars=event_vars_sorted,
        kb_query=kb_query,
        kb_vars=tuple(sorted(kb_vars)),
        join_vars=tuple(sorted(event_certain & kb_certain)),
        kb_graphs_in_batch=(),
        residuals=tuple(residuals),
        variables=pattern_vars(gpm.pattern) - hidden,
        certain=certain_vars(gpm.pattern) - hidden,
        lookups=planned,
        hidden=tuple(sorted(hidden)),
        position=gpm.position,
        simple=None
        if hidden
        else simple_gpm(tuple(rest), tuple(f.expr for f in event_filters), event_vars_sorted),
    )


def _combined_plan(
    index: int,
    gpm: GraphPatternEvent,
    parts: list[Node],
    filters: list[Filter],
    graphs: frozenset[str | None],
    lookups: list[BackgroundLookup],
    hidden: frozenset[str],
    outer: frozenset[str],
) -> GpmPlan:
    """Everything in one query over a batch store holding the KB graphs too."""
    group = GroupPattern(tuple(parts))
    own, own_certain = pattern_vars(group), certain_vars(group)
    late = pattern_vars(GroupPattern(tuple(lookups))) - hidden
    local = [f for f in filters if _local(_read(f, outer), own, own_certain, late)]
    for flt in filters:
        if flt not in local and expr_contains(flt.expr, Exists):
            used = _read(flt, outer)
            raise _exists_outside(gpm, (used - own) or (used & late))
    residuals = tuple(_residual(f) for f in filters if f not in local)
    planned = tuple(_lookup(b, own_certain) for b in lookups)
    names = _projected(own, hidden, planned)
    restrict = Filter(
        FunctionCall("STRSTARTS", (FunctionCall("STR", (Var(EVENT_VAR),)), Literal(EVENT_GRAPH_PREFIX)))
    )
    query = _event_select(names, (*parts, *local), extra=(restrict,), distinct=bool(hidden))
    return GpmPlan(
        index=index,
        name=gpm.name,
        streams=gpm.streams,
        event_query=to_sparql(query),
        event_vars=names,
        kb_query=None,
        kb_vars=(),
        join_vars=(),
        kb_graphs_in_batch=tuple(sorted(g for g in graphs if g is not None)),
        residuals=residuals,
        variables=pattern_vars(gpm.pattern) - hidden,
        certain=certain_vars(gpm.pattern) - hidden,
        lookups=planned,
        hidden=tuple(sorted(hidden)),
        position=gpm.position,
    )


def _read(flt: Filter, outer: frozenset[str]) -> frozenset[str]:
    """The variables a FILTER reads from the solutions. A variable of an EXISTS pattern is read
    only if something outside binds it (`outer`: the query's GPMs), as SPARQL substitutes the
    solution into the pattern (§18.6, substitute); the others, an entailment rewrite's hidden
    ones too, are the pattern's own."""
    found: set[str] = set()

    def visit(node: Expr) -> Expr | None:
        if isinstance(node, Exists):
            found.update(mentioned_vars(node.pattern) & outer)
            return node
        if isinstance(node, Var):
            found.add(node.name)
        return None

    map_expr(flt.expr, visit)
    return frozenset(n for n in found if not is_hidden(n))


def _exists_outside(gpm: GraphPatternEvent, names: frozenset[str]) -> CompileError:
    """A FILTER [NOT] EXISTS that the GPM's own query cannot evaluate: the NFA, which checks
    filters over several GPMs' variables, compares solution mappings and has no event graph."""
    listed = ", ".join("?" + n for n in sorted(names))
    return CompileError(
        f"GPM {gpm.name}: a FILTER with EXISTS or NOT EXISTS reads {listed}, which this GPM's own "
        "query does not bind: the EXISTS pattern is matched in the event graph by that query, so it "
        "can read only that query's variables (to test another GPM's value, bind the value in this "
        "GPM and compare it in a FILTER without EXISTS)"
    )


def _local(used: frozenset[str], own: frozenset[str], certain: frozenset[str], late: frozenset[str]) -> bool:
    """Can a FILTER run in the GPM's own query (not reading what lookups bind afterwards)?"""
    return used <= own and used & late <= certain


def _projected(names: frozenset[str], hidden: frozenset[str], lookups: tuple[Lookup, ...]) -> tuple[str, ...]:
    """What the event query returns: the hidden variables only where a lookup joins on them or
    they stand for a blank node (the rows are made distinct over the visible variables and the
    blank nodes after the joins anyway, so the query may be DISTINCT)."""
    keys = {key for lookup in lookups for key in lookup.keys}
    return tuple(sorted(n for n in names if n not in hidden or n in keys or is_blank_node_var(n)))


def _lookup(block: BackgroundLookup, bound: frozenset[str]) -> Lookup:
    """A lookup joins on the variables it binds and the rows always have by then."""
    keys = tuple(sorted(certain_vars(block) & bound))
    if not keys:
        raise CompileError("a knowledge-base lookup shares no variable with the event pattern")
    names = sorted(pattern_vars(block))
    return Lookup(to_sparql(_select(names, GroupPattern(block.elements))), keys)


def _separable(rest: list[Node], kb_blocks: list[GraphGraphPattern]) -> bool:
    """Joining the KB part afterwards is only equivalent if no order-sensitive
    element observes a KB variable that the event part's joins don't fix."""
    if not kb_blocks:
        return True
    kb_vars = pattern_vars(GroupPattern(tuple(kb_blocks)))
    joins = [e for e in rest if isinstance(e, (BGP, GroupPattern, UnionPattern, InlineData))]
    fixed = certain_vars(GroupPattern(tuple(joins)))
    return all(mentioned_vars(e) & kb_vars <= fixed for e in rest if isinstance(e, _ORDER_SENSITIVE))


def _block_names(blocks: list[GraphGraphPattern]) -> frozenset[str | None]:
    return frozenset().union(*(graph_names(b) for b in blocks))


def _residual(flt: Filter) -> ResidualFilter:
    return ResidualFilter(flt.expr, expr_vars(flt.expr))


def _select(names: list[str] | tuple[str, ...], where: GroupPattern, distinct: bool = False) -> SelectQuery:
    projection = tuple(Projection(Var(n)) for n in names) or None
    return SelectQuery(projection=projection, where=where, distinct=distinct)


def _event_select(
    names: tuple[str, ...], parts: tuple[Node, ...], extra: tuple[Node, ...] = (), distinct: bool = False
) -> SelectQuery:
    inner = map_group(GroupPattern(parts), _in_event_graph)
    where = GroupPattern((GraphGraphPattern(Var(EVENT_VAR), inner), *extra))
    return _select((EVENT_VAR, *names), where, distinct)


def _in_event_graph(element: Node) -> Node | None:
    """The GPM's pattern as Oxigraph (0.5) must be given it to match it in each event graph, as
    SPARQL's `GRAPH ?e { P }` defines it (§18.5, one evaluation per graph):

    - a sub-select is written with the graph inside it: `GRAPH ?e { { SELECT V WHERE { P } GROUP
      BY G } }` as `{ SELECT ?e V WHERE { GRAPH ?e { P } } GROUP BY ?e G }`, the same solutions
      (Oxigraph evaluates a sub-select nested in `GRAPH ?e` against the union of the graphs,
      without binding ?e);
    - a group whose first element does not bind ?e starts with `GRAPH ?e {}` (`_bound_first`)."""
    if type(element) is GroupPattern:
        return _bound_first(GroupPattern(tuple(map_in_graph(e, _in_event_graph) for e in element.elements)))
    if not isinstance(element, SubSelect):
        return None
    query, event = element.query, Var(EVENT_VAR)
    where = GroupPattern((GraphGraphPattern(event, map_group(query.where, _in_event_graph)),))
    projection = None if query.projection is None else (Projection(event), *query.projection)
    modifiers = query.modifiers
    if modifiers.group_by:
        modifiers = replace(modifiers, group_by=(GroupCondition(event), *modifiers.group_by))
    return SubSelect(replace(query, projection=projection, where=where, modifiers=modifiers))


def _bound_first(group: GroupPattern) -> GroupPattern:
    """The group, starting with `GRAPH ?e {}` (the graph being matched, in SPARQL's terms) unless
    its first element binds ?e. Oxigraph (0.5) evaluates what does not read the graph (VALUES,
    BIND) once for all graphs, and an OPTIONAL, MINUS or [NOT] EXISTS after it with ?e unbound:
    `GRAPH ?e { VALUES ?x { :a } }` has one solution without ?e, not one per graph, and `GRAPH ?e
    { VALUES ?x { :a } OPTIONAL { ?x :p ?o } }` loses the graphs where the OPTIONAL finds nothing.
    Bound first, ?e makes each of them per graph; a group that starts with a triple pattern, the
    usual case, is left as it is."""
    first = next((e for e in group.elements if not isinstance(e, Filter)), None)  # FILTERs apply last
    if _binds_graph(first):
        return group
    return GroupPattern((GraphGraphPattern(Var(EVENT_VAR), GroupPattern(())), *group.elements))


def _binds_graph(element: Node | None) -> bool:
    """Does every solution of `element`, matched in `GRAPH ?e`, bind ?e? (Its groups have been
    through `_bound_first`, its sub-selects through `_in_event_graph`, which projects ?e.)"""
    if isinstance(element, BGP):
        return bool(element.triples)
    if isinstance(element, GraphGraphPattern):
        return element.name == Var(EVENT_VAR)
    if type(element) is GroupPattern:
        return bool(element.elements) and _binds_graph(element.elements[0])
    if isinstance(element, UnionPattern):
        return all(_binds_graph(branch) for branch in element.branches)
    return isinstance(element, SubSelect)


def _check_subselect(gpm: GraphPatternEvent, element: Node) -> None:
    """What `_in_event_graph` cannot move into a sub-select: a LIMIT or OFFSET (per event graph,
    not over the batch) and aggregates without GROUP BY (one group per event graph, even an
    event graph without solutions)."""
    if not isinstance(element, SubSelect):
        return
    query = element.query
    if query.modifiers.limit is not None or query.modifiers.offset is not None:
        reason = "LIMIT or OFFSET"
    elif not query.modifiers.group_by and (query.modifiers.having or _aggregates(query.projection or ())):
        reason = "aggregates without GROUP BY"
    else:
        return
    raise CompileError(
        f"GPM {gpm.name}: a sub-select with {reason} is not supported inside a GPM: GPMs are matched "
        "batch by batch, and the sub-select would have to be evaluated per event graph",
        gpm.position,
    )


def _aggregates(projection: tuple[Projection, ...]) -> bool:
    return any(item.expr is not None and expr_contains(item.expr, Aggregate) for item in projection)


def split_conjuncts(filters: list[Filter]) -> list[Filter]:
    """FILTER(a && b) is FILTER(a) FILTER(b): each conjunct can then run where
    its variables are bound (the cheap local parts inside Oxigraph)."""
    out: list[Filter] = []
    pending: list[Expr] = [f.expr for f in reversed(filters)]
    while pending:
        expr = pending.pop()
        if isinstance(expr, BinaryOp) and expr.op == "&&":
            pending.extend((expr.right, expr.left))
        else:
            out.append(Filter(expr))
    return out
