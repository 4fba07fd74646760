"""RDFS entailment for event queries: a rewrite of the syntax tree, applied before planning.

With `entailment=rdfs`, a triple pattern matched against an event graph G matches the triples of
G and those RDFS derives from G with the schema S of the background knowledge base: the
rdfs:subClassOf, rdfs:subPropertyOf, rdfs:domain and rdfs:range triples of the knowledge base's
default graph (RDF 1.1 Semantics §9.2.1, rules rdfs2, rdfs3, rdfs5, rdfs7, rdfs9, rdfs11). The
schema is read from the knowledge base only; docs/semantics.md lists what is not entailed.

Each triple pattern becomes the union of its *witnesses*, the ways a triple can be in the
entailed graph: as stored; through a subproperty (`s ?t o`, ?t rdfs:subPropertyOf+ p); and for
rdf:type, through a subclass (`s a ?t`, ?t rdfs:subClassOf+ C) or the domain or range of a
property used (`s ?t []`, ?t rdfs:subPropertyOf*/rdfs:domain/rdfs:subClassOf* C). A witness has
an event part, matched against the event graph, and a schema part, matched against S, and two
mechanisms evaluate the schema part:

- LOOKUP (the default): the schema parts of one triple pattern become a `BackgroundLookup`, a
  query over the knowledge base that the GPM stage evaluates once per knowledge-base version and
  hash-joins on the witness's hidden (kind, term) variables, as SPAseq Def. 15 joins GRAPH blocks
  (§8.2 shows why not per event). An event pays one more UNION branch per witness in the event
  query and a dict probe per candidate row.
- PATHS: the schema part stays in place as `GRAPH <rsep:schema> { ?t path C }`, and the GPM runs
  per batch over a batch store holding a copy of the schema (SCHEMA_GRAPH). GPMs use it where a
  lookup cannot be moved out of its place (inside OPTIONAL, UNION, MINUS, EXISTS or a sub-select,
  or when a variable the lookup binds is read by an OPTIONAL, MINUS, BIND or an inner FILTER).

bench/bench_entailment.py measures the two on the EP-SPARQL paper's Test 2. The hidden variables
(HIDDEN_PREFIX) are dropped after the joins and, since two witnesses may derive the same triple,
a GPM's solutions per event are then a set over its variables and its blank nodes (GpmPlan.hidden;
a blank node is an existential variable: two witnesses of it are two solutions, as without
entailment).

Window queries (C-SPARQL, CQELS) need no witnesses: the store keeps what RDFS derives from each
window, and is not stored in it, as data in a hidden graph beside it (rsep.plugin.store.entailed,
the schema closed once per knowledge-base version), and `entail_window_pattern` makes each triple
pattern of a window block read both graphs. The two are disjoint, so each triple of the entailed
graph is matched once: SPARQL's solutions over the entailed graph, multiplicities included.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum

from rsep.plugin.algebra.analysis import map_expr, mentioned_vars, triple_vars
from rsep.plugin.algebra.events import (
    Conjunction,
    Disjunction,
    Equals,
    EqualsOptional,
    EventBind,
    EventFilter,
    EventJoin,
    EventLeftJoin,
    EventPattern,
    EventValues,
    First,
    GraphPatternEvent,
    KleenePlus,
    Last,
    Negation,
    OptionalEvent,
    OptionalSequence,
    Sequence,
)
from rsep.plugin.algebra.groups import map_group
from rsep.plugin.algebra.sparql import (
    BGP,
    IRI,
    RDF_TYPE,
    BinaryOp,
    Bind,
    BNode,
    Exists,
    Expr,
    Filter,
    FunctionCall,
    GraphGraphPattern,
    GroupPattern,
    In,
    InlineData,
    Literal,
    MinusPattern,
    Node,
    OptionalPattern,
    PathMod,
    PathModifier,
    PathSequence,
    Projection,
    SelectQuery,
    SubSelect,
    TriplePattern,
    UnaryOp,
    UnionPattern,
    Var,
    VarOrTerm,
)
from rsep.plugin.compile.nfa_compiler import CompileError
from rsep.plugin.vocabulary import RSEP

RDFS = "http://www.w3.org/2000/01/rdf-schema#"
SUBCLASS_OF = RDFS + "subClassOf"
SUBPROPERTY_OF = RDFS + "subPropertyOf"
DOMAIN = RDFS + "domain"
RANGE = RDFS + "range"
SCHEMA_PREDICATES = (SUBCLASS_OF, SUBPROPERTY_OF, DOMAIN, RANGE)
SCHEMA_GRAPH = RSEP + "schema"
"""The schema triples of the knowledge base's default graph, as a named graph of the batch stores
that evaluate PATHS witnesses: the store adapter fills it."""
EXPLICIT = RSEP + "explicit"
"""Marks the witness `as stored` in a lookup's (kind, term) key."""
HIDDEN_PREFIX = "__rsep_e"
"""Variables the rewrite introduces; never in a match."""
BNODE_TAG = "b"
"""Ends the name of a hidden variable that stands for a blank node of the pattern."""
REGIMES = ("rdfs",)


class Mechanism(Enum):
    """Where a witness's schema part is evaluated (module docstring)."""

    LOOKUP = "lookup"
    PATHS = "paths"


@dataclass(frozen=True, slots=True)
class BackgroundLookup(GroupPattern):
    """A group over the knowledge base's default graph, evaluated once per knowledge-base version
    and hash-joined into a GPM's solutions on the variables it shares with them: a table, not a
    part of the event query. Only the GPM planner reads it (rsep.plugin.compile.gpm_plan.Lookup)."""


def check_regime(regime: str) -> None:
    if regime not in REGIMES:
        raise CompileError(f"unknown entailment regime {regime!r} (known: {', '.join(REGIMES)})")


def is_hidden(name: str) -> bool:
    return name.startswith(HIDDEN_PREFIX)


def entail_pattern(
    pattern: EventPattern, regime: str = "rdfs", mechanism: Mechanism = Mechanism.LOOKUP
) -> EventPattern:
    """The event pattern with every GPM's triple patterns matched under `regime`."""
    check_regime(regime)
    rewriter = _Rewriter(mechanism)
    return _map_gpms(pattern, rewriter.gpm)


def entail_window_pattern(pattern: GroupPattern, entailed: str, regime: str = "rdfs") -> GroupPattern:
    """A window block's pattern under `regime`, where the graph `entailed` holds what the regime
    derives from the window and is not stored in it: each triple pattern `tp` becomes `{ tp }
    UNION { GRAPH <entailed> { tp } }`. Property paths, GRAPH and SERVICE blocks read the data as
    stored."""
    check_regime(regime)
    return _WindowRewriter(IRI(entailed)).group(pattern)


# --------------------------------------------------------------------------- witnesses

_SC_PLUS = PathMod(IRI(SUBCLASS_OF), PathModifier.ONE_OR_MORE)
_SP_PLUS = PathMod(IRI(SUBPROPERTY_OF), PathModifier.ONE_OR_MORE)
_TYPE = IRI(RDF_TYPE)


def _via(prop: str) -> PathSequence:
    """p rdfs:subPropertyOf*/prop/rdfs:subClassOf* C: p's uses make instances of C (rdfs2/rdfs3
    after rdfs7, then rdfs9)."""
    return PathSequence(
        (
            PathMod(IRI(SUBPROPERTY_OF), PathModifier.ZERO_OR_MORE),
            IRI(prop),
            PathMod(IRI(SUBCLASS_OF), PathModifier.ZERO_OR_MORE),
        )
    )


@dataclass(frozen=True, slots=True)
class _Witness:
    """One way a triple is entailed: `event` over the event graph (with `extra` elements beside
    it), `schema` over the schema, empty for the triple as stored."""

    kind: str
    event: tuple[TriplePattern, ...]
    schema: tuple[TriplePattern, ...] = ()
    extra: tuple[Node, ...] = ()


def _witnesses(triple: TriplePattern, term: Var, other: Var) -> list[_Witness] | None:
    """Every witness of a triple pattern; None when it only matches as stored."""
    s, p, o = triple.subject, triple.predicate, triple.object
    if isinstance(s, Literal):
        return None
    stored = _Witness(EXPLICIT, (triple,))
    if p == _TYPE:
        return None if isinstance(o, Literal) else [stored, *_typing(s, o, term, other, ())]
    if not isinstance(p, (IRI, Var)):
        return None  # a property path matches the event graph as stored
    sub = _Witness(SUBPROPERTY_OF, (TriplePattern(s, term, o),), (TriplePattern(term, _SP_PLUS, p),))
    out = [stored, sub]
    if isinstance(p, Var) and not isinstance(o, Literal):
        out += _typing(s, o, term, other, (InlineData((p,), ((_TYPE,),)),))
    return out


def _typing(s: VarOrTerm, cls: VarOrTerm, term: Var, other: Var, extra: tuple[Node, ...]) -> list[_Witness]:
    """`s rdf:type cls` through a subclass, a domain or a range. A literal is not typed by a
    range (that needs generalised RDF)."""
    not_literal = (Filter(UnaryOp("!", FunctionCall("ISLITERAL", (s,)))),) if isinstance(s, Var) else ()
    return [
        _Witness(SUBCLASS_OF, (TriplePattern(s, _TYPE, term),), (TriplePattern(term, _SC_PLUS, cls),), extra),
        _Witness(DOMAIN, (TriplePattern(s, term, other),), (TriplePattern(term, _via(DOMAIN), cls),), extra),
        _Witness(
            RANGE,
            (TriplePattern(other, term, s),),
            (TriplePattern(term, _via(RANGE), cls),),
            (*extra, *not_literal),
        ),
    ]


def _lookup_form(witnesses: list[_Witness], kind: Var, term: Var) -> tuple[UnionPattern, BackgroundLookup]:
    """The event part (one branch per witness, each binding the witness's kind) and the table of
    the schema parts, joined on (kind, term); the stored witness joins a marker row."""
    events: list[GroupPattern] = []
    tables: list[GroupPattern] = []
    for witness in witnesses:
        if witness.schema:
            marker = InlineData((kind,), ((IRI(witness.kind),),))
            tables.append(GroupPattern((BGP(witness.schema), marker)))
        else:
            marker = InlineData((kind, term), ((IRI(EXPLICIT), IRI(EXPLICIT)),))
            tables.append(GroupPattern((marker,)))
        events.append(GroupPattern((BGP(witness.event), *witness.extra, marker)))
    return UnionPattern(tuple(events)), BackgroundLookup((UnionPattern(tuple(tables)),))


def _paths_form(witnesses: list[_Witness]) -> UnionPattern:
    branches = []
    for witness in witnesses:
        schema: tuple[Node, ...] = ()
        if witness.schema:
            schema = (GraphGraphPattern(IRI(SCHEMA_GRAPH), GroupPattern((BGP(witness.schema),))),)
        branches.append(GroupPattern((BGP(witness.event), *witness.extra, *schema)))
    return UnionPattern(tuple(branches))


def _lookup_binds(witnesses: list[_Witness]) -> frozenset[str]:
    """The query's own variables a lookup would bind (a variable class or predicate)."""
    names = {n for w in witnesses for t in w.schema for n in triple_vars(t)}
    return frozenset(n for n in names if not is_hidden(n))


# --------------------------------------------------------------------------- the rewrite


class _Rewriter:
    """Rewrites GPMs (conjunctive positions by LOOKUP, the others in place) or window blocks."""

    def __init__(self, mechanism: Mechanism) -> None:
        self.mechanism = mechanism
        self.count = 0
        self.bnodes: dict[str, Var] = {}
        self.lookups: list[BackgroundLookup] = []
        self.observed: frozenset[str] = frozenset()
        self.done: dict[GraphPatternEvent, GraphPatternEvent] = {}
        self.counted = False
        """Inside a sub-select, whose aggregates count solutions."""

    def fresh(self, tag: str) -> Var:
        self.count += 1
        return Var(f"{HIDDEN_PREFIX}{self.count}{tag}")

    def gpm(self, gpm: GraphPatternEvent) -> GraphPatternEvent:
        """Lookups are joined after the event query, so they are moved to the GPM's top level
        from conjunctive positions only (joins commute; OPTIONAL and MINUS do not)."""
        found = self.done.get(gpm)
        if found is None:
            self.bnodes, self.lookups = {}, []
            self.observed = _observed(gpm.pattern, top=True)
            body = self._conjunctive(gpm.pattern)
            found = self.done[gpm] = replace(gpm, pattern=GroupPattern((*body.elements, *self.lookups)))
        return found

    def _conjunctive(self, group: GroupPattern) -> GroupPattern:
        out: list[Node] = []
        for element in group.elements:
            if type(element) is BGP:
                out.extend(self._bgp(element, in_place=False))
            elif type(element) is GroupPattern:
                out.append(self._conjunctive(element))
            else:
                out.extend(self._element(element))
        return GroupPattern(tuple(out))

    def in_place(self, group: GroupPattern) -> GroupPattern:
        out: list[Node] = []
        for element in group.elements:
            out.extend(self._element(element))
        return GroupPattern(tuple(out))

    def _element(self, element: Node) -> list[Node]:
        """An element rewritten where it stands (schema parts as PATHS)."""
        if isinstance(element, BGP):
            return self._bgp(element, in_place=True)
        if isinstance(element, GroupPattern):
            return [self.in_place(element)]
        if isinstance(element, OptionalPattern):
            return [OptionalPattern(self.in_place(element.pattern))]
        if isinstance(element, MinusPattern):
            return [MinusPattern(self.in_place(element.pattern))]
        if isinstance(element, UnionPattern):
            return [UnionPattern(tuple(self.in_place(b) for b in element.branches))]
        if isinstance(element, SubSelect):
            query, counted = element.query, self.counted
            self.counted = True
            where = self.in_place(query.where)
            self.counted = counted
            return [SubSelect(replace(query, where=where))]
        if isinstance(element, Filter):
            return [Filter(self._expr(element.expr))]
        if isinstance(element, Bind):
            return [Bind(self._expr(element.expr), element.var)]
        return [element]  # GRAPH and SERVICE blocks read the knowledge base as stored; VALUES

    def _expr(self, expr: Expr) -> Expr:
        def exists(node: Expr) -> Expr | None:
            if isinstance(node, Exists):
                return Exists(self.in_place(node.pattern), node.negated)
            return None

        return map_expr(expr, exists)

    def _bgp(self, bgp: BGP, in_place: bool) -> list[Node]:
        out: list[Node] = []
        plain: list[TriplePattern] = []
        names: set[str] = set()
        for triple in bgp.triples:
            triple = self._without_bnodes(triple)
            names |= triple_vars(triple)
            rewritten = self._triple(triple, in_place)
            if rewritten is None:
                plain.append(triple)
                continue
            if plain:
                out.append(BGP(tuple(plain)))
                plain = []
            out.append(rewritten)
        if all(isinstance(e, BGP) for e in out):
            return [bgp]  # nothing to entail: as written, blank nodes included
        if plain:
            out.append(BGP(tuple(plain)))
        return [_distinct(names, out)] if self.counted else out

    def _triple(self, triple: TriplePattern, in_place: bool) -> Node | None:
        term, other = self.fresh("t"), self.fresh("o")
        witnesses = _witnesses(triple, term, other)
        if witnesses is None:
            return None
        if in_place or self.mechanism is Mechanism.PATHS or _lookup_binds(witnesses) & self.observed:
            return _paths_form(witnesses)
        union, lookup = _lookup_form(witnesses, self.fresh("k"), term)
        self.lookups.append(lookup)
        return union

    def _without_bnodes(self, triple: TriplePattern) -> TriplePattern:
        return _without_bnodes(triple, self.bnodes, lambda: self.fresh(BNODE_TAG))


def _distinct(names: set[str], elements: list[Node]) -> Node:
    """A rewritten BGP inside a sub-select, where aggregates count its solutions: `{ SELECT
    DISTINCT <its variables and blank nodes> WHERE { ... } }`, one solution per match in the
    entailed graph, however many witnesses; without either, a condition (`FILTER EXISTS`)."""
    where = GroupPattern(tuple(elements))
    if not names:
        return Filter(Exists(where))
    projection = tuple(Projection(Var(n)) for n in sorted(names))
    return SubSelect(SelectQuery(projection=projection, where=where, distinct=True))


def _without_bnodes(triple: TriplePattern, bnodes: dict[str, Var], fresh: Callable[[], Var]) -> TriplePattern:
    """Blank nodes become hidden variables (`bnodes` maps their labels): the rewrite puts a triple
    into several BGPs, and a blank node label may not be shared between BGPs."""

    def term(node: VarOrTerm) -> VarOrTerm:
        if isinstance(node, BNode):
            found = bnodes.get(node.label)
            if found is None:
                found = bnodes[node.label] = fresh()
            return found
        return node

    return TriplePattern(term(triple.subject), triple.predicate, term(triple.object))


class _WindowRewriter:
    """Window blocks: every triple pattern also reads the graph of entailed triples."""

    def __init__(self, entailed: IRI) -> None:
        self.entailed = entailed
        self.count = 0

    def fresh(self, tag: str = BNODE_TAG) -> Var:
        self.count += 1
        return Var(f"{HIDDEN_PREFIX}w{self.count}{tag}")

    def group(self, group: GroupPattern) -> GroupPattern:
        return map_group(group, lambda e: self._bgp(e) if isinstance(e, BGP) else None)

    def _bgp(self, bgp: BGP) -> Node:
        """The BGP as a join of its triple patterns, each over both graphs. Its blank nodes become
        hidden variables, projected away by a sub-select over the BGP's variables that keeps one
        solution per blank-node assignment, as BGP matching does. A BGP without variables
        (`[] a :C`) projects a fresh variable it never binds (SPARQL has no empty projection):
        its solutions are empty mappings, one per witness, so nothing hidden reaches the query's
        `SELECT *`, DISTINCT or output."""
        if not any(_entailable(t) for t in bgp.triples):
            return bgp
        bnodes: dict[str, Var] = {}
        triples = [_without_bnodes(t, bnodes, self.fresh) for t in bgp.triples]
        plain = BGP(tuple(t for t in triples if not _entailable(t)))
        both = [self._both(t) for t in triples if _entailable(t)]
        where = GroupPattern((*both, plain) if plain.triples else tuple(both))
        if not bnodes:
            return where
        names = sorted({n for t in bgp.triples for n in triple_vars(t)})
        projected = [Var(n) for n in names] or [self.fresh("unbound")]
        return SubSelect(SelectQuery(projection=tuple(Projection(v) for v in projected), where=where))

    def _both(self, triple: TriplePattern) -> UnionPattern:
        stored = GroupPattern((BGP((triple,)),))
        entailed = GroupPattern((GraphGraphPattern(self.entailed, stored),))
        return UnionPattern((stored, entailed))


def _entailable(triple: TriplePattern) -> bool:
    """Can an entailed triple match the pattern? Not a path, and no literal subject."""
    return isinstance(triple.predicate, (IRI, Var)) and not isinstance(triple.subject, Literal)


def is_blank_node_var(name: str) -> bool:
    """A hidden variable standing for a blank node of the pattern (an existential variable: its
    witnesses count as different solutions)."""
    return is_hidden(name) and name.endswith(BNODE_TAG)


def _observed(group: GroupPattern, top: bool) -> frozenset[str]:
    """Variables read by elements that a lookup joined afterwards would not commute with:
    OPTIONAL, MINUS, BIND, and FILTERs other than the GPM's own (rsep.plugin.compile.gpm_plan places
    those after the lookups when they read what a lookup binds)."""
    found: set[str] = set()
    for element in group.elements:
        if type(element) is GroupPattern:
            found |= _observed(element, top=False)
        elif _observes(element, top):
            found |= mentioned_vars(element)
    return frozenset(found)


def _observes(element: Node, top: bool) -> bool:
    if isinstance(element, Filter):
        return not top or _has_exists(element.expr)
    return isinstance(element, (OptionalPattern, MinusPattern, Bind))


def _has_exists(expr: Expr) -> bool:
    if isinstance(expr, Exists):
        return True
    if isinstance(expr, BinaryOp):
        return _has_exists(expr.left) or _has_exists(expr.right)
    if isinstance(expr, UnaryOp):
        return _has_exists(expr.operand)
    if isinstance(expr, In):
        return _has_exists(expr.expr) or any(map(_has_exists, expr.options))
    if isinstance(expr, FunctionCall):
        return any(map(_has_exists, expr.args))
    return False


def _map_gpms(pattern: EventPattern, visit: Callable[[GraphPatternEvent], GraphPatternEvent]) -> EventPattern:
    if isinstance(pattern, GraphPatternEvent):
        return visit(pattern)
    if isinstance(pattern, Sequence):
        return replace(pattern, elements=tuple(_map_gpms(e, visit) for e in pattern.elements))
    if isinstance(pattern, (Conjunction, Disjunction, EventJoin)):
        return replace(pattern, operands=tuple(_map_gpms(e, visit) for e in pattern.operands))
    if isinstance(pattern, (Equals, OptionalSequence, EqualsOptional, EventLeftJoin)):
        return replace(pattern, left=_map_gpms(pattern.left, visit), right=_map_gpms(pattern.right, visit))
    if isinstance(
        pattern, (KleenePlus, Negation, OptionalEvent, EventFilter, EventBind, EventValues, First, Last)
    ):
        return replace(pattern, element=_map_gpms(pattern.element, visit))
    raise CompileError(f"entailment: unknown event operator {type(pattern).__name__}")
