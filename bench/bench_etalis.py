"""rsep against ETALIS on ETALIS's own EP-SPARQL example 02: answers and speed.

Workload: ETALIS's example 02 (`etalis/examples/ep_sparql_02`), projecting both prices,

    SELECT ?company ?price1 ?price2 WHERE { {?company :hasStockPrice ?price1}
        SEQ {?company :hasStockPrice ?price2} FILTER(?price1 < ?price2) }

over a seeded random walk of one company's integer prices (seed 13, start 100, steps
uniform in -2..2), event i at time i, 10,000 and 100,000 events, under ETALIS's
`event_consumption_policy` settings `recent` and `chronological` (its manual and
`src/flags.P` name recent, chronological and unrestricted; recent is its default) and rsep's
`--policy recent|chronological`.

Each engine runs as a whole process, the engines taking turns, --repeat times; the best
wall-clock time counts (a shared machine):

- rsep: `rsep run query.rq --stream ...=events.trig --engine inprocess --policy P` (TriG in,
  jsonl out), the in-process engine;
- ETALIS: `swipl --traditional` (SWI-Prolog) loading ETALIS's `src/ep_sparql/ep_sparql.P`,
  compiling the query with ETALIS's own EP-SPARQL parser and compiler
  (`ep_sparql_parse/2`, `ep_sparql_compile/3`), then reading the events as Prolog terms and
  firing `event(rdf(acme, hasStockPrice, P), [I, I])` for each. Its time inside the event
  loop is printed too.

It prints events/s of both, their ratio, both match counts and, where the matches differ,
the first differences and which reading explains them: a small model of each engine's
goal store (`goal_model`) is replayed, with and without ETALIS's replacement of a waiting
goal by a newer one for the same event term (`etr_insf/2` in ETALIS's `src/storage.P`, for
recent and chronological), which rsep does not do (docs/semantics.md).

ETALIS's source is fetched into a temporary folder, never into the repository: from
--etalis DIR if given (a checkout holding `etalis/src`, or `src` itself), else `git clone`
of its public repository, else the bare mirror `/work/.mirror/sspider+etalis/repo`. Without
SWI-Prolog or ETALIS, rsep's figures are printed and ETALIS is reported skipped.

Run from the repository root:
    .venv/bin/python -m bench.bench_etalis [--quick] [--repeat N] [--sizes 10000 100000]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ETALIS_REPOSITORY = "https://github.com/sspider/etalis.git"
ETALIS_MIRROR = Path("/work/.mirror/sspider+etalis/repo")
STREAM = "http://example.org/stock"
SEED = 13
POLICIES = ("recent", "chronological")

RSEP_QUERY = """PREFIX : <http://example.org/>
SELECT ?company ?price1 ?price2 WHERE {
  { ?company :hasStockPrice ?price1 } SEQ { ?company :hasStockPrice ?price2 }
  FILTER(?price1 < ?price2)
}
"""
ETALIS_QUERY = (
    "SELECT ?company ?price1 ?price2 WHERE { ?company hasStockPrice ?price1 } "
    "SEQ { ?company hasStockPrice ?price2 } FILTER ( ?price1 < ?price2 )"
)
ETALIS_DRIVER = r"""
:- style_check(-singleton).
bench(Policy, EventsFile, OutFile, Query) :-
    set_etalis_flag(event_consumption_policy, Policy),
    ep_sparql_parse(Query, Parsed),
    ep_sparql_compile(Parsed, Rules, _),
    compile_internal_event_rules(main, Rules),
    open(EventsFile, read, In),
    statistics(cputime, C0), get_time(W0),
    fire_all(In),
    statistics(cputime, C1), get_time(W1),
    close(In),
    open(OutFile, write, Out),
    forall(fired_event(select_event([C, P1, P2]), [T1, T2]),
           format(Out, "~w ~w ~w ~w ~w~n", [C, P1, P2, T1, T2])),
    close(Out),
    Cpu is C1 - C0, Wall is W1 - W0,
    format("loop ~6f ~6f~n", [Cpu, Wall]).
fire_all(In) :-
    repeat,
    read(In, Term),
    (   Term == end_of_file
    ->  !
    ;   Term = e(Company, Price, Time),
        once(event(rdf(Company, hasStockPrice, Price), [Time, Time])),
        fail
    ).
"""

Match = tuple[int, int, int, int]
"""(price1, price2, start, end)."""


def random_walk(count: int, seed: int = SEED) -> list[int]:
    rng = random.Random(seed)
    prices = [100]
    for _ in range(count - 1):
        prices.append(prices[-1] + rng.randint(-2, 2))
    return prices


# ---------------------------------------------------------------------- the readings


def goal_model(prices: Sequence[int], policy: str, replace_same_term: bool) -> list[Match]:
    """Both engines on this query, as a goal store: each event first checks the waiting goals
    (the first in store order: the newest under recent, the oldest under chronological), which
    it consumes whether the FILTER then holds or not, and then waits as a goal itself (each
    triple pattern reads the stream on its own). ETALIS's `etr_insf/2` also drops a waiting goal
    for the same event term (the same price) when it inserts one (`replace_same_term`)."""
    goals: list[tuple[int, int]] = []
    out: list[Match] = []
    for now, price in enumerate(prices):
        if goals:
            first, since = goals.pop(0)
            if first < price:
                out.append((first, price, since, now))
        if replace_same_term:
            goals = [g for g in goals if g[0] != price]
        if policy == "recent":
            goals.insert(0, (price, now))
        else:
            goals.append((price, now))
    return out


# ---------------------------------------------------------------------- rsep


def rsep_command() -> list[str]:
    here = Path(sys.executable).parent / "rsep"
    found = str(here) if here.exists() else shutil.which("rsep")
    if found is None:
        raise SystemExit("rsep is not installed next to this Python (.venv/bin/rsep)")
    return [found]


def write_rsep_inputs(folder: Path, prices: Sequence[int]) -> tuple[Path, Path]:
    query = folder / "query.rq"
    query.write_text(RSEP_QUERY, encoding="utf-8")
    events = folder / "events.trig"
    with events.open("w", encoding="utf-8") as out:
        for index, price in enumerate(prices):
            graph = f"<http://example.org/g{index}>"
            out.write(
                f"{graph} {{ <http://example.org/acme> <http://example.org/hasStockPrice> {price} . }}\n"
            )
            out.write(f"{graph} <http://www.w3.org/ns/prov#generatedAtTime> {index} .\n")
    return query, events


def run_rsep(query: Path, events: Path, policy: str) -> tuple[float, list[Match]]:
    command = [*rsep_command(), "run", str(query), "--stream", f"{STREAM}={events}"]
    command += ["--engine", "inprocess", "--policy", policy, "--format", "jsonl"]
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"rsep run failed ({done.returncode}):\n{done.stderr}")
    matches = []
    for line in done.stdout.splitlines():
        row = json.loads(line)
        bindings = row["bindings"]
        matches.append(
            (_number(bindings["price1"]), _number(bindings["price2"]), int(row["start"]), int(row["end"]))
        )
    return elapsed, matches


def _number(term: str) -> int:
    return int(term.split('"')[1]) if term.startswith('"') else int(term)


# ---------------------------------------------------------------------- ETALIS


@dataclass
class Etalis:
    swipl: str
    src: Path
    """ETALIS's `src` folder (holding `ep_sparql/ep_sparql.P`)."""
    origin: str


def find_etalis(folder: Path, given: str | None) -> Etalis | str:
    """ETALIS's source and SWI-Prolog, or why they are not there."""
    swipl = shutil.which("swipl")
    if swipl is None:
        return "SWI-Prolog (swipl) is not installed (apt-get install -y swi-prolog-nox)"
    if given is not None:
        root = Path(given)
        for src in (root / "etalis" / "src", root / "src", root):
            if (src / "ep_sparql" / "ep_sparql.P").exists():
                return Etalis(swipl, src, str(root))
        return f"--etalis {given} holds no etalis/src/ep_sparql/ep_sparql.P"
    clone = folder / "etalis-clone"
    cloned = subprocess.run(
        ["git", "clone", "--quiet", "--depth", "1", ETALIS_REPOSITORY, str(clone)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        timeout=300,
    )
    if cloned.returncode == 0 and (clone / "etalis" / "src" / "ep_sparql" / "ep_sparql.P").exists():
        return Etalis(swipl, clone / "etalis" / "src", ETALIS_REPOSITORY)
    if ETALIS_MIRROR.exists():
        target = folder / "etalis-mirror"
        target.mkdir()
        archive = subprocess.run(
            ["git", f"--git-dir={ETALIS_MIRROR}", "archive", "HEAD", "etalis"],
            capture_output=True,
            check=False,
        )
        if archive.returncode == 0:
            subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
            commit = subprocess.run(
                ["git", f"--git-dir={ETALIS_MIRROR}", "rev-parse", "--short", "HEAD"],
                capture_output=True,
                text=True,
                check=False,
            ).stdout.strip()
            return Etalis(swipl, target / "etalis" / "src", f"{ETALIS_MIRROR} at {commit}")
    return f"ETALIS's source is not available (git clone {ETALIS_REPOSITORY} failed, no mirror)"


def write_etalis_inputs(folder: Path, prices: Sequence[int]) -> tuple[Path, Path]:
    driver = folder / "driver.pl"
    driver.write_text(ETALIS_DRIVER, encoding="utf-8")
    events = folder / "events.pl"
    with events.open("w", encoding="utf-8") as out:
        for index, price in enumerate(prices):
            out.write(f"e(acme, {price}, {index}).\n")
    return driver, events


def run_etalis(etalis: Etalis, driver: Path, events: Path, policy: str) -> tuple[float, float, list[Match]]:
    """Whole-process seconds, seconds inside the event loop, matches."""
    out = events.parent / f"etalis-{policy}.out"
    goal = (
        f"['{etalis.src / 'ep_sparql' / 'ep_sparql.P'}'], ['{driver}'], "
        f"bench({policy}, '{events}', '{out}', '{ETALIS_QUERY}'), halt."
    )
    began = time.perf_counter()
    done = subprocess.run(
        [etalis.swipl, "--traditional", "-q", "-g", goal, "-t", "halt(1)"],
        capture_output=True,
        text=True,
        check=False,
        cwd=events.parent,
    )
    elapsed = time.perf_counter() - began
    loop = [line for line in done.stdout.splitlines() if line.startswith("loop ")]
    if done.returncode != 0 or not loop:
        raise SystemExit(f"ETALIS failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    matches = []
    for line in out.read_text(encoding="utf-8").splitlines():
        _, p1, p2, t1, t2 = line.split()
        matches.append((int(p1), int(p2), int(t1), int(t2)))
    return elapsed, float(loop[-1].split()[2]), matches


# ---------------------------------------------------------------------- comparing


def explain(prices: Sequence[int], policy: str, rsep: list[Match], etalis: list[Match]) -> list[str]:
    """Where the two engines' matches differ, and which reading explains it."""
    if sorted(rsep) == sorted(etalis):
        return ["same matches"]
    only_rsep = sorted(set(rsep) - set(etalis), key=lambda m: (m[3], m[2]))
    only_etalis = sorted(set(etalis) - set(rsep), key=lambda m: (m[3], m[2]))
    lines = [f"{len(only_rsep)} matches only rsep reports, {len(only_etalis)} only ETALIS"]
    lines += [f"  rsep only:   price1={m[0]} price2={m[1]} [{m[2]},{m[3]}]" for m in only_rsep[:5]]
    lines += [f"  ETALIS only: price1={m[0]} price2={m[1]} [{m[2]},{m[3]}]" for m in only_etalis[:5]]
    ours, theirs = goal_model(prices, policy, False), goal_model(prices, policy, True)
    if sorted(ours) == sorted(rsep) and sorted(theirs) == sorted(etalis):
        lines.append(
            "why: ETALIS replaces a waiting goal by a newer one for the same price (etr_insf/2 in "
            "src/storage.P), so the older occurrence is never selected; rsep keeps both (each "
            "occurrence is an input of its own)"
        )
    else:
        lines.append("why: not explained by the goal models (see docs/semantics.md)")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--policies", nargs="+", choices=POLICIES, default=list(POLICIES))
    parser.add_argument("--repeat", type=int, default=2, help="runs per engine (best counts)")
    parser.add_argument("--etalis", help="a folder holding ETALIS's source (etalis/src)")
    parser.add_argument("--quick", action="store_true", help="1,000 events, one run: checks the script")
    args = parser.parse_args(argv)
    sizes, repeat = ([1_000], 1) if args.quick else (args.sizes, args.repeat)
    with tempfile.TemporaryDirectory(prefix="rsep-bench-etalis-") as tmp:
        folder = Path(tmp)
        etalis = find_etalis(folder, args.etalis)
        if isinstance(etalis, str):
            print(f"ETALIS skipped: {etalis}")
        else:
            version = subprocess.run(
                [etalis.swipl, "--version"], capture_output=True, text=True
            ).stdout.strip()
            print(f"ETALIS from {etalis.origin}, {version}")
        print(f"workload: ETALIS example 02 over a random walk (seed {SEED}), event i at time i")
        for size in sizes:
            prices = random_walk(size)
            work = folder / str(size)
            work.mkdir()
            query, trig = write_rsep_inputs(work, prices)
            driver, facts = (None, None) if isinstance(etalis, str) else write_etalis_inputs(work, prices)
            ups = sum(1 for before, after in itertools.pairwise(prices) if before < after)
            print(f"\n{size:,} events ({ups:,} rises from one event to the next)")
            for policy in args.policies:
                rsep_times: list[float] = []
                etalis_times: list[tuple[float, float]] = []
                rsep_matches: list[Match] = []
                etalis_matches: list[Match] = []
                for _ in range(repeat):  # the engines take turns
                    elapsed, rsep_matches = run_rsep(query, trig, policy)
                    rsep_times.append(elapsed)
                    if not isinstance(etalis, str):
                        assert driver is not None and facts is not None
                        whole, loop, etalis_matches = run_etalis(etalis, driver, facts, policy)
                        etalis_times.append((whole, loop))
                rsep_best = min(rsep_times)
                line = (
                    f"  {policy:<13} rsep {len(rsep_matches):>7,} matches {size / rsep_best:>9,.0f} events/s"
                )
                if isinstance(etalis, str):
                    print(line + "   ETALIS skipped")
                    continue
                whole, loop = min(etalis_times)
                print(
                    line + f" | ETALIS {len(etalis_matches):>7,} matches {size / whole:>9,.0f} events/s "
                    f"(event loop {size / loop:,.0f}/s) | speed rsep/ETALIS {whole / rsep_best:.2f}"
                )
                for text in explain(prices, policy, rsep_matches, etalis_matches):
                    print(f"    {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
