"""Rule methods for property paths, W3C productions [88]-[96]."""

from __future__ import annotations

from typing import Any

from lark import Token

from rsep.grammar.expression_rules import ExpressionRules
from rsep.plugin.algebra.sparql import (
    IRI,
    RDF_TYPE,
    Path,
    PathAlternative,
    PathInverse,
    PathMod,
    PathModifier,
    PathNegatedSet,
    PathSequence,
)


class PathRules(ExpressionRules):
    """[88]-[96] property paths."""

    def path_alternative(self, children: list[Path]) -> PathAlternative:
        return PathAlternative(tuple(children))

    def path_sequence(self, children: list[Path]) -> PathSequence:
        return PathSequence(tuple(children))

    def path_elt(self, children: list[Any]) -> PathMod:
        return PathMod(children[0], children[1])

    def path_elt_or_inverse(self, children: list[Any]) -> PathInverse:
        return PathInverse(children[-1])

    def path_mod(self, children: list[Token]) -> PathModifier:
        return PathModifier(str(children[0]))

    def path_primary(self, children: list[Any]) -> Path:
        return IRI(RDF_TYPE) if isinstance(children[0], Token) else children[0]

    def path_negated_property_set(self, children: list[tuple[IRI, bool]]) -> PathNegatedSet:
        forward = tuple(iri for iri, inverse in children if not inverse)
        return PathNegatedSet(forward, tuple(iri for iri, inverse in children if inverse))

    def path_one_in_property_set(self, children: list[Any]) -> tuple[IRI, bool]:
        target = children[-1]
        iri = IRI(RDF_TYPE) if isinstance(target, Token) else target
        return (iri, len(children) == 2)
