"""Micro-benchmark of the compiled expression evaluator (rsep.plugin.expr).

Measures FILTER evaluations per second for three stateful filters on
candidate mappings as the NFA runtime presents them (a partial match's
bindings plus a new event's; terms repeat, since one event is tested
against many partial matches), and compares, in the same run, with:
- "cold": every mapping made of terms never seen before (a single pass,
  caches cleared): the evaluator's worst case, no cache can help;
- "no caches": the same compiled closures with term parsing and
  single-variable sub-expressions not memoised, on the repeating pool;
- "oxi query": one pyoxigraph `ASK { VALUES ... FILTER(...) }` query per
  mapping, what the runtime would do without this evaluator;
- "oxi batch": one query whose VALUES holds the whole pool, Oxigraph's
  per-row cost with the query overhead amortised (no per-candidate call can
  get there; shown for scale).
The compiled results are checked against Oxigraph's on the pool.

Run: .venv/bin/python bench/bench_expr.py [--seconds 1.0] [--pool 1000] [--cold 200000]
"""

from __future__ import annotations

import argparse
import math
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
from rsep.plugin.algebra.terms import literal_nt
from rsep.plugin.expr import closures, compile_filter
from rsep.plugin.expr.closures import MEMO_SIZE
from rsep.plugin.expr.values import parse_term

Solution = Mapping[str, str]

FILTERS: dict[str, Expr] = {
    "?p2 < ?p1": BinaryOp("<", Var("p2"), Var("p1")),
    "?amount2 * 10 >= ?amount1 && ?id2 = ?id1": BinaryOp(
        "&&",
        BinaryOp(">=", BinaryOp("*", Var("amount2"), Literal("10", XSD_INTEGER)), Var("amount1")),
        BinaryOp("=", Var("id2"), Var("id1")),
    ),
    'REGEX(?name, "^ali", "i")': FunctionCall("REGEX", (Var("name"), Literal("^ali"), Literal("i"))),
}
"""label (also the SPARQL text given to Oxigraph) -> expression tree."""


def make_events(count: int, rng: random.Random, unique: bool) -> list[dict[str, str]]:
    """Events: prices as doubles, amounts as decimals, ids as IRIs, names as
    strings. With `unique`, every term is new (extra digits / suffixes)."""
    names = ["Alice", "alina", "Bob", "Carol", "ALIster", "dave", "Mallory", "alice"]
    events = []
    for index in range(count):
        suffix = f"{index:07d}" if unique else ""
        events.append(
            {
                "p": literal_nt(f"{rng.uniform(10, 20):.2f}{suffix}", XSD_DOUBLE),
                "amount": literal_nt(f"{rng.randint(1, 100_000) / 100:.2f}{suffix}", XSD_DECIMAL),
                "id": f"<http://example.org/account/{rng.randint(0, 20)}{suffix}>",
                "name": literal_nt(names[index % len(names)] + str(rng.randint(0, 9)) + suffix),
            }
        )
    return events


def make_pool(size: int, seed: int = 7, unique: bool = False) -> list[dict[str, str]]:
    """`size` candidate mappings: a partial match's bindings (suffix 1) and a
    new event's (suffix 2). Without `unique` both are drawn from `size`
    events, so terms repeat."""
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


def rate(function: Callable[[Solution], object], pool: list[dict[str, str]], seconds: float) -> float:
    """Evaluations per second of `function` cycling over the pool for about `seconds`."""
    count = 0
    started = time.perf_counter()
    deadline = started + seconds
    while True:
        for mapping in pool:
            function(mapping)
        count += len(pool)
        now = time.perf_counter()
        if now >= deadline:
            return count / (now - started)


def cold_rate(expr: Expr, size: int) -> float:
    """Evaluations per second when every term is new: one pass over fresh mappings."""
    pool = make_pool(size, seed=11, unique=True)
    parse_term.cache_clear()
    compiled = compile_filter(expr)
    started = time.perf_counter()
    for mapping in pool:
        compiled(mapping)
    return size / (time.perf_counter() - started)


def uncached(expr: Expr) -> Callable[[Solution], bool]:
    """The same compiled filter without its caches: every term parsed and every
    single-variable sub-expression recomputed on every evaluation."""
    namespace = vars(closures)
    namespace["parse_term"] = parse_term.__wrapped__
    namespace["MEMO_SIZE"] = 0
    try:
        return compile_filter(expr)
    finally:
        namespace["parse_term"] = parse_term
        namespace["MEMO_SIZE"] = MEMO_SIZE


def oxigraph_rates(text: str, pool: list[dict[str, str]], seconds: float) -> tuple[float, float, list[bool]]:
    """(per-query rate, batched rate, per-mapping results) of Oxigraph, or NaNs without pyoxigraph."""
    try:
        import pyoxigraph
    except ImportError:
        return math.nan, math.nan, []
    store = pyoxigraph.Store()
    names = sorted(pool[0])
    head = " ".join(f"?{name}" for name in names)

    def row(mapping: Solution) -> str:
        return "(" + " ".join(mapping[name] for name in names) + ")"

    def per_query(mapping: Solution) -> bool:
        return bool(store.query(f"ASK {{ VALUES ({head}) {{ {row(mapping)} }} FILTER({text}) }}"))

    query_rate = rate(per_query, pool, seconds)
    rows = " ".join(row(mapping) for mapping in pool)
    batch = f"SELECT (COUNT(*) AS ?n) WHERE {{ VALUES ({head}) {{ {rows} }} FILTER({text}) }}"
    runs = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        solutions = store.query(batch)
        assert isinstance(solutions, pyoxigraph.QuerySolutions)
        list(solutions)
        runs += 1
    batch_rate = runs * len(pool) / (time.perf_counter() - started)
    return query_rate, batch_rate, [per_query(mapping) for mapping in pool]


def main() -> None:
    parser = argparse.ArgumentParser(description="Micro-benchmark of the compiled expression evaluator.")
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    parser.add_argument("--pool", type=int, default=1000, help="candidate mappings cycled over")
    parser.add_argument("--cold", type=int, default=200_000, help="fresh mappings for the cold pass")
    arguments = parser.parse_args()
    pool = make_pool(arguments.pool)
    columns = ("compiled", "cold", "no caches", "oxi query", "oxi batch")
    print("evaluations per second (higher is better)")
    print(f"{'filter':44s}" + "".join(f"{column:>12s}" for column in columns))
    ratios = []
    for label, expr in FILTERS.items():
        compiled = compile_filter(expr)
        compiled_rate = rate(compiled, pool, arguments.seconds)
        cold = cold_rate(expr, arguments.cold)
        uncached_rate = rate(uncached(expr), pool, arguments.seconds)
        query_rate, batch_rate, expected = oxigraph_rates(label, pool, arguments.seconds)
        if expected:
            assert [compiled(mapping) for mapping in pool] == expected, f"{label}: differs from Oxigraph"
        rates = (compiled_rate, cold, uncached_rate, query_rate, batch_rate)
        print(f"{label:44s}" + "".join(f"{value:12,.0f}" for value in rates))
        ratios.append((label, compiled_rate / uncached_rate, compiled_rate / query_rate, cold / query_rate))
    print("\nspeed-up: compiled vs no caches | compiled vs oxi query | cold vs oxi query")
    for label, *values in ratios:
        print(f"{label:44s}" + " | ".join(f"x{value:,.1f}" for value in values))


if __name__ == "__main__":
    main()
