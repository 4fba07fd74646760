"""How long rsep's own reading of a large SPARQL query takes next to Oxigraph's (issue 15).

/sparql reads every query with rsep's grammar before Oxigraph runs it (positions and messages
in a user's words, event syntax recognised, nesting bounded). This prints, for generated queries
of about `--size` bytes, the best of `--repeat` runs of:

- `bounds`: the nesting and chain check (`rsep.grammar.limits`), what stands before any parser;
- `rsep parse`: `parse_query`, the lark LALR parse plus the transformer to the algebra (bounds
  included), what /sparql does before passing a plain query on;
- `oxigraph`: the same text run by Oxigraph on an empty store (its parse, optimiser and an empty
  evaluation), what /sparql does next;
- the ratios bounds / oxigraph (what /sparql reads before Oxigraph for a text over
  `FULL_READ_SIZE`; the issue asks for at most 3) and rsep parse / oxigraph (what it reads for
  a smaller one, and for any text Oxigraph rejects).

With `--profile`, cProfile's top functions of one rsep parse of the first shape.

    .venv/bin/python -m bench.bench_parse [--size 800000] [--repeat 3] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import pstats
import time
from collections.abc import Callable

from rsep.grammar import parse_query
from rsep.grammar.limits import first_violation
from rsep.plugin import KnowledgeBase

PREFIXES = "PREFIX ex: <http://example.org/ns#>\nPREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"


def values_query(size: int) -> str:
    """A VALUES block of IRI/literal pairs (the usual way a query grows large)."""
    rows, length, i = [], 0, 0
    while length < size:
        row = f'(ex:item{i} "label {i}"@en)'
        rows.append(row)
        length += len(row) + 1
        i += 1
    return PREFIXES + "SELECT ?s ?label WHERE {\n  VALUES (?s ?label) {\n" + "\n".join(rows) + "\n  }\n}\n"


def union_query(size: int) -> str:
    """Branches of triple patterns and filters, nested UNIONs of at most 500 branches each."""
    branch = '{{ ?s ex:p{i} ?o{i} ; ex:q ?v{i} . FILTER(?v{i} > {i} && STRSTARTS(STR(?o{i}), "x{i}")) }}'
    groups, length, i = [], 0, 0
    while length < size:
        members = []
        for _ in range(500):
            members.append(branch.format(i=i))
            length += len(members[-1]) + 7
            i += 1
            if length >= size:
                break
        groups.append("{ " + " UNION ".join(members) + " }")
    return PREFIXES + "SELECT * WHERE {\n" + "\nUNION\n".join(groups) + "\n}\n"


def _json(form: object) -> str:
    return "application/sparql-results+json"


def best(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=800_000, help="bytes per query (default 800000)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    kb = KnowledgeBase()
    parse_query(PREFIXES + "SELECT * WHERE { ?s ?p ?o }")  # builds the parser (cached on disk)
    print(
        f"{'shape':8} {'bytes':>9} {'bounds':>9} {'rsep parse':>11} {'oxigraph':>9} {'b/ox':>6} {'p/ox':>6}"
    )
    for name, make in (("values", values_query), ("union", union_query)):
        text = make(args.size)
        assert first_violation(text) is None, first_violation(text)
        bounds = best(functools.partial(first_violation.__wrapped__, text), args.repeat)
        ours = best(functools.partial(parse_query, text, source="query"), args.repeat)
        oxigraph = functools.partial(kb.query, text, choose=_json, base_iri=None, dataset=None)
        theirs = best(oxigraph, args.repeat)
        times = f"{bounds:8.3f}s {ours:10.3f}s {theirs:8.3f}s"
        print(f"{name:8} {len(text):9d} {times} {bounds / theirs:6.1f} {ours / theirs:6.1f}")
    if args.profile:
        text = values_query(args.size)
        profile = cProfile.Profile()
        profile.runcall(parse_query, text, source="query")
        pstats.Stats(profile).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
