"""Micro-benchmark of the compiled expression evaluator (rsep.plugin.expr).

Measures FILTER evaluations per second on realistic solution mappings (a
pool of events whose terms repeat, as partial matches in the NFA runtime
re-present the same bindings) for three stateful filters, and compares in
the same run with:
- "no term cache": the same closures with N-Triples parsing not memoised,
  i.e. what every evaluation would cost without the per-term cache;
- "oxigraph/query": one pyoxigraph `SELECT * WHERE { VALUES ... FILTER }`
  query per mapping, the alternative the runtime would otherwise use;
- "oxigraph/batch": one query whose VALUES holds the whole pool, Oxigraph's
  own per-row cost when the query overhead is amortised (a lower bound no
  per-candidate call can reach, shown for scale).

Run: .venv/bin/python bench/bench_expr.py [--seconds 1.0]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Mapping

from rsep.plugin.algebra.sparql import (
    XSD_DECIMAL,
    XSD_DOUBLE,
    XSD_INTEGER,
    BinaryOp,
    Expr,
    FunctionCall,
    Literal,
    Var,
)
from rsep.plugin.expr import compile as expr_compile
from rsep.plugin.expr import compile_filter
from rsep.plugin.expr.compile import MEMO_SIZE
from rsep.plugin.expr.values import parse_term
from rsep.plugin.terms import literal_nt

Mapping_ = Mapping[str, str]

FILTERS: dict[str, tuple[Expr, str]] = {
    "?p2 < ?p1": (BinaryOp("<", Var("p2"), Var("p1")), "?p2 < ?p1"),
    "?amount2 * 10 >= ?amount1 && ?id2 = ?id1": (
        BinaryOp(
            "&&",
            BinaryOp(">=", BinaryOp("*", Var("amount2"), Literal("10", XSD_INTEGER)), Var("amount1")),
            BinaryOp("=", Var("id2"), Var("id1")),
        ),
        "?amount2 * 10 >= ?amount1 && ?id2 = ?id1",
    ),
    'REGEX(?name, "^ali", "i")': (
        FunctionCall("REGEX", (Var("name"), Literal("^ali"), Literal("i"))),
        'REGEX(?name, "^ali", "i")',
    ),
}


def make_events(count: int, rng: random.Random, unique: bool = False) -> list[dict[str, str]]:
    """Events: prices as doubles, amounts as decimals, ids as IRIs, names as strings.
    With `unique`, every term is new (no cache can help)."""
    names = ["Alice", "alina", "Bob", "Carol", "ALIster", "dave", "Mallory", "alice"]
    events = []
    for index in range(count):
        suffix = f"{index:07d}" if unique else ""
        events.append(
            {
                "p": literal_nt(f"{rng.uniform(10, 20):.2f}{suffix}", XSD_DOUBLE),
                "amount": literal_nt(f"{rng.randint(1, 100_000) / 100:.2f}{suffix}", XSD_DECIMAL),
                "id": f"<http://example.org/account/{rng.randint(0, 20)}>",
                "name": literal_nt(names[index % len(names)] + str(rng.randint(0, 9)) + suffix),
            }
        )
    return events


def make_pool(size: int, seed: int = 7, unique: bool = False) -> list[dict[str, str]]:
    """Candidate (partial match, event) pairs as the NFA presents them: a
    partial match's bindings (suffix 1) and the new event's (suffix 2).
    Without `unique`, `size` pairs are drawn from `size` events, so terms
    repeat as they do when one event is tested against many partial matches."""
    rng = random.Random(seed)
    events = make_events(2 * size if unique else size, rng, unique)
    pool = []
    for index in range(size):
        if unique:
            first, second = events[2 * index], events[2 * index + 1]
        else:
            first, second = rng.choice(events), rng.choice(events)
        pool.append(
            {
                "p1": first["p"],
                "p2": second["p"],
                "amount1": first["amount"],
                "amount2": second["amount"],
                "id1": first["id"],
                "id2": second["id"],
                "name": second["name"],
            }
        )
    return pool


def rate(function: Callable[[Mapping_], object], pool: list[dict[str, str]], seconds: float) -> float:
    """Evaluations per second of `function` cycling over the pool for about `seconds`."""
    count = 0
    size = len(pool)
    started = time.perf_counter()
    deadline = started + seconds
    while True:
        for index in range(size):
            function(pool[index])
        count += size
        now = time.perf_counter()
        if now >= deadline:
            return count / (now - started)


def uncached(expr: Expr) -> Callable[[Mapping_], bool]:
    """The same compiled filter without its caches: every term parsed, every
    single-variable sub-expression recomputed, on every evaluation."""
    expr_compile.parse_term = parse_term.__wrapped__  # type: ignore[attr-defined]
    expr_compile.MEMO_SIZE = 0  # type: ignore[misc]
    try:
        return compile_filter(expr)
    finally:
        expr_compile.parse_term = parse_term
        expr_compile.MEMO_SIZE = MEMO_SIZE  # type: ignore[misc]


def cold_rate(expr: Expr, size: int) -> float:
    """Evaluations per second when every term is new: one pass over fresh mappings."""
    pool = make_pool(size, seed=11, unique=True)
    parse_term.cache_clear()
    compiled = compile_filter(expr)
    started = time.perf_counter()
    for mapping in pool:
        compiled(mapping)
    return size / (time.perf_counter() - started)


def oxigraph_baselines(
    text: str, pool: list[dict[str, str]], seconds: float
) -> tuple[float, float, list[bool]] | None:
    try:
        import pyoxigraph
    except ImportError:
        return None
    store = pyoxigraph.Store()
    names = sorted(pool[0])
    head = " ".join(f"?{name}" for name in names)

    def row(mapping: Mapping_) -> str:
        return "(" + " ".join(mapping[name] for name in names) + ")"

    def per_query(mapping: Mapping_) -> bool:
        query = f"ASK {{ VALUES ({head}) {{ {row(mapping)} }} FILTER({text}) }}"
        return bool(store.query(query))

    per_query_rate = rate(per_query, pool, seconds)
    batch = f"SELECT (COUNT(*) AS ?n) WHERE {{ VALUES ({head}) {{ {' '.join(row(m) for m in pool)} }} FILTER({text}) }}"
    runs = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        list(store.query(batch))
        runs += 1
    batch_rate = runs * len(pool) / (time.perf_counter() - started)
    return per_query_rate, batch_rate, [per_query(mapping) for mapping in pool]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    parser.add_argument("--pool", type=int, default=1000, help="distinct candidate mappings cycled over")
    parser.add_argument("--cold", type=int, default=200_000, help="fresh mappings for the cold measurement")
    arguments = parser.parse_args()
    pool = make_pool(arguments.pool)
    print("evaluations per second (higher is better)")
    print(
        f"{'filter':45s} {'compiled':>11s} {'cold':>11s} {'no caches':>11s} {'oxi query':>11s} {'oxi batch':>11s}"
    )
    ratios = []
    for label, (expr, text) in FILTERS.items():
        compiled = compile_filter(expr)
        compiled_rate = rate(compiled, pool, arguments.seconds)
        cold = cold_rate(expr, arguments.cold)
        uncached_rate = rate(uncached(expr), pool, arguments.seconds)
        oxigraph = oxigraph_baselines(text, pool, arguments.seconds)
        query_rate = batch_rate = float("nan")
        if oxigraph is not None:
            query_rate, batch_rate, expected = oxigraph
            assert [compiled(mapping) for mapping in pool] == expected, (
                f"{label}: results differ from Oxigraph"
            )
        print(
            f"{label:45s} {compiled_rate:11,.0f} {cold:11,.0f} {uncached_rate:11,.0f}"
            f" {query_rate:11,.0f} {batch_rate:11,.0f}"
        )
        ratios.append(
            (
                label,
                compiled_rate / uncached_rate,
                compiled_rate / query_rate,
                cold / query_rate,
                compiled_rate / batch_rate,
            )
        )
    print(
        "\nratios: compiled vs no caches | compiled vs oxigraph query | cold vs oxigraph query | compiled vs batch"
    )
    for label, *values in ratios:
        print(f"{label:45s} " + " | ".join(f"x{value:,.1f}" for value in values))


if __name__ == "__main__":
    main()
