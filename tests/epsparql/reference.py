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
- SeqRightJoin(Psi', Psi, F): Filter(F, SeqJoin(Psi', Psi)), plus every
  solution of Psi with no compatible solution of Psi' ending before it starts
  for which F holds (on the joined mapping, with Psi's interval);
- EqLeftJoin(Psi, Psi', F): Filter(F, EqJoin(Psi, Psi')), plus every solution
  of Psi with no compatible solution of Psi' on the same interval for which F
  holds (likewise);
- LeftJoin(Psi, Psi', F): joined pairs where F holds on the joined mapping
  (with the mandatory side's interval) and the optional side ends no later
  than the mandatory side (`t'_omega <= t_omega`, rsep's documented reading of
  the extracted `<`), plus every solution of Psi with no such partner;
- in all three, F is the optional group's own FILTERs (a `Filter` at the top of
  the optional side, as SPARQL's translation of OPTIONAL takes them), plus
  `LeftJoin.expr`;
- Filter(F, Psi): F evaluated with getDURATION()/getSTARTTIME()/getENDTIME()
  replaced by the solution's interval;
- Extend(Psi, ?v, E) (BIND, SPARQL 1.1 §18.5): each solution with ?v bound to
  E's value over it (the time functions read its interval), unchanged when E
  is an error; the interval is unchanged;
- Join(Psi, data) (VALUES): each solution joined with every compatible row
  (UNDEF binds nothing); the interval is unchanged (a row is no occurrence).

FILTER and BIND expressions are SPARQL expressions; they are evaluated by
Oxigraph (an `ASK { VALUES ... FILTER(...) }`, a `SELECT { VALUES ... BIND(...) }`
per distinct input), so errors behave as SPARQL says (an error is false, or
leaves the variable unbound). Timestamps are numbers of seconds; the time
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


@dataclass(frozen=True)
class BGP:
    """Juxtaposed triple patterns in one group: Join of their BGPs (§4.2)."""

    triples: tuple[TP, ...]

    def render(self) -> str:
        return "{ " + " ".join(f"{t.s} {t.p} {t.o} ." for t in self.triples) + " }"


@dataclass(frozen=True)
class PathTP:
    """`s step1/step2/... o` with steps `<p>`, `^<p>` or `(<p>|<q>)`: a path over triple
    occurrences (docs/semantics.md), each step one occurrence, the nodes in between
    existentially bound (not in the solution), the interval the hull of the occurrences."""

    s: Term
    steps: tuple[str, ...]
    o: Term

    def render(self) -> str:
        return f"{{ {self.s} {'/'.join(self.steps)} {self.o} . }}"


@dataclass(frozen=True)
class Extend:
    """`{ P BIND(expr AS ?var) }` (?var not a variable of P, as SPARQL requires)."""

    pattern: Pattern
    expr: str
    var: str

    def render(self) -> str:
        return f"{{ {self.pattern.render()} BIND({self.expr} AS ?{self.var}) }}"


@dataclass(frozen=True)
class Values:
    """`{ P VALUES (?a ...) { (...) ... } }`; None in a row is UNDEF."""

    pattern: Pattern
    names: tuple[str, ...]
    rows: tuple[tuple[str | None, ...], ...]

    def render(self) -> str:
        rows = " ".join("(" + " ".join("UNDEF" if t is None else t for t in row) + ")" for row in self.rows)
        names = " ".join("?" + name for name in self.names)
        return f"{{ {self.pattern.render()} VALUES ({names}) {{ {rows} }} }}"


Pattern = TP | Bin | LeftJoin | Filter | BGP | PathTP | Extend | Values

PREFIXES = f"PREFIX : <{EX}>\nPREFIX xsd: <{XSD}>\n"


def select_query(pattern: Pattern, projection: Sequence[str] | None = None, modifiers: str = "") -> str:
    """`modifiers`: "DISTINCT" goes after SELECT, anything else (LIMIT, OFFSET) after WHERE."""
    words = modifiers.split()
    distinct = "DISTINCT " if "DISTINCT" in words else ""
    tail = " ".join(w for w in words if w != "DISTINCT")
    head = "*" if projection is None else " ".join(f"?{v}" for v in projection)
    return f"{PREFIXES}SELECT {distinct}{head} WHERE {{ {pattern.render()} }} {tail}\n"


def variables(pattern: Pattern) -> set[str]:
    if isinstance(pattern, TP | PathTP):
        return {t[1:] for t in (pattern.s, getattr(pattern, "p", ""), pattern.o) if t.startswith("?")}
    if isinstance(pattern, BGP):
        return set().union(*map(variables, pattern.triples))
    if isinstance(pattern, Filter):
        return variables(pattern.pattern)
    if isinstance(pattern, Extend):
        return variables(pattern.pattern) | {pattern.var}
    if isinstance(pattern, Values):
        return variables(pattern.pattern) | set(pattern.names)
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
    if isinstance(pattern, BGP):
        joined = {(frozenset(), float("inf"), float("-inf"))}
        for triple in pattern.triples:
            joined = {merge(a, b) for a in joined for b in _eval(triple, stream) if compatible(a[0], b[0])}
        return joined
    if isinstance(pattern, PathTP):
        return _path(pattern, stream)
    if isinstance(pattern, Filter):
        return {s for s in _eval(pattern.pattern, stream) if holds(pattern.expr, s[0], s[1], s[2])}
    if isinstance(pattern, Extend):
        return {_extend(pattern, s) for s in _eval(pattern.pattern, stream)}
    if isinstance(pattern, Values):
        rows = [
            frozenset((n, t) for n, t in zip(pattern.names, row, strict=True) if t) for row in pattern.rows
        ]
        solutions = _eval(pattern.pattern, stream)
        return {(m | row, a, b) for m, a, b in solutions for row in rows if compatible(m, row)}
    if isinstance(pattern, LeftJoin) or pattern.op in ("OPTIONALSEQ", "EQUALSOPTIONAL"):
        return _optional(pattern, stream)
    left = _eval(pattern.left, stream)
    right = _eval(pattern.right, stream)
    op = pattern.op
    if op == "UNION":
        return left | right
    if op in ("JOIN", "SEQ", "EQUALS"):
        return {merge(a, b) for a in left for b in right if compatible(a[0], b[0]) and _related(op, a, b)}
    raise ValueError(op)


def _optional(pattern: Bin | LeftJoin, stream: frozenset[Occurrence]) -> set[Solution]:
    """LeftJoin, SeqRightJoin and EqLeftJoin with their condition F (see the module docstring)."""
    if isinstance(pattern, Bin) and pattern.op == "OPTIONALSEQ":  # SeqRightJoin(Ψ' = left, Ψ = right, F)
        optional_side, mandatory_side = pattern.left, pattern.right
    else:
        mandatory_side, optional_side = pattern.left, pattern.right
    optional_side, conditions = _peel(optional_side)
    if isinstance(pattern, LeftJoin) and pattern.expr is not None:
        conditions.append(pattern.expr)
    mandatory, optional = _eval(mandatory_side, stream), _eval(optional_side, stream)

    def condition(joined: Mapping_, interval: Solution) -> bool:
        return all(holds(expr, joined, interval[1], interval[2]) for expr in conditions)

    def related(m: Solution, o: Solution) -> bool:
        if isinstance(pattern, LeftJoin):
            return o[2] <= m[2]
        return o[2] < m[1] if pattern.op == "OPTIONALSEQ" else o[1:] == m[1:]

    out: set[Solution] = set()
    for m in mandatory:
        partners = [o for o in optional if compatible(m[0], o[0]) and related(m, o)]
        blocked = False
        for o in partners:
            joined = merge(m, o)
            if condition(joined[0], m):
                blocked = True
            # LeftJoin's F reads the mandatory side's interval; Filter(F, SeqJoin/EqJoin) the joined one
            if condition(joined[0], m if isinstance(pattern, LeftJoin) else joined):
                out.add(joined)
        if not blocked:
            out.add(m)
    return out


def _peel(pattern: Pattern) -> tuple[Pattern, list[str]]:
    """An optional group's own FILTERs (its top-level `Filter`s) and what is under them."""
    conditions: list[str] = []
    while isinstance(pattern, Filter):
        conditions.append(pattern.expr)
        pattern = pattern.pattern
    return pattern, conditions


def _path(pattern: PathTP, stream: frozenset[Occurrence]) -> set[Solution]:
    """Chains of occurrences, one per step; the end nodes bound to s and o."""
    chains: set[tuple[str, str, float, float]] = set()  # (from node, to node, start, end)
    for index, step in enumerate(pattern.steps):
        hops = _hops(step, stream)
        if index == 0:
            chains = set(hops)
        else:
            chains = {
                (a, d, min(s1, s2), max(e1, e2)) for a, b, s1, e1 in chains for c, d, s2, e2 in hops if b == c
            }
    out: set[Solution] = set()
    for first, last, start, end in chains:
        mapping: dict[str, str] = {}
        ok = True
        for term, value in ((pattern.s, first), (pattern.o, last)):
            if term.startswith("?"):
                ok = ok and mapping.setdefault(term[1:], value) == value
            else:
                ok = ok and term == value
        if ok:
            out.add((frozenset(mapping.items()), start, end))
    return out


def _hops(step: str, stream: frozenset[Occurrence]) -> list[tuple[str, str, float, float]]:
    inverse = step.startswith("^")
    options = set(step.lstrip("^").strip("()").split("|"))
    return [
        ((o, s, start, end) if inverse else (s, o, start, end))
        for (s, p, o), start, end in stream
        if p in options
    ]


def _extend(pattern: Extend, solution: Solution) -> Solution:
    mapping, start, end = solution
    found = value(pattern.expr, mapping, start, end)
    return solution if found is None else (mapping | {(pattern.var, found)}, start, end)


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
    text, values = _bound(expr, mapping, start, end)
    result = _STORE.query(f"{PREFIXES}ASK {{ {values} FILTER({text}) }}")
    return bool(result)


@lru_cache(maxsize=200_000)
def value(expr: str, mapping: Mapping_, start: float, end: float) -> str | None:
    """The value of `expr` over the solution (N-Triples), None when it is an error."""
    text, values = _bound(expr, mapping, start, end)
    solutions = _STORE.query(f"{PREFIXES}SELECT ?__r WHERE {{ {values} BIND({text} AS ?__r) }}")
    assert isinstance(solutions, pyoxigraph.QuerySolutions)
    found = next(iter(solutions))["__r"]
    return None if found is None else str(found)


def _bound(expr: str, mapping: Mapping_, start: float, end: float) -> tuple[str, str]:
    """`expr` with the time functions as variables, and a VALUES row binding them and the
    solution's variables."""
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
    return text, values


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
