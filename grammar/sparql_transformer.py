"""Lark trees of grammar/sparql11.lark to the typed syntax tree of `rsep.plugin.algebra.sparql`.

One method per grammar rule, named after the rule, so a dialect transformer subclasses
`SparqlTransformer` and adds or overrides methods for the rules its grammar adds or overrides.
Rules a dialect grammar imports indirectly arrive renamed `sparql11__<rule>`; `__default__` maps
them back to the same methods, so subclassing is enough (lark's `merge_transformers` works too).

The transformer is non-recursive (lark's `Transformer_NonRecursive`), so deeply nested queries do
not hit Python's recursion limit. It visits the tree bottom-up, left to right: PREFIX and BASE
declarations are seen before the IRIs that use them, which is how prefixed names and relative IRIs
are resolved on the fly.

The static rules of SPARQL that the grammar cannot express (§18.2.1 scoping, §11.4 grouping,
§19.6 blank-node labels, §3.1.3 update data) are checked here and raise
`StaticSemanticsError` with the line and column of the offending construct; `rsep.grammar.parser`
turns it into `SparqlSyntaxError`.

The rule methods live in one module per part of the grammar, each class building on the one
before, from the state of a parse up to whole queries (a later part calls the helpers of earlier
ones, as a query form builds its group):

    transformer_base   TransformerBase    driving, positions, scopes, occurrences
    static_checks      StaticChecks       the static rules above
    expression_rules   ExpressionRules    [110]-[138] expressions and terms, [97] Integer
    path_rules         PathRules          [88]-[96] property paths
    triple_rules       TripleRules        [50], [73]-[87], [98]-[109] triples and nodes
    pattern_rules      GraphPatternRules  [53]-[72] graph patterns
    update_rules       UpdateRules        [29]-[49] updates (validated only)
    query_rules        QueryRules         [1]-[28] queries
"""

from __future__ import annotations

from rsep.grammar.expression_walks import iter_expression
from rsep.grammar.lexical import resolve_iri, terminal_name, unescape
from rsep.grammar.query_parts import QueryParts, SelectClause, TriplesNode
from rsep.grammar.query_rules import QueryRules
from rsep.grammar.transformer_base import StaticSemanticsError


class SparqlTransformer(QueryRules):
    """Builds `Query` nodes from `query_unit` trees and validates `update_unit` trees.

    Use one instance per parse: it carries the prologue and the tables of the static checks.
    `base_iri` resolves relative IRIs when the text has no BASE (e.g. the document's URL)."""


__all__ = [
    # Defined by the modules above and re-exported: where dialect transformers imported them from.
    "QueryParts",
    "SelectClause",
    "SparqlTransformer",
    "StaticSemanticsError",
    "TriplesNode",
    "iter_expression",
    "resolve_iri",
    "terminal_name",
    "unescape",
]
