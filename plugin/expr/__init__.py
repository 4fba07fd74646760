"""A pure-Python SPARQL 1.1 expression evaluator, compiled to closures.

The NFA runtime evaluates "stateful" FILTERs, which compare variables bound
by different events, in Python for every candidate (partial match, event)
pair. `compile_filter` turns a FILTER expression into a predicate over a
solution mapping (variable name -> N-Triples term, as `str(term)` prints a
pyoxigraph term); `compile_expr` returns the result term itself. Semantics
follow SPARQL 1.1 §17 (https://www.w3.org/TR/sparql11-query/#expressions)
and print results the way Oxigraph does, so both evaluators agree term for
term. No dependency on pyoxigraph: this runs on Spark executors too.
"""

from .compile import compile_expr, compile_filter, compile_value
from .errors import ExprError, UnsupportedExpression

__all__ = ["ExprError", "UnsupportedExpression", "compile_expr", "compile_filter", "compile_value"]
