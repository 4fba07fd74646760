"""A pure-Python SPARQL 1.1 expression evaluator, compiled to closures.

The NFA runtime evaluates "stateful" FILTERs, which compare variables bound
by different events, in Python for every candidate (partial match, event)
pair. `compile_filter` turns a FILTER expression into a predicate over a
solution mapping (variable name -> N-Triples term, as `str(term)` prints a
pyoxigraph term); `compile_expr` returns the result term itself, printed the
way Oxigraph prints it, so both evaluators agree term for term. Only the
standard library is used: this also runs on Spark executors.

Semantics: SPARQL 1.1 §17 (https://www.w3.org/TR/sparql11-query/#expressions)
with XPath F&O for the operators and functions it imports. Beyond the §17.3
table, like Oxigraph (§17.3.1 operator extensibility, SPARQL 1.2/SEP-0002):
ordering of same-language rdf:langString literals, of xsd:date/xsd:time and
of durations (XSD partial order), and date/time/duration arithmetic.

Where Oxigraph (0.5) departs from the specification we follow the
specification; the differential test (tests/expr/test_expr_oxigraph.py)
recognises each such case:
- integers and decimals are exact (Oxigraph: 64-bit integers, decimals with
  18 fractional digits that overflow near 1.7e20 and fail on some divisions);
  decimal division keeps 18 truncated fractional digits, as Oxigraph does;
- false < true (Oxigraph cannot order booleans), NaN compares false rather
  than erroring, and identical terms are not "equal" for `<=` unless their
  type is ordered (Oxigraph: <a> <= <a> is true, NaN >= NaN is true);
- the EBV of an ill-formed numeric/boolean literal is false, not an error;
- casts follow XPath: strings are whitespace-collapsed first, a double cast
  to string outside [1e-6, 1e6) uses scientific notation ("1.0E7"), casts
  between duration types drop what the target cannot hold, double/float to
  integer truncates exactly (Oxigraph goes through an inexact fixed-point
  product); to decimal it gives the shortest decimal reading back as the
  same double, as Oxigraph intends ("0.1", not 0.1000000000000000055...);
- REGEX/REPLACE use XPath regular expressions (`\\s` is only [ \\t\\n\\r],
  `\\w` excludes punctuation such as "_", `.` excludes CR, `$` is the very
  end, class subtraction, back-references), REPLACE's replacement string
  uses `$N`, `\\$` and `\\\\`, and a pattern matching "" is an error;
- derived integer types keep their datatype (DATATYPE("1"^^xsd:byte) is
  xsd:byte; Oxigraph turns them into xsd:integer) and out-of-range values
  ("300"^^xsd:byte) are ill-formed; STRDT and variables' terms are returned
  as given, not canonicalised;
- `+` adds a duration to a date/time in either order.

Not supported: EXISTS and aggregates (UnsupportedExpression at compile
time), extension functions other than the XSD casts, a base IRI for IRI()
(relative IRIs are an error), values of xsd:gYear & co. (compared by term
equality only), Unicode block escapes in regular expressions.

NOW() is read once per call of a compiled function, BNODE(str) is stable
within one call; compiled functions using them must not be shared between
threads. Each distinct N-Triples term is parsed once (memoised), and a pure
sub-expression of a single variable is computed once per distinct term.
"""

from rsep.plugin.expr.closures import MEMO_SIZE
from rsep.plugin.expr.compile import compile_expr, compile_filter, compile_value
from rsep.plugin.expr.errors import ExprError, UnsupportedExpression
from rsep.plugin.expr.values import stored_nt

__all__ = [
    "MEMO_SIZE",
    "ExprError",
    "UnsupportedExpression",
    "compile_expr",
    "compile_filter",
    "compile_value",
    "stored_nt",
]
