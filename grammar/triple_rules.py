"""Rule methods for triples, W3C productions [50], [73]-[87] and [98]-[109]: triples templates,
property lists expanded to triple patterns, collections and `[ ... ]` (fresh blank nodes), and
variables and blank nodes (recorded for the static checks)."""

from __future__ import annotations

from typing import Any

from lark import Token, v_args
from lark.tree import Meta

from rsep.grammar.lexical import terminal_name
from rsep.grammar.path_rules import PathRules
from rsep.grammar.query_parts import Template, TriplesNode
from rsep.grammar.transformer_base import Occurrence, position_of
from rsep.plugin.algebra.sparql import (
    IRI,
    RDF,
    RDF_TYPE,
    BNode,
    Term,
    TriplePattern,
    Var,
    VarOrTerm,
)

RDF_FIRST = RDF + "first"
RDF_REST = RDF + "rest"
RDF_NIL = RDF + "nil"


class TripleRules(PathRules):
    """[50], [73]-[87], [98]-[109] triples, triples nodes, variables and blank nodes."""

    def triples_template(self, children: list[tuple[TriplePattern, ...]]) -> tuple[TriplePattern, ...]:
        return tuple(triple for triples in children for triple in triples)

    def construct_template(self, children: list[tuple[TriplePattern, ...]]) -> Template:
        return Template(children[0] if children else ())

    construct_triples = triples_template

    def triples_same_subject(self, children: list[Any]) -> tuple[TriplePattern, ...]:
        subject, properties = children
        if isinstance(subject, TriplesNode):
            return subject.triples + self._expand(subject.node, properties)
        return self._expand(subject, properties)

    triples_same_subject_path = triples_same_subject

    def _expand(
        self, subject: VarOrTerm, properties: list[tuple[Any, tuple[Any, ...]]]
    ) -> tuple[TriplePattern, ...]:
        """Triples of a property list, each followed by those of its `[ ... ]` or collection object."""
        triples: list[TriplePattern] = []
        for verb, objects in properties:
            for obj in objects:
                if isinstance(obj, TriplesNode):
                    triples.append(TriplePattern(subject, verb, obj.node))
                    triples.extend(obj.triples)
                else:
                    triples.append(TriplePattern(subject, verb, obj))
        return tuple(triples)

    def property_list(self, children: list[Any]) -> list[tuple[Any, tuple[Any, ...]]]:
        return children[0] if children else []

    property_list_path = property_list

    def property_list_not_empty(self, children: list[Any]) -> list[tuple[Any, tuple[Any, ...]]]:
        return list(zip(children[0::2], children[1::2], strict=True))

    property_list_path_not_empty = property_list_not_empty

    def verb(self, children: list[Any]) -> Var | IRI:
        return IRI(RDF_TYPE) if isinstance(children[0], Token) else children[0]

    def object_list(self, children: list[Any]) -> tuple[Any, ...]:
        return tuple(children)

    object_list_path = object_list

    @v_args(meta=True)
    def blank_node_property_list(self, meta: Meta, children: list[Any]) -> TriplesNode:
        node = self._anonymous(meta)
        return TriplesNode(node, self._expand(node, children[0]))

    blank_node_property_list_path = blank_node_property_list

    @v_args(meta=True)
    def collection(self, meta: Meta, children: list[Any]) -> TriplesNode:
        """`( a b )` is `_:c0 rdf:first a ; rdf:rest _:c1 . _:c1 rdf:first b ; rdf:rest rdf:nil`."""
        nodes = [self._anonymous(meta) for _ in children]
        triples: list[TriplePattern] = []
        for index, (node, item) in enumerate(zip(nodes, children, strict=True)):
            rest: BNode | IRI = nodes[index + 1] if index + 1 < len(nodes) else IRI(RDF_NIL)
            member = item.node if isinstance(item, TriplesNode) else item
            triples.append(TriplePattern(node, IRI(RDF_FIRST), member))
            triples.extend(item.triples if isinstance(item, TriplesNode) else ())
            triples.append(TriplePattern(node, IRI(RDF_REST), rest))
        return TriplesNode(nodes[0], tuple(triples))

    collection_path = collection

    def _anonymous(self, meta: Meta) -> BNode:
        node = self.new_blank_node()
        line, column = position_of(meta)
        self._blank_nodes.append(Occurrence(node.label, meta.start_pos, line, column))
        return node

    def var(self, children: list[Token]) -> Var:
        token = children[0]
        var = Var(str(token)[1:])
        self.remember(var, token.line or 1, token.column or 1)
        self._vars.append(Occurrence(var.name, token.start_pos or 0, token.line or 1, token.column or 1))
        return var

    def graph_term(self, children: list[Any]) -> Term:
        return IRI(RDF_NIL) if isinstance(children[0], Token) else children[0]

    def blank_node(self, children: list[Token]) -> BNode:
        token = children[0]
        if terminal_name(token) == "ANON":
            node = self.new_blank_node()
        else:
            node = BNode(str(token)[2:])
            self._labels.append(
                Occurrence(node.label, token.start_pos or 0, token.line or 1, token.column or 1)
            )
        self._blank_nodes.append(
            Occurrence(node.label, token.start_pos or 0, token.line or 1, token.column or 1)
        )
        return node
