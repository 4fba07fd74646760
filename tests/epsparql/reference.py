"""A brute-force reading of EP-SPARQL's formal semantics (WWW 2011, §4.2),
independent of rsep: the tests compare rsep against it.

A stream is a set of triple occurrences `((s, p, o), t, t')`; a solution is
`(mapping, t_alpha, t_omega)` with the mapping a frozenset of (variable,
N-Triples term) pairs. The operators are evaluated bottom-up exactly as
§4.2 defines them, on sets:

- BGP of one triple pattern: every occurrence it matches, with its interval;
- Join: compatible pairs, interval hull; Union: set union;
- SeqJoin: compatible pairs with `t_omega < t'_alpha`;
- EqJoin: compatible pairs with equal intervals;
- SeqRightJoin(Psi', Psi): SeqJoin(Psi', Psi), plus every solution of Psi
  with no compatible solution of Psi' ending before it starts;
- EqLeftJoin(Psi, Psi'): EqJoin, plus every solution of Psi with no compatible
  solution of Psi' on the same interval;
- LeftJoin(Psi, Psi', F): joined pairs where F holds on the joined mapping and
  the optional side ends no later than the mandatory side (`t'_omega <= t_omega`,
  rsep's documented reading of the extracted `<`), plus every solution of Psi
  with no such partner;
- Filter(F, Psi): F evaluated with getDURATION()/getSTARTTIME()/getENDTIME()
  replaced by the solution's interval.

FILTER expressions are SPARQL expressions; they are evaluated by Oxigraph
(an `ASK { VALUES ... FILTER(...) }` per distinct input), so errors behave as
SPARQL says (an error is false). Timestamps are numbers of seconds; the time
functions give `xsd:dayTimeDuration` and `xsd:dateTime` (seconds after the epoch),
as docs/semantics.md describes for numeric timestamps.

The Q-closure (§4.2, construct rules) is the least fixpoint of adding every
instantiated template triple with the interval of its solution. Templates
here hold no blank nodes (fresh blank nodes make the closure infinite).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from functools import lru_cache

import pyoxigraph

XSD = "http://www.w3.org/2001/XMLSchema#"
EX = "http://example.org/"

Term = str
"""An N-Triples term (`<iri>`, `"lex"^^<dt>`) or a variable (`?name`)."""
Mapping_ = frozenset[tuple[str, str]]
Solution = tuple[Mapping_, float, float]
Occurrence = tuple[tuple[str, str, str], float, float]


# --------------------------------------------------------------------------- patterns


@dataclass(frozen=True)
class TP:
    """One triple pattern (a BGP of one triple)."""

    s: Term
    p: Term
    o: Term

    def render(self) -> str:
        return f"{{ {self.s} {self.p} {self.o} . }}"


@dataclass(frozen=True)
class Bin:
    """A binary operator between two groups: JOIN (juxtaposition), SEQ, EQUALS,
    UNION, OPTIONALSEQ (left optional), EQUALSOPTIONAL (right optional)."""

    op: str
    left: Pattern
    right: Pattern

    def render(self) -> str:
        if self.op == "JOIN":
            return f"{{ {self.left.render()} {self.right.render()} }}"
        return f"{{ {self.left.render()} {self.op} {self.right.render()} }}"


@dataclass(frozen=True)
class LeftJoin:
    """SPARQL OPTIONAL: `{ L OPTIONAL { R FILTER(f) } }`."""

    left: Pattern
    right: Pattern
    expr: str | None = None

    def render(self) -> str:
        inner = self.right.render()
        if self.expr is not None:
            inner = f"{{ {inner} FILTER({self.expr}) }}"
        return f"{{ {self.left.render()} OPTIONAL {inner} }}"


@dataclass(frozen=True)
class Filter:
    pattern: Pattern
    expr: str

    def render(self) -> str:
        return f"{{ {self.pattern.render()} FILTER({self.expr}) }}"


Pattern = TP | Bin | LeftJoin | Filter

PREFIXES = f"PREFIX : <{EX}>\nPREFIX xsd: <{XSD}>\n"


def select_query(pattern: Pattern, projection: Sequence[str] | None = None) -> str:
    head = "*" if projection is None else " ".join(f"?{v}" for v in projection)
    return f"{PREFIXES}SELECT {head} WHERE {{ {pattern.render()} }}\n"


def variables(pattern: Pattern) -> set[str]:
    if isinstance(pattern, TP):
        return {t[1:] for t in (pattern.s, pattern.p, pattern.o) if t.startswith("?")}
    if isinstance(pattern, Filter):
        return variables(pattern.pattern)
    return variables(pattern.left) | variables(pattern.right)


# --------------------------------------------------------------------------- evaluation


def compatible(a: Mapping_, b: Mapping_) -> bool:
    da = dict(a)
    return all(da.get(k, v) == v for k, v in b)


def merge(a: Solution, b: Solution) -> Solution:
    return a[0] | b[0], min(a[1], b[1]), max(a[2], b[2])


def evaluate(pattern: Pattern, stream: Iterable[Occurrence]) -> set[Solution]:
    return _eval(pattern, frozenset(stream))


def _eval(pattern: Pattern, stream: frozenset[Occurrence]) -> set[Solution]:
    if isinstance(pattern, TP):
        out: set[Solution] = set()
        for triple, start, end in stream:
            mapping = _match(pattern, triple)
            if mapping is not None:
                out.add((mapping, start, end))
        return out
    if isinstance(pattern, Filter):
        return {s for s in _eval(pattern.pattern, stream) if holds(pattern.expr, s[0], s[1], s[2])}
    left = _eval(pattern.left, stream)
    right = _eval(pattern.right, stream)
    if isinstance(pattern, LeftJoin):
        out = set()
        for m in left:
            partners = [
                merge(m, o)
                for o in right
                if compatible(m[0], o[0])
                and o[2] <= m[2]
                and (pattern.expr is None or holds(pattern.expr, m[0] | o[0], m[1], m[2]))
            ]
            out.update(partners or [m])
        return out
    op = pattern.op
    if op == "UNION":
        return left | right
    if op in ("JOIN", "SEQ", "EQUALS"):
        return {merge(a, b) for a in left for b in right if compatible(a[0], b[0]) and _related(op, a, b)}
    if op == "OPTIONALSEQ":  # SeqRightJoin(left = optional, right = mandatory)
        out = {merge(a, b) for a in left for b in right if compatible(a[0], b[0]) and a[2] < b[1]}
        out |= {b for b in right if not any(compatible(a[0], b[0]) and a[2] < b[1] for a in left)}
        return out
    if op == "EQUALSOPTIONAL":  # EqLeftJoin(left = mandatory, right = optional)
        out = {merge(a, b) for a in left for b in right if compatible(a[0], b[0]) and a[1:] == b[1:]}
        out |= {a for a in left if not any(compatible(a[0], b[0]) and a[1:] == b[1:] for b in right)}
        return out
    raise ValueError(op)


def _related(op: str, a: Solution, b: Solution) -> bool:
    if op == "SEQ":
        return a[2] < b[1]
    if op == "EQUALS":
        return a[1:] == b[1:]
    return True


def _match(pattern: TP, triple: tuple[str, str, str]) -> Mapping_ | None:
    mapping: dict[str, str] = {}
    for term, value in zip((pattern.s, pattern.p, pattern.o), triple, strict=True):
        if term.startswith("?"):
            if mapping.setdefault(term[1:], value) != value:
                return None
        elif term != value:
            return None
    return frozenset(mapping.items())


# --------------------------------------------------------------------------- FILTER via Oxigraph

_STORE = pyoxigraph.Store()
_TIME = {
    "getDURATION()": "?__d",
    "getSTARTTIME()": "?__s",
    "getENDTIME()": "?__e",
}


def datetime_nt(seconds: float) -> str:
    moment = datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")
    return f'"{moment}"^^<{XSD}dateTime>'


def duration_nt(seconds: float) -> str:
    amount = Decimal(repr(seconds)).normalize()
    sign = "-" if amount < 0 else ""
    return f'"{sign}PT{format(abs(amount), "f")}S"^^<{XSD}dayTimeDuration>'


def holds(expr: str, mapping: Mapping_, start: float, end: float) -> bool:
    return _holds(expr, mapping, start, end)


@lru_cache(maxsize=200_000)
def _holds(expr: str, mapping: Mapping_, start: float, end: float) -> bool:
    text = expr
    for call, var in _TIME.items():
        text = re.sub(re.escape(call), var, text, flags=re.IGNORECASE)
    bound = dict(mapping)
    bound["__d"] = duration_nt(end - start)
    bound["__s"] = datetime_nt(start)
    bound["__e"] = datetime_nt(end)
    names = sorted(set(re.findall(r"\?(\w+)", text)))
    row = " ".join(bound.get(n, "UNDEF") for n in names)
    values = f"VALUES ({' '.join('?' + n for n in names)}) {{ ({row}) }}" if names else ""
    result = _STORE.query(f"{PREFIXES}ASK {{ {values} FILTER({text}) }}")
    return bool(result)


# --------------------------------------------------------------------------- Q-closure


@dataclass(frozen=True)
class Rule:
    template: tuple[tuple[Term, Term, Term], ...]
    where: Pattern


def closure(stream: Iterable[Occurrence], rules: Sequence[Rule]) -> frozenset[Occurrence]:
    current = frozenset(stream)
    while True:
        new: set[Occurrence] = set()
        for rule in rules:
            for mapping, start, end in _eval(rule.where, current):
                bound = dict(mapping)
                for template in rule.template:
                    terms = [bound.get(t[1:]) if t.startswith("?") else t for t in template]
                    if all(terms):
                        occurrence = ((terms[0], terms[1], terms[2]), start, end)
                        if occurrence not in current:
                            new.add(occurrence)  # type: ignore[arg-type]
        if not new:
            return current
        current = current | new


# --------------------------------------------------------------------------- results


def results(
    solutions: Iterable[Solution], projection: Sequence[str] | None = None
) -> set[tuple[frozenset[tuple[str, str]], float, float]]:
    """Solutions as comparable rows: projected bindings (bound ones), start, end."""
    out = set()
    for mapping, start, end in solutions:
        row = frozenset((k, v) for k, v in mapping if projection is None or k in projection)
        out.add((row, start, end))
    return out


def rsep_rows(lines: Iterable[Mapping[str, object]]) -> set[tuple[frozenset[tuple[str, str]], float, float]]:
    """rsep's jsonl objects in the same shape."""
    return {
        (frozenset(dict(line["bindings"]).items()), float(line["start"]), float(line["end"]))  # type: ignore[arg-type]
        for line in lines
    }


def iri(local: str) -> str:
    return f"<{EX}{local}>"


def integer(value: int) -> str:
    return f'"{value}"^^<{XSD}integer>'
