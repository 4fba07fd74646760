"""C-SPARQL's timestamp(?v [, stream]) as SPARQL that Oxigraph evaluates.

C-SPARQL (EDBT 2010, §2.7): the function "returns the timestamp of the RDF
stream element producing the binding [of ?v] ... If the variable gets bound
multiple times, the function returns the most recent timestamp". A binding
of ?v is produced by the triple patterns that mention ?v: in a solution,
each such pattern is instantiated to one triple, and that triple may occur
in the windows several times. So timestamp(?v) is the latest occurrence, in
the evaluation's windows, of any instantiated pattern that mentions ?v (of
the named stream only, with the second argument).

The rewrite keeps Oxigraph doing the work: inside a FILTER, timestamp(?v)
becomes a call of the extension function LATEST_FUNCTION (or
LATEST_IN_FUNCTION) with the subject, predicate and object of every such
pattern as arguments; the store adapter answers the call from a table of the
windows' triples and their latest timestamps. The patterns considered are
those of the FILTER's group and of the plain groups (and window blocks)
nested in it, where every variable is bound; patterns in OPTIONAL, UNION,
MINUS or GRAPH blocks are not.

The stream argument must be one of the query's FROM STREAM IRIs: the paper
says it "can be obtained through SPARQL GRAPH clause", but the windows are
merged into the default graph (§3.2), so no GRAPH ?g binds a stream, and a
variable or another IRI would make every call an error (docs/semantics.md).
Refusals carry the position of the timestamp( call.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from rsep.plugin.algebra.analysis import triple_vars
from rsep.plugin.algebra.events import TIMESTAMP_FUNCTION, WindowElement
from rsep.plugin.algebra.sparql import (
    BGP,
    IRI,
    BNode,
    Expr,
    Filter,
    FunctionCall,
    GroupPattern,
    Literal,
    Node,
    SourcePosition,
    TriplePattern,
    Var,
)
from rsep.plugin.compile.nfa_compiler import CompileError
from rsep.plugin.vocabulary import RSEP
from rsep.plugin.windows.tree import rebuild, walk

LATEST_FUNCTION = RSEP + "latestTime"
"""latestTime(s1, p1, o1, s2, p2, o2, ...): the latest timestamp of any of these triples in the
evaluation's windows; unbound (an error) when none of them is a window triple."""
LATEST_IN_FUNCTION = RSEP + "latestTimeIn"
"""latestTimeIn(stream, s1, p1, o1, ...): the same, in the window(s) of one stream."""


class TimestampFunctionError(CompileError):
    """A timestamp() call rsep cannot evaluate: the message says why, the position (when the
    query was parsed) where the call is written."""


def uses_timestamp(node: Node) -> bool:
    return any(_is_timestamp(n) for n in walk(node))


def rewrite_timestamps(pattern: GroupPattern, streams: Collection[str]) -> GroupPattern:
    """`pattern` with timestamp() calls in FILTERs replaced by latestTime calls; `streams` are
    the IRIs a call's second argument may name (the query's FROM STREAMs)."""
    result: GroupPattern = rebuild(pattern, lambda node: _rewrite_group(node, streams))
    return result


def check_no_timestamp(node: Node, where: str) -> None:
    call = next((n for n in walk(node) if _is_timestamp(n)), None)
    if call is not None:
        message = f"timestamp() may only be used in a FILTER, not in {where}"
        raise TimestampFunctionError(message, call.position)


def _is_timestamp(node: Any) -> bool:
    return isinstance(node, FunctionCall) and node.name == IRI(TIMESTAMP_FUNCTION)


def _rewrite_group(node: Any, streams: Collection[str]) -> Any:
    if not isinstance(node, GroupPattern) or not any(
        isinstance(e, Filter) and uses_timestamp(e) for e in node.elements
    ):
        return node
    triples = _bound_triples(node)
    elements = tuple(
        Filter(rebuild(e.expr, lambda n: _call(n, triples, streams))) if isinstance(e, Filter) else e
        for e in node.elements
    )
    return GroupPattern(elements)


def _bound_triples(group: GroupPattern) -> list[TriplePattern]:
    """Triple patterns of the group and of the plain groups and window blocks nested in it."""
    found: list[TriplePattern] = []
    for element in group.elements:
        if isinstance(element, BGP):
            found.extend(element.triples)
        elif isinstance(element, GroupPattern):
            found.extend(_bound_triples(element))
        elif isinstance(element, WindowElement):
            found.extend(_bound_triples(element.pattern))
    return found


def _call(node: Any, triples: list[TriplePattern], streams: Collection[str]) -> Any:
    if not _is_timestamp(node):
        return node
    args, at = node.args, node.position
    if not args or not isinstance(args[0], Var) or len(args) > 2:
        raise TimestampFunctionError(
            "timestamp takes a variable and, optionally, a stream: timestamp(?v [, <s>])", at
        )
    var: Var = args[0]
    binding = [t for t in triples if var.name in triple_vars(t)]
    if not binding:
        raise TimestampFunctionError(
            f"timestamp(?{var.name}): no triple pattern of the FILTER's group binds ?{var.name}", at
        )
    terms: list[Expr] = []
    for triple in binding:
        terms.extend(_terms(triple, var, at))
    if len(args) == 2:
        return FunctionCall(IRI(LATEST_IN_FUNCTION), (_stream(args[1], var, streams, at), *terms))
    return FunctionCall(IRI(LATEST_FUNCTION), tuple(terms))


def _stream(arg: Expr, var: Var, streams: Collection[str], at: SourcePosition | None) -> IRI:
    """The second argument: one of the query's streams, named by its IRI."""
    known = ", ".join(f"<{s}>" for s in streams)
    if not isinstance(arg, IRI):
        written = f"?{arg.name}" if isinstance(arg, Var) else "..."
        raise TimestampFunctionError(
            f"timestamp(?{var.name}, {written}): the second argument names a stream by its IRI ({known}); "
            "the windows are merged into the default graph, so no GRAPH ?g binds a stream",
            at,
        )
    if arg.value not in streams:
        raise TimestampFunctionError(
            f"timestamp(?{var.name}, <{arg.value}>): <{arg.value}> is not a stream of the query "
            f"(FROM STREAM {known})",
            at,
        )
    return arg


def _terms(triple: TriplePattern, var: Var, at: SourcePosition | None) -> list[Expr]:
    parts = (triple.subject, triple.predicate, triple.object)
    if any(isinstance(p, BNode) for p in parts):
        raise TimestampFunctionError(
            f"timestamp(?{var.name}): write the patterns that bind ?{var.name} with variables, "
            "not blank nodes",
            at,
        )
    if not isinstance(triple.predicate, Var | IRI):
        raise TimestampFunctionError(
            f"timestamp(?{var.name}): a property path does not bind ?{var.name} through one triple", at
        )
    terms: list[Expr] = []
    for part in parts:
        assert isinstance(part, Var | IRI | Literal)
        terms.append(part)
    return terms
