"""Lark grammars for SPARQL 1.1 and its event-processing dialects, and their transformers to the algebra."""

from rsep.grammar.dialects import DIALECTS, parse_event_query
from rsep.grammar.parser import SparqlSyntaxError, parse_query, parse_update

__all__ = ["DIALECTS", "SparqlSyntaxError", "parse_event_query", "parse_query", "parse_update"]
