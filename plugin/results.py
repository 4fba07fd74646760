"""Matches as query results: projection, and the CLI's two output formats.

`jsonl`: one object per match, `{"start": T, "end": T, "bindings": {...}}`,
T as the input wrote it, bindings as N-Triples terms, unbound variables
omitted. `srj`: SPARQL 1.1 Query Results JSON of the projected variables
(https://www.w3.org/TR/sparql11-results-json/).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from rsep.plugin.algebra.events import ConstructForm, SelectForm
from rsep.plugin.algebra.sparql import IRI, XSD_STRING, BNode, Literal, TriplePattern, Var
from rsep.plugin.compile.plan import QueryPlan
from rsep.plugin.events import GraphEvent
from rsep.plugin.expr import ExprError, compile_expr
from rsep.plugin.nfa.runtime import Match
from rsep.plugin.terms import nt_to_term, term_to_nt


@dataclass(frozen=True, slots=True)
class Solution:
    """One projected match, with the events it came from."""

    match: Match
    events: tuple[GraphEvent, ...]
    bindings: dict[str, str]
    triples: tuple[tuple[str, str, str], ...] | None = None
    """CONSTRUCT: the instantiated template; None for SELECT."""


class Projector:
    """SELECT's projection applied to matches, `(expr AS ?v)` included; with
    DISTINCT, a projected row is reported the first time only."""

    def __init__(self, plan: QueryPlan) -> None:
        self.names = plan.output_vars
        form = plan.query.form
        self.template = form.template if isinstance(form, ConstructForm) else None
        self.distinct = isinstance(form, SelectForm) and form.distinct
        self._columns: list[tuple[str, Callable[[Mapping[str, str]], str] | None]] = []
        projection = form.projection if isinstance(form, SelectForm) else None
        if projection is None:
            self._columns = [(name, None) for name in self.names]
        else:
            self._columns = [
                (p.var.name, None if p.expr is None else compile_expr(p.expr)) for p in projection
            ]
        self._seen: set[tuple[tuple[str, str], ...]] = set()

    def project(self, mapping: Mapping[str, str]) -> dict[str, str] | None:
        row: dict[str, str] = {}
        for name, compute in self._columns:
            if compute is None:
                if name in mapping:
                    row[name] = mapping[name]
                continue
            with contextlib.suppress(ExprError):  # an error leaves it unbound (SPARQL 1.1 §18.2.4.1)
                row[name] = compute({**mapping, **row})
        if self.distinct:
            key = tuple(sorted(row.items()))
            if key in self._seen:
                return None
            self._seen.add(key)
        return row

    def solutions(self, matches: Iterable[Match], events: Sequence[GraphEvent]) -> list[Solution]:
        out = []
        for match in matches:
            contributing = tuple(events[i] for i in match.events)
            if self.template is not None:
                triples = instantiate(self.template, match.mapping, match_label(match))
                out.append(Solution(match, contributing, {}, triples))
                continue
            row = self.project(match.mapping)
            if row is not None:
                out.append(Solution(match, contributing, row))
        return out


def jsonl_line(solution: Solution) -> str:
    record: dict[str, object] = {
        "start": min((e.begins for e in solution.events), key=lambda t: t.seconds).json(),
        "end": solution.events[-1].time.json(),
    }
    if solution.triples is None:
        record["bindings"] = solution.bindings
    else:
        record["triples"] = [f"{s} {p} {o} ." for s, p, o in solution.triples]
    return json.dumps(record, ensure_ascii=False)


def match_label(match: Match) -> str:
    """A short, deterministic name for one match (blank nodes of its CONSTRUCT
    output are named after it, so recomputing a match reproduces them)."""
    digest = hashlib.sha256(repr((match.events, sorted(match.mapping.items()))).encode()).hexdigest()
    return digest[:16]


def instantiate(
    template: Sequence[TriplePattern], mapping: Mapping[str, str], label: str
) -> tuple[tuple[str, str, str], ...]:
    """CONSTRUCT's template under a mapping (SPARQL 1.1 §16.2): triples with an
    unbound variable or an invalid term position are left out; template blank
    nodes are fresh per match."""
    out: dict[tuple[str, str, str], None] = {}
    for pattern in template:
        s = _instantiate(pattern.subject, mapping, label)
        p = _instantiate(pattern.predicate, mapping, label)
        o = _instantiate(pattern.object, mapping, label)
        if s is None or p is None or o is None or s.startswith('"') or not p.startswith("<"):
            continue
        out[(s, p, o)] = None
    return tuple(out)


def _instantiate(term: object, mapping: Mapping[str, str], label: str) -> str | None:
    if isinstance(term, Var):
        return mapping.get(term.name)
    if isinstance(term, BNode):
        return f"_:m{label}t{re.sub(r'[^A-Za-z0-9]', '', term.label)}"
    try:
        return term_to_nt(term)  # type: ignore[arg-type]
    except TypeError:  # a property path: not allowed in a template
        return None


def srj_document(names: Sequence[str], solutions: Iterable[Solution]) -> str:
    bindings = [{k: srj_term(v) for k, v in s.bindings.items()} for s in solutions]
    return json.dumps({"head": {"vars": list(names)}, "results": {"bindings": bindings}}, ensure_ascii=False)


def srj_term(text: str) -> dict[str, str]:
    term = nt_to_term(text)
    if isinstance(term, IRI):
        return {"type": "uri", "value": term.value}
    if isinstance(term, BNode):
        return {"type": "bnode", "value": term.label}
    assert isinstance(term, Literal)
    out = {"type": "literal", "value": term.lexical}
    if term.language is not None:
        out["xml:lang"] = term.language
    elif term.datatype != XSD_STRING:
        out["datatype"] = term.datatype
    return out
