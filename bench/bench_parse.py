"""How long rsep's own reading of a large query takes next to Oxigraph's (issue 15).

**Plain queries** (/sparql reads a text up to `FULL_READ_SIZE` with rsep's grammar before Oxigraph
runs it: positions and messages in a user's words, event syntax recognised, nesting bounded). For
generated queries of about `--size` bytes, the best of `--repeat` runs of:

- `bounds`: the nesting and chain check (`rsep.grammar.limits`), what stands before any parser;
- `rsep parse`: `parse_query`, the lark LALR parse plus the transformer to the algebra (bounds
  included), what /sparql does before passing a plain query on;
- `oxigraph`: the same text run by Oxigraph on an empty store (its parse, optimiser and an empty
  evaluation), what /sparql does next;
- the ratios bounds / oxigraph (what /sparql reads before Oxigraph for a text over
  `FULL_READ_SIZE`; the issue asks for at most 3) and rsep parse / oxigraph (what it reads for
  a smaller one, and for any text Oxigraph rejects).

**Continuous queries** (`POST /queries`, `rsep run`) have no Oxigraph reading of their own: rsep's
grammar is the only parser of their event syntax. For a SPAseq and an EP-SPARQL query of about
`--size` bytes whose size is in their SPARQL (a VALUES block, many triple patterns and FILTERs, a
long `IN` list), it prints:

- `detect`: `rsep.compiler.parse` without a dialect (what `POST /queries` does when no
  `?dialect=` is given): bounds, every dialect's grammar over the text, the owner's transformer;
- `named`: the same with the dialect named (`?dialect=`, `rsep run --dialect`): one grammar;
- `oxigraph`: Oxigraph running, on an empty store, the plain queries made of the same SPARQL: for
  each of the query's graph patterns (its GPMs, or its operands), the prologue and `SELECT * WHERE`
  that pattern, in the same words, the times summed; so Oxigraph reads every triple pattern, FILTER
  and VALUES row that rsep reads, without the event syntax around them (one query per pattern, as
  rsep's compile step has Oxigraph check each GPM: one query joining hundreds of groups would time
  Oxigraph's optimiser, not its parser);
- the ratios detect / oxigraph and named / oxigraph (the issue asks for at most 3).

With `--profile`, cProfile's top functions of one rsep parse of the first plain shape and of the
first continuous shape.

    .venv/bin/python -m bench.bench_parse [--size 800000] [--repeat 3] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import pstats
import time
from collections.abc import Callable
from dataclasses import dataclass

from rsep.compiler import parse as parse_continuous
from rsep.grammar import parse_query
from rsep.grammar.limits import first_violation
from rsep.plugin import KnowledgeBase

PREFIXES = "PREFIX ex: <http://example.org/ns#>\nPREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"


def values_query(size: int) -> str:
    """A VALUES block of IRI/literal pairs (the usual way a query grows large)."""
    return PREFIXES + "SELECT ?s ?label WHERE {\n  VALUES (?s ?label) {\n" + _rows(size) + "\n  }\n}\n"


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


def _rows(size: int) -> str:
    """VALUES rows of IRI/literal pairs, about `size` bytes."""
    rows, length, i = [], 0, 0
    while length < size:
        rows.append(f'(ex:item{i} "label {i}"@en)')
        length += len(rows[-1]) + 1
        i += 1
    return "\n".join(rows)


def _filtered_group(i: int, patterns: int = 8) -> str:
    """A group of triple patterns about one subject and a FILTER over their objects (~700 bytes)."""
    triples = " . ".join(f"?s{i} ex:p{k} ?o{i}_{k}" for k in range(patterns))
    tests = " && ".join(f'(?o{i}_{k} > {k} || STRSTARTS(STR(?o{i}_{k}), "x{k}"))' for k in range(patterns))
    return f"{{ {triples} . FILTER ({tests}) }}"


@dataclass(frozen=True, slots=True)
class Continuous:
    """A continuous query and the plain query of the same SPARQL (see the module docstring)."""

    name: str
    dialect: str
    text: str
    plain: tuple[str, ...]


def _plain(groups: list[str]) -> tuple[str, ...]:
    return tuple(f"{PREFIXES}SELECT * WHERE {group}\n" for group in groups)


def spaseq_values(size: int) -> Continuous:
    """A SPAseq query whose first GPM holds a large VALUES block."""
    first = f"{{ VALUES (?h ?label) {{\n{_rows(size)}\n}} ?h ex:pow ?p }}"
    second = "{ ?h ex:loc ?l }"
    text = (
        PREFIXES + "SELECT ?h ?label ?l WITHIN 30 MINUTES\nFROM STREAM S1 <http://example.org/s1>\n"
        f"WHERE {{\n  SEQ (A; B)\n  DEFINE GPM A ON S1 {first}\n  DEFINE GPM B ON S1 {second}\n}}\n"
    )
    return Continuous("spaseq values", "spaseq", text, _plain([first, second]))


def epsparql_values(size: int) -> Continuous:
    """An EP-SPARQL query whose first operand holds a large VALUES block."""
    first = f"{{ VALUES (?x ?label) {{\n{_rows(size)}\n}} ?x ex:p ?y }}"
    second = "{ ?x ex:q ?z }"
    text = PREFIXES + f"SELECT ?x ?label ?z WHERE {{\n  {first}\n  SEQ {second}\n}}\n"
    return Continuous("ep values", "ep-sparql", text, _plain([first, second]))


def spaseq_patterns(size: int) -> Continuous:
    """A SPAseq query of many GPMs in sequence, each triple patterns and a FILTER of two tests per
    pattern: 8 patterns, more in a larger query, so that the sequence stays under `MAX_CHAIN`."""
    patterns = max(8, size // 60_000)
    groups, length = [], 0
    while length < size:
        groups.append(_filtered_group(len(groups), patterns))
        length += len(groups[-1]) + 30
    names = [f"G{i}" for i in range(len(groups))]
    defines = "\n".join(f"  DEFINE GPM {n} ON S1 {g}" for n, g in zip(names, groups, strict=True))
    text = (
        PREFIXES + "SELECT * WITHIN 30 MINUTES\nFROM STREAM S1 <http://example.org/s1>\n"
        f"WHERE {{\n  SEQ ({'; '.join(names)})\n{defines}\n}}\n"
    )
    return Continuous("spaseq patterns", "spaseq", text, _plain(groups))


def epsparql_filter(size: int) -> Continuous:
    """An EP-SPARQL query whose first operand's FILTER tests a long `IN` list."""
    items, length = [], 0
    while length < size:
        items.append(f"ex:item{len(items)}")
        length += len(items[-1]) + 2
    first = f"{{ ?x ex:p ?y . FILTER (?y IN ({', '.join(items)})) }}"
    second = "{ ?x ex:q ?z }"
    text = PREFIXES + f"SELECT ?x ?y ?z WHERE {{\n  {first}\n  SEQ {second}\n}}\n"
    return Continuous("ep filter", "ep-sparql", text, _plain([first, second]))


CONTINUOUS = (spaseq_values, epsparql_values, spaseq_patterns, epsparql_filter)


def _run_each(kb: KnowledgeBase, texts: tuple[str, ...]) -> None:
    for text in texts:
        kb.query(text, choose=_json, base_iri=None, dataset=None)


def _json(form: object) -> str:
    return "application/sparql-results+json"


def best(run: Callable[[], object], repeat: int) -> float:
    """The best time of `repeat` runs, each reading the text afresh (the bounds check caches its
    answer for the grammars that read one text after another; a server sees each text once)."""
    times = []
    for _ in range(repeat):
        first_violation.cache_clear()
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
    print()
    print(
        f"{'continuous':16} {'bytes':>9} {'detect':>9} {'named':>9} {'oxigraph':>9} {'d/ox':>6} {'n/ox':>6}"
    )
    for make_continuous in CONTINUOUS:
        parse_continuous(make_continuous(1_000).text)  # builds every dialect's parser
        shape = make_continuous(args.size)
        assert first_violation(shape.text) is None, first_violation(shape.text)
        detect = best(functools.partial(parse_continuous, shape.text), args.repeat)
        named = best(functools.partial(parse_continuous, shape.text, dialect=shape.dialect), args.repeat)
        theirs = best(functools.partial(_run_each, kb, shape.plain), args.repeat)
        times = f"{detect:8.3f}s {named:8.3f}s {theirs:8.3f}s"
        print(f"{shape.name:16} {len(shape.text):9d} {times} {detect / theirs:6.1f} {named / theirs:6.1f}")
    if args.profile:
        _profile(functools.partial(parse_query, values_query(args.size), source="query"))
        _profile(functools.partial(parse_continuous, CONTINUOUS[0](args.size).text))


def _profile(run: Callable[[], object]) -> None:
    profile = cProfile.Profile()
    profile.runcall(run)
    pstats.Stats(profile).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
