"""RSEP-QL's selection and consumption policies on SEQ (EKAW 2016, §4.3-4.4), written
from the papers and independent of rsep's NFA: the tests compare rsep against it.

The pattern is a tree of binary SEQ nodes over triple patterns, with FILTERs over any
node (`reference.TP`, `reference.Bin("SEQ", ...)`, `reference.Filter`); a chain
`A SEQ B SEQ C` is the tree `(A SEQ B) SEQ C` (EP-SPARQL §5, rules 8-9). Each node is
evaluated bottom-up into its *detections*: its solutions `(mapping, start, end)` in the
order they are detected, by end time and, at one time, in the order they arrive.

- A triple pattern detects every triple occurrence it matches, at its time. At one time
  they arrive in stream order (the position of their graph in the stream, then the
  solution's bindings, sorted). Each triple pattern reads the stream through its own
  window (RSEP-QL's BEP `EVENT w_j P`, each with its own input `I_i(w_j)`, §4.4): what
  one of them consumes, another still reads.
- SEQ^c / SEQ^r (L, R), Eqs. 10-11: a detection of L waits from its time on. At each
  evaluation time t (every timestamp: EP-SPARQL's content-change report policy), the
  detections of R at t, in order, each select, among the waiting detections of L that are
  compatible with it and end before it starts, the first (chronological) or the last
  (recent) detected; the two, merged, are the node's detection at t, in that order. The
  selected detection of L is consumed (P^c, P^r: it is no longer in the node's input at
  the next evaluations); one of R that selects none is gone too (it occurred at t).
- FILTER(F, P): the detections of P for which F holds, in order. F applies to what P
  selected: a detection F rejects is not given back to P's operands.
- Unrestricted: every compatible pair (Eq. 7; `reference.evaluate`, §4.2).
- A window (EP-SPARQL §5: a top-level `getDURATION() < d` conjunct, which EP-SPARQL
  attaches to every binary rule of the query): a waiting detection that started more
  than d before t is pruned, so it is not selected at t; the FILTER still applies.

Streams here hold each triple at most once per time (a triple given twice at one time is
one occurrence, which this reference does not model).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from tests.epsparql.harness import Event
from tests.epsparql.reference import TP, Bin, Filter, Pattern, Solution, _match, compatible, holds, merge

POLICIES = ("chronological", "recent")


def detections(
    pattern: Pattern, events: Sequence[Event], policy: str, window: float | None = None
) -> list[Solution]:
    """`pattern`'s detections under `policy` ("chronological" or "recent"), in detection order;
    `window` prunes waiting detections older than it (None: `window_of(pattern)`)."""
    assert policy in POLICIES, policy
    if window is None:
        window = window_of(pattern)
    if isinstance(pattern, TP):
        found = []
        for position, (time, graph) in enumerate(events):
            for triple in graph:
                mapping = _match(pattern, triple)
                if mapping is not None:
                    found.append(((time, position, sorted(mapping)), (mapping, time, time)))
        return [solution for _, solution in sorted(found, key=lambda item: item[0])]
    if isinstance(pattern, Filter):
        return [s for s in detections(pattern.pattern, events, policy, window) if holds(pattern.expr, *s)]
    assert isinstance(pattern, Bin) and pattern.op == "SEQ", pattern
    left = detections(pattern.left, events, policy, window)
    return _seq(left, detections(pattern.right, events, policy, window), policy, window)


def _seq(left: list[Solution], right: list[Solution], policy: str, window: float) -> list[Solution]:
    waiting: list[Solution] = []
    out: list[Solution] = []
    times = sorted({s[2] for s in left} | {s[2] for s in right})
    for time in times:
        for r in (s for s in right if s[2] == time):
            fits = [w for w in waiting if compatible(w[0], r[0]) and w[2] < r[1] and time - w[1] <= window]
            if fits:
                chosen = fits[0] if policy == "chronological" else fits[-1]
                waiting.remove(chosen)
                out.append(merge(chosen, r))
        waiting.extend(s for s in left if s[2] == time)
    return out


def chain(elements: Sequence[Pattern], filters: Sequence[str | None] = ()) -> Pattern:
    """`E1 SEQ E2 SEQ ... SEQ En` as the left-nested tree, `filters[k]` (if any) a FILTER over
    the node that ends with element k + 1 (k = 0 for E1 SEQ E2)."""
    node = elements[0]
    for index, element in enumerate(elements[1:]):
        node = Bin("SEQ", node, element)
        expr = filters[index] if index < len(filters) else None
        if expr is not None:
            node = Filter(node, expr)
    return node


_WINDOW = re.compile(r'^getDURATION\(\) < "PT(\d+)S"\^\^xsd:dayTimeDuration$')


def window_of(pattern: Pattern) -> float:
    """The smallest d of the `getDURATION() < "PTdS"` conjuncts of the FILTERs at the top of
    `pattern` (infinite without one)."""
    found = math.inf
    while isinstance(pattern, Filter):
        for conjunct in conjuncts(pattern.expr):
            match = _WINDOW.match(conjunct)
            if match:
                found = min(found, float(match.group(1)))
        pattern = pattern.pattern
    return found


def conjuncts(expr: str) -> list[str]:
    """The conjuncts of a FILTER the strategies write (`e`, `(e) && (f)` or `(e) || (f)`)."""
    if expr.startswith("(") and ") && (" in expr and ") || (" not in expr:
        return expr[1:-1].split(") && (")
    return [expr]
