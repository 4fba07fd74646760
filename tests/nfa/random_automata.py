"""Random automata and streams for the differential tests of the NFA runtimes
(`test_lean.py`, `test_shared_buffer.py`).

An automaton is a SPAseq sequence over GPMs `G0`..`G3` (`tests/nfa/patterns.py` reads it):
2-4 elements, each a GPM or an `&`/`|` pair, with `+`, `?` or `!` (never `?`/`!` first or
last), joined by random strategies, with a random strategy between Kleene+ occurrences and an
optional WITHIN. Every GPM certainly binds the partition key ?k and its own value ?vN (or
leaves ?vN unbound in some rows, when it is declared optional), and some bind a shared ?x
that runs join on. Residual filters compare a GPM's value with an earlier GPM's or with a
constant (the shapes the lean runtime compiles), or are other expressions (its general
path). Terms mix integers, decimals, doubles (NaN too), floats, strings, IRIs and dates, so
comparisons meet type errors and mixed numeric types.

A stream is a list of events `(time, {gpm name: [mappings]})`; several events may share a
time, an event may match several GPMs or none, and a GPM may give several (or duplicate)
rows for one event.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

from rsep.plugin.algebra.events import SelectionStrategy
from rsep.plugin.algebra.sparql import BinaryOp, Expr, FunctionCall, Literal, Var
from rsep.plugin.compile.nfa_compiler import CompileError
from rsep.plugin.nfa.automaton import Automaton, GpmVariables, ResidualFilter
from rsep.plugin.nfa.runs import Group
from tests.nfa.patterns import Event, compile_pattern, groups_of

XSD = "http://www.w3.org/2001/XMLSchema#"
TERMS = (
    f'"1"^^<{XSD}integer>',
    f'"2"^^<{XSD}integer>',
    f'"3"^^<{XSD}integer>',
    f'"2.0"^^<{XSD}decimal>',
    f'"2.5"^^<{XSD}decimal>',
    f'"1.5E0"^^<{XSD}double>',
    f'"3.0E0"^^<{XSD}double>',
    f'"NaN"^^<{XSD}double>',
    f'"2"^^<{XSD}float>',
    '"abc"',
    '"b"',
    "<urn:a>",
    f'"2020-01-01T00:00:00Z"^^<{XSD}dateTime>',
    f'"2021-01-01T00:00:00Z"^^<{XSD}dateTime>',
)
NUMBERS = TERMS[:7]
"""Mostly numbers, so that comparisons hold often enough for matches."""
OPS = ("<", ">", "<=", ">=", "=", "!=")
NAMES = ("G0", "G1", "G2", "G3")


@dataclass(frozen=True)
class Case:
    automaton: Automaton
    index: dict[str, int]
    text: str
    optional: frozenset[str]
    """GPMs whose ?vN some rows leave unbound."""
    shared: frozenset[str]
    """GPMs binding ?x."""

    def __repr__(self) -> str:
        return f"{self.text}  within={self.automaton.within}\n{self.automaton.dump()}"


@st.composite
def atoms(draw: st.DrawFn) -> str:
    first = draw(st.sampled_from(NAMES))
    if draw(st.integers(0, 5)) == 0:
        second = draw(st.sampled_from([n for n in NAMES if n != first]))
        return f"({first} {draw(st.sampled_from('&|'))} {second})"
    return first


@st.composite
def texts(draw: st.DrawFn, modifiers: tuple[str, ...] = ("", "", "+", "?", "!")) -> str:
    size = draw(st.integers(2, 4))
    parts = []
    for position in range(size):
        inner = position not in (0, size - 1)
        mod = draw(st.sampled_from(modifiers if inner else tuple(m for m in modifiers if m in ("", "+"))))
        parts.append(draw(atoms()) + mod)
    text = parts[0]
    for part in parts[1:]:
        text += f" {draw(st.sampled_from(',;:'))} {part}"
    return text


def _value(draw: st.DrawFn) -> Expr:
    """A constant: a number of some kind, or a string (a type error against numbers)."""
    term = draw(st.sampled_from((*NUMBERS, '"abc"')))
    lexical, _, datatype = term.partition("^^")
    return Literal(lexical.strip('"'), datatype.strip("<>") or XSD + "string")


@st.composite
def residuals(draw: st.DrawFn, gpm: int, earlier: list[int]) -> tuple[ResidualFilter, ...]:
    """A filter over ?v<gpm> and an earlier GPM's value (a stateful filter), or none."""
    if not earlier or draw(st.integers(0, 3)) == 0:
        return ()
    other = f"v{draw(st.sampled_from(earlier))}"
    mine = Var(f"v{gpm}")
    kind = draw(st.sampled_from(("cmp", "cmp", "cmp", "const-and", "general", "flipped")))
    op = draw(st.sampled_from(OPS))
    expr: Expr
    if kind == "cmp":
        expr = BinaryOp(op, mine, Var(other))
    elif kind == "flipped":
        expr = BinaryOp(op, Var(other), mine)
    elif kind == "const-and":
        against = BinaryOp(draw(st.sampled_from(OPS)), Var(other), _value(draw))
        expr = BinaryOp("&&", BinaryOp(op, mine, Var(other)), against)
    else:
        expr = BinaryOp(
            "||",
            FunctionCall("BOUND", (Var(other),)),
            BinaryOp(op, FunctionCall("STR", (mine,)), FunctionCall("STR", (Var(other),))),
        )
        if draw(st.booleans()):
            expr = FunctionCall("BOUND", (Var(other),))
    names = frozenset(v.name for v in _vars(expr))
    return (ResidualFilter(expr, names),)


def _vars(expr: object) -> list[Var]:
    if isinstance(expr, Var):
        return [expr]
    if isinstance(expr, BinaryOp):
        return _vars(expr.left) + _vars(expr.right)
    if isinstance(expr, FunctionCall):
        return [v for a in expr.args for v in _vars(a)]
    return []


@st.composite
def cases(draw: st.DrawFn, modifiers: tuple[str, ...] = ("", "", "+", "?", "!"), anys: bool = True) -> Case:
    text = draw(texts(modifiers))
    if not anys:
        text = text.replace(":", ";")
    names = [n for n in NAMES if n in text]
    optional = frozenset(n for n in names if draw(st.integers(0, 3)) == 0)
    shared = frozenset(n for n in names if draw(st.integers(0, 2)) == 0)
    variables = {n: ["k", f"v{NAMES.index(n)}", *(["x"] if n in shared else [])] for n in names}
    within = draw(st.none() | st.integers(1, 6).map(float))
    iteration = draw(st.sampled_from((None, *SelectionStrategy)))
    try:
        automaton, index = compile_pattern(
            text, variables=variables, within=within, key=("k",), kleene_iteration=iteration
        )
    except CompileError:
        from hypothesis import reject

        reject()
    filters = []
    seen: list[int] = []
    for name in sorted(index, key=index.__getitem__):
        number = NAMES.index(name)
        filters.append(draw(residuals(number, seen)))
        seen.append(number)
    certain = tuple(
        frozenset(["k", *([] if n in optional else [f"v{NAMES.index(n)}"])])
        for n in sorted(index, key=index.__getitem__)
    )
    declared = tuple(
        GpmVariables(frozenset(variables[n]), c)
        for n, c in zip(sorted(index, key=index.__getitem__), certain, strict=True)
    )
    automaton = replace(automaton, residuals=tuple(filters), variables=declared)
    return Case(automaton, index, text, optional, shared)


@st.composite
def streams(
    draw: st.DrawFn, case: Case, keys: tuple[str, ...] = ("<urn:k1>",), size: int = 14
) -> list[Event]:
    """Events at integer times 0..8 (ties allowed), in time order."""
    events: list[Event] = []
    for _ in range(draw(st.integers(3, size))):
        time = float(draw(st.integers(0, 8)))
        matched: dict[str, list[dict[str, str]]] = {}
        for name in case.index:
            if draw(st.integers(0, 2)) == 0:
                continue
            rows = []
            for _ in range(draw(st.sampled_from((1, 1, 1, 1, 2)))):
                row = {"k": draw(st.sampled_from(keys))}
                if name not in case.optional or draw(st.booleans()):
                    pool = TERMS if draw(st.booleans()) else NUMBERS
                    row[f"v{NAMES.index(name)}"] = draw(st.sampled_from(pool))
                if name in case.shared:
                    row["x"] = draw(st.sampled_from(("<urn:x1>", "<urn:x2>")))
                rows.append(row)
            matched[name] = rows
        events.append((time, matched))
    return sorted(events, key=lambda e: e[0])


def groups(case: Case, events: list[Event]) -> list[Group]:
    return groups_of(events, case.index)


def runs_of(state: object) -> dict[int, list[tuple[object, ...]]]:
    """A state's runs in a comparable form: per NFA state, in order, what a run is."""
    from rsep.plugin.nfa.runs import unwind

    out: dict[int, list[tuple[object, ...]]] = {}
    for state_id, runs in state.runs.items():  # type: ignore[attr-defined]
        if runs:
            out[state_id] = [
                (r.state, r.mapping, r.start_time, r.start_rank, r.last_rank, unwind(r.path)) for r in runs
            ]
    return out
