"""What RDFS derives from a window's triples, kept as data for window queries under entailment.

A window block under `entailment=rdfs` matches the window's graph united with what RDFS derives
from it with the knowledge base's schema (docs/semantics.md, "RDFS entailment"). The window store
keeps the derived triples that are not stored in a hidden graph beside each window graph, which
the rewritten patterns read too (rsep.plugin.compile.entailment.entail_window_pattern).

The schema is read once per knowledge-base version (`SchemaClosure`, what a SPARQL Update costs
the next evaluation) and closed per term on demand. The hidden graph is maintained by the
triples entering and leaving the window (`EntailedGraph.update`): a triple's derivations are
computed when it enters and counted per derived triple (its *support*), and given back when it
leaves, so a derived triple stays while another window triple or the static data still derive
it. Per evaluation, reasoning costs a set difference between the window and the previous one (the
window graphs are updated by the same difference) plus, per triple entering or leaving, its few
derivations; nothing is kept for a triple after it has left every window (bench/bench_entailment.py,
the window case).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

import pyoxigraph as ox

from rsep.plugin.algebra.sparql import RDF_TYPE
from rsep.plugin.compile.entailment import DOMAIN, RANGE, SCHEMA_PREDICATES, SUBCLASS_OF, SUBPROPERTY_OF

Term = ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple
_TYPE = ox.NamedNode(RDF_TYPE)
_NOTHING: frozenset[Term] = frozenset()


class SchemaClosure:
    """The RDFS schema of a knowledge base's default graph, closed on demand: per class its
    superclasses, per property its superproperties and the classes its uses give to the subject
    (domain) and object (range). Schema triples about rdf:type itself are not read. Only terms
    the schema mentions are cached, so the caches are bounded by the schema, not by the stream."""

    def __init__(self, store: ox.Store) -> None:
        self._edges: dict[str, dict[Term, list[Term]]] = {p: defaultdict(list) for p in SCHEMA_PREDICATES}
        for predicate, edges in self._edges.items():
            for quad in store.quads_for_pattern(None, ox.NamedNode(predicate), None, ox.DefaultGraph()):
                if quad.subject != _TYPE and not (predicate == SUBPROPERTY_OF and quad.object == _TYPE):
                    edges[quad.subject].append(quad.object)
        self._reached: dict[tuple[str, Term], frozenset[Term]] = {}
        self._typed: dict[tuple[str, Term], frozenset[Term]] = {}

    def derive(self, triple: ox.Triple) -> frozenset[ox.Triple]:
        """Every triple RDFS derives from `triple` with the schema (rdfs2, rdfs3, rdfs5, rdfs7,
        rdfs9, rdfs11 to a fixpoint), without `triple` itself."""
        return frozenset(self._derive(triple)) - {triple}

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
        edges = self._edges[predicate]
        if start not in edges:
            return _NOTHING
        key = (predicate, start)
        found = self._reached.get(key)
        if found is None:
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
        if prop not in self._edges[SUBPROPERTY_OF] and prop not in self._edges[predicate]:
            return _NOTHING
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
    C-SPARQL's merged graph from the static graphs too, minus what is stored (the window and, by
    `is_static`, the static graphs). `static` (derived from the static graphs, not in them) is
    loaded once per knowledge-base version; `update` follows the window."""

    def __init__(
        self,
        graph: ox.NamedNode,
        closure: SchemaClosure,
        static: frozenset[ox.Triple] = frozenset(),
        is_static: Callable[[ox.Triple], bool] = lambda _: False,
    ) -> None:
        self.graph = graph
        self.closure = closure
        self.static = static
        self.is_static = is_static
        self._window: dict[ox.Triple, frozenset[ox.Triple]] = {}
        """The window's triples, each with what it derives."""
        self._support: dict[ox.Triple, int] = {}
        """Per derived triple, how many of the window's triples derive it."""
        self._held: set[ox.Triple] = set(static)
        """What the hidden graph holds now."""

    def initial(self) -> list[ox.Quad]:
        return [self._quad(t) for t in self.static]

    def update(self, window: set[ox.Triple]) -> tuple[list[ox.Quad], list[ox.Quad]]:
        """The quads to remove and to add so that the graph follows `window` (the window graph's
        triples now). Only the triples entering or leaving the window, and what they derive, can
        change the graph: a derived triple is held while one window triple or the static data
        derives it, and the window does not hold it."""
        leaving = self._window.keys() - window
        entering = window.difference(self._window)
        touched = leaving | entering
        support = self._support
        for triple in leaving:
            derived = self._window.pop(triple)
            for found in derived:
                count = support[found] - 1
                if count:
                    support[found] = count
                else:
                    del support[found]
            touched |= derived
        for triple in entering:
            derived = self._window[triple] = self.closure.derive(triple)
            for found in derived:
                support[found] = support.get(found, 0) + 1
            touched |= derived
        removed: list[ox.Triple] = []
        added: list[ox.Triple] = []
        for triple in touched:
            holds = self._holds(triple)
            if holds != (triple in self._held):
                (added if holds else removed).append(triple)
        self._held.difference_update(removed)
        self._held.update(added)
        return [self._quad(t) for t in removed], [self._quad(t) for t in added]

    def _holds(self, triple: ox.Triple) -> bool:
        """Should the graph hold `triple`: entailed and not stored?"""
        if triple in self._window:
            return False
        if triple in self.static:
            return True
        return triple in self._support and not self.is_static(triple)

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
