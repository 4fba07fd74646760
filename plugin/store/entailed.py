"""What RDFS derives from a window's triples, kept as data for window queries under entailment.

A window block under `entailment=rdfs` matches the window's graph united with what RDFS derives
from it with the knowledge base's schema (docs/semantics.md, "RDFS entailment"). The window store
keeps the derived triples that are not stored in a hidden graph beside each window graph, which
the rewritten patterns read too (rsep.plugin.compile.entailment.entail_window_pattern).

The schema is read once per knowledge-base version (`SchemaClosure`, what a SPARQL Update costs
the next evaluation), each distinct triple is derived once per version, and each evaluation
changes a hidden graph by its difference with the previous evaluation, as the window graphs are
changed: reasoning costs a few dictionary probes per triple entering a window, not a pass over
the schema per evaluation (bench/bench_entailment.py, the window case).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

import pyoxigraph as ox

from rsep.plugin.algebra.sparql import RDF_TYPE
from rsep.plugin.compile.entailment import DOMAIN, RANGE, SCHEMA_PREDICATES, SUBCLASS_OF, SUBPROPERTY_OF

Term = ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple
_TYPE = ox.NamedNode(RDF_TYPE)


class SchemaClosure:
    """The RDFS schema of a knowledge base's default graph, closed on demand: per class its
    superclasses, per property its superproperties and the classes its uses give to the subject
    (domain) and object (range). Schema triples about rdf:type itself are not read."""

    def __init__(self, store: ox.Store) -> None:
        self._edges: dict[str, dict[Term, list[Term]]] = {p: defaultdict(list) for p in SCHEMA_PREDICATES}
        for predicate, edges in self._edges.items():
            for quad in store.quads_for_pattern(None, ox.NamedNode(predicate), None, ox.DefaultGraph()):
                if quad.subject != _TYPE and not (predicate == SUBPROPERTY_OF and quad.object == _TYPE):
                    edges[quad.subject].append(quad.object)
        self._reached: dict[tuple[str, Term], frozenset[Term]] = {}
        self._typed: dict[tuple[str, Term], frozenset[Term]] = {}
        self._derived: dict[ox.Triple, frozenset[ox.Triple]] = {}

    def derive(self, triple: ox.Triple) -> frozenset[ox.Triple]:
        """Every triple RDFS derives from `triple` with the schema (rdfs2, rdfs3, rdfs5, rdfs7,
        rdfs9, rdfs11 to a fixpoint), without `triple` itself."""
        found = self._derived.get(triple)
        if found is None:
            found = self._derived[triple] = frozenset(self._derive(triple)) - {triple}
        return found

    def _derive(self, triple: ox.Triple) -> Iterable[ox.Triple]:
        s, p, o = triple.subject, triple.predicate, triple.object
        for q in self._reach(SUBPROPERTY_OF, p):
            if isinstance(q, ox.NamedNode):
                yield ox.Triple(s, q, o)
        for cls in self._classes(DOMAIN, p):
            yield ox.Triple(s, _TYPE, cls)
        if isinstance(o, ox.Literal):
            return  # a literal is not typed by a range (that needs generalised RDF)
        for cls in self._classes(RANGE, p):
            yield ox.Triple(o, _TYPE, cls)
        if p == _TYPE:
            for cls in self._reach(SUBCLASS_OF, o):
                yield ox.Triple(s, _TYPE, cls)

    def _reach(self, predicate: str, start: Term) -> frozenset[Term]:
        """The terms `start` reaches in one or more `predicate` steps (a cycle reaches itself)."""
        key = (predicate, start)
        found = self._reached.get(key)
        if found is None:
            edges = self._edges[predicate]
            seen: set[Term] = set()
            todo = list(edges.get(start, ()))
            while todo:
                term = todo.pop()
                if term not in seen:
                    seen.add(term)
                    todo.extend(edges.get(term, ()))
            found = self._reached[key] = frozenset(seen)
        return found

    def _classes(self, predicate: str, prop: Term) -> frozenset[Term]:
        """The classes `predicate` (domain or range) of `prop` or of a superproperty gives, with
        their superclasses: `prop rdfs:subPropertyOf*/predicate/rdfs:subClassOf* ?class`."""
        key = (predicate, prop)
        found = self._typed.get(key)
        if found is None:
            direct = {
                c
                for q in (prop, *self._reach(SUBPROPERTY_OF, prop))
                for c in self._edges[predicate].get(q, ())
            }
            found = frozenset(direct.union(*(self._reach(SUBCLASS_OF, c) for c in direct)))
            self._typed[key] = found
        return found


class EntailedGraph:
    """The hidden graph beside one window graph: what RDFS derives from the window, and for
    C-SPARQL's merged graph from the static graphs too, that is not stored. `static` (derived from
    the static graphs, not in them) is loaded once per knowledge-base version; `update` brings the
    rest to a window's content."""

    def __init__(self, graph: ox.NamedNode, static: frozenset[ox.Triple] = frozenset()) -> None:
        self.graph = graph
        self.static = static
        self._shadowed: set[ox.Triple] = set()
        """Triples of `static` stored in the window now (not loaded: the window holds them)."""
        self._extra: set[ox.Triple] = set()
        """Triples derived from the window only."""

    def initial(self) -> list[ox.Quad]:
        return [self._quad(t) for t in self.static]

    def update(
        self, window: set[ox.Triple], closure: SchemaClosure, is_static: Callable[[ox.Triple], bool]
    ) -> tuple[list[ox.Quad], list[ox.Quad]]:
        """The quads to remove and to add so that the graph holds what `window` (the window
        graph's triples) and the static graphs derive, minus what is stored."""
        derived: set[ox.Triple] = set().union(*(closure.derive(t) for t in window))
        shadowed = {t for t in window if t in self.static}
        extra = {t for t in derived - window - self.static if not is_static(t)}
        removed = (shadowed - self._shadowed) | (self._extra - extra)
        added = (self._shadowed - shadowed) | (extra - self._extra)
        self._shadowed, self._extra = shadowed, extra
        return [self._quad(t) for t in removed], [self._quad(t) for t in added]

    def _quad(self, triple: ox.Triple) -> ox.Quad:
        return ox.Quad(triple.subject, triple.predicate, triple.object, self.graph)


def static_entailed(
    closure: SchemaClosure, quads: Iterable[ox.Quad], is_static: Callable[[ox.Triple], bool]
) -> frozenset[ox.Triple]:
    """What the static graphs' triples derive and the static graphs do not hold."""
    derived: set[ox.Triple] = set()
    for quad in quads:
        derived |= closure.derive(ox.Triple(quad.subject, quad.predicate, quad.object))
    return frozenset(t for t in derived if not is_static(t))
