"""Nested paths `elt[elt]` (CQELS-CEP §3.1, nSPARQL) compiled to SPARQL 1.1 that Oxigraph evaluates.

nSPARQL's nested regular expressions test nodes along a path: `p[q]` relates x to y when p does
and y has an outgoing q path ((y, z) ∈ [[q]] for some z); the test `[q/self::o]` (written
`[q o]`) asks for a q path to the node o. A node test is a relation in its own right, the
identity on the nodes that pass it, T_q = {(y, y) | ∃z (y, z) ∈ [[q]]}, and `p[q]` = `p/T_q`.

So each test is *materialised*: the store adapter evaluates the test once (a SELECT DISTINCT over
the graph the path reads), writes T_q as `(y, <relation>, y)` triples, and the path is rewritten
to name <relation> where the test stood. The rewrite is of the syntax tree, then serialized:

    ?s (^:beg/[:means :subway]/:end)+ :c
    ->  GRAPH <rsep:nested/0> { ?s (^:beg/<rsep:nested/0/0>/:end)+ :c }

The relations live in a *scratch graph* per active graph (a site): a copy of the graph the
pattern reads (the query's default graph, or the named graph of the enclosing GRAPH block) plus
the relations, and only the rewritten triple patterns read it, so no other pattern ever sees a
relation triple. Negated property sets read by the site's paths exclude the relations, so
`!(:p)` does not walk them. Tests nest: an inner test is materialised before the outer one that
names it. Literals pass no test (they are never subjects in RDF, so T_q cannot hold them).

Pure: the store adapter (rsep.plugin.store.windows) copies graphs and runs the queries.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any, cast

from rsep.plugin.algebra.nested_paths import PathSelf
from rsep.plugin.algebra.serialize import to_sparql
from rsep.plugin.algebra.sparql import (
    BGP,
    IRI,
    BNode,
    GraphGraphPattern,
    GroupPattern,
    Node,
    Path,
    PathAlternative,
    PathInverse,
    PathMod,
    PathNegatedSet,
    PathNested,
    PathSequence,
    Projection,
    SelectQuery,
    Term,
    TriplePattern,
    Var,
)
from rsep.plugin.errors import InvalidInput
from rsep.plugin.vocabulary import RSEP

NESTED_GRAPH = RSEP + "nested/"
"""Prefix of the scratch graphs (`<prefix><site>`) and of their relations (`<prefix><site>/<n>`)."""
_ANY_GRAPH = "?"


class NestedPathError(InvalidInput):
    """A nested path rsep cannot compile (the message says why)."""


@dataclass(frozen=True, slots=True)
class NodeTest:
    """One materialised test: `query` selects ?node (the nodes that pass) from the scratch graph;
    each becomes a `(node, relation, node)` triple there."""

    relation: str
    query: str


@dataclass(frozen=True, slots=True)
class NestedSite:
    """A scratch graph and what fills it: a copy of `source` (None: the query's default graph),
    then each test's relation, inner tests first."""

    graph: str
    source: str | None
    tests: tuple[NodeTest, ...]


def has_nested_path(node: Any) -> bool:
    """Does a syntax tree hold a nested path anywhere?"""
    if isinstance(node, (PathNested, PathSelf)):
        return True
    if isinstance(node, tuple):
        return any(map(has_nested_path, node))
    if is_dataclass(node) and not isinstance(node, type):
        return any(has_nested_path(getattr(node, f.name)) for f in fields(node))
    return False


def compile_nested_paths(node: Node) -> tuple[Node, tuple[NestedSite, ...]]:
    """`node` with every triple pattern whose path nests tests moved into its site's scratch
    graph and rewritten, and the sites to materialise; `node` itself when nothing nests."""
    if not has_nested_path(node):
        return node, ()
    rewriter = _Rewriter()
    result = rewriter.visit(node, None)
    return result, tuple(site.build() for site in rewriter.sites.values())


@dataclass
class _Site:
    index: int
    source: str | None
    tests: list[tuple[str, Path, Term | None]] = field(default_factory=list)
    memo: dict[Path, str] = field(default_factory=dict)

    @property
    def graph(self) -> str:
        return f"{NESTED_GRAPH}{self.index}"

    @property
    def relations(self) -> tuple[IRI, ...]:
        return tuple(IRI(relation) for relation, _, _ in self.tests)

    def build(self) -> NestedSite:
        tests = tuple(NodeTest(r, self._query(path, node)) for r, path, node in self.tests)
        return NestedSite(self.graph, self.source, tests)

    def _query(self, path: Path, node: Term | None) -> str:
        """SELECT DISTINCT ?node { GRAPH <scratch> { ?node path (node | ?end) } }."""
        triple = TriplePattern(Var("node"), _exclude(path, self.relations), node or Var("end"))
        inner = GroupPattern((BGP((triple,)),))
        where = GroupPattern((GraphGraphPattern(IRI(self.graph), inner),))
        return to_sparql(SelectQuery((Projection(Var("node")),), where, distinct=True))


class _Rewriter:
    """Walks the tree with the active graph (None: the default graph) and rewrites BGPs."""

    def __init__(self) -> None:
        self.sites: dict[str | None, _Site] = {}

    def visit(self, node: Any, active: str | None) -> Any:
        if isinstance(node, tuple):
            items = tuple(self.visit(item, active) for item in node)
            return node if all(a is b for a, b in zip(items, node, strict=True)) else items
        if isinstance(node, BGP):
            return self._bgp(node, active)
        if isinstance(node, GraphGraphPattern):
            inner = node.name.value if isinstance(node.name, IRI) else _ANY_GRAPH
            pattern = self.visit(node.pattern, inner)
            return node if pattern is node.pattern else replace(node, pattern=pattern)
        if not is_dataclass(node) or isinstance(node, type):
            return node
        changes = {}
        for item in fields(node):
            value = getattr(node, item.name)
            new = self.visit(value, active)
            if new is not value:
                changes[item.name] = new
        return replace(node, **changes) if changes else node

    def _bgp(self, bgp: BGP, active: str | None) -> BGP | GroupPattern:
        """The BGP, or a group of its plain runs and one GRAPH <scratch> block per nested triple."""
        if not any(has_nested_path(t.predicate) for t in bgp.triples):
            return bgp
        if active == _ANY_GRAPH:
            raise NestedPathError("a nested path [...] cannot be used inside GRAPH ?variable { ... }")
        if any(isinstance(term, BNode) for t in bgp.triples for term in (t.subject, t.object)):
            raise NestedPathError(
                "a nested path [...] shares its group with a blank node: write a variable instead"
            )
        site = self.sites.get(active)
        if site is None:
            site = self.sites[active] = _Site(len(self.sites), active)
        elements: list[Any] = []
        plain: list[TriplePattern] = []
        for triple in bgp.triples:
            if not has_nested_path(triple.predicate):
                plain.append(triple)
                continue
            if plain:
                elements.append(BGP(tuple(plain)))
                plain = []
            path = self._path(cast(Path, triple.predicate), site)
            block = GroupPattern((BGP((replace(triple, predicate=_exclude(path, site.relations)),)),))
            elements.append(GraphGraphPattern(IRI(site.graph), block))
        if plain:
            elements.append(BGP(tuple(plain)))
        return GroupPattern(tuple(elements))

    def _path(self, path: Path, site: _Site) -> Path:
        """The path with each PathNested(p, q) replaced by p/<relation of q>."""
        if isinstance(path, PathNested):
            return PathSequence((self._path(path.path, site), IRI(self._relation(path.test, site))))
        if isinstance(path, PathSequence):
            return PathSequence(tuple(self._path(step, site) for step in path.steps))
        if isinstance(path, PathAlternative):
            return PathAlternative(tuple(self._path(option, site) for option in path.options))
        if isinstance(path, (PathMod, PathInverse)):
            return replace(path, path=self._path(path.path, site))
        if isinstance(path, PathSelf):
            raise NestedPathError("self::node is only the last step of a nested test, as in [:p :o]")
        return path

    def _relation(self, test: Path, site: _Site) -> str:
        """The relation IRI of a test, materialised after the tests nested in it."""
        found = site.memo.get(test)
        if found is not None:
            return found
        node: Term | None = None
        steps = test.steps if isinstance(test, PathSequence) else (test,)
        last = cast(Any, steps[-1])
        if isinstance(last, PathSelf):
            node, steps = last.node, steps[:-1]
            if not steps:
                raise NestedPathError("a nested test needs a path before its node: [:p :o]")
        inner = steps[0] if len(steps) == 1 else PathSequence(tuple(steps))
        rewritten = self._path(inner, site)
        relation = f"{site.graph}/{len(site.tests)}"
        site.tests.append((relation, rewritten, node))
        site.memo[test] = relation
        return relation


def _exclude(path: Path, relations: tuple[IRI, ...]) -> Path:
    """Negated property sets in `path` also exclude the site's relations (forward when the set
    has forward members, inverse when it has inverse ones: SPARQL §18.4 reads each side apart)."""
    if isinstance(path, PathNegatedSet):
        forward = path.forward + relations if path.forward else ()
        inverse = path.inverse + relations if path.inverse else ()
        return PathNegatedSet(forward, inverse)
    if isinstance(path, PathSequence):
        return PathSequence(tuple(_exclude(step, relations) for step in path.steps))
    if isinstance(path, PathAlternative):
        return PathAlternative(tuple(_exclude(option, relations) for option in path.options))
    if isinstance(path, (PathMod, PathInverse)):
        return replace(path, path=_exclude(path.path, relations))
    return path
