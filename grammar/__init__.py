"""Lark grammars for SPARQL 1.1 and its event-processing dialects, and their transformers to the algebra."""
