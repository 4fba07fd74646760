"""The engine before and after a change, side by side: `rsep run` of this tree against `rsep run`
of another revision, whole processes, taking turns, in one run.

Each revision runs as its own process through the command line, the one interface every
revision shares (module names and internals move between revisions; the command line does not):
the other revision's files are unpacked into a temporary folder (`git archive`, nothing is
written into the repository) and put first on `PYTHONPATH`, with this checkout's virtualenv for
the dependencies. The workloads are bench/common.py's (credit card, stock V-shape, windowed
EP-SPARQL pairs), written as TriG and query files into the temporary folder. Every pair of runs
must print the same matches, byte for byte (a difference aborts the benchmark); the table gives
events/s of both (wall clock and CPU time of the process, start-up included, the best of
`--repeat` runs) and their ratio.

    .venv/bin/python -m bench.bench_revisions                 # against 98c4f77, about 5 minutes
    .venv/bin/python -m bench.bench_revisions --rev HEAD~3 --repeat 5
    .venv/bin/python -m bench.bench_revisions --quick         # small sizes: checks the script
    .venv/bin/python -m bench.bench_revisions --rev HEAD~1 --only EP-SPARQL
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.common import REPO, Workload, credit_card, stock, windowed_pairs

DEFAULT_REV = "98c4f77"
"""The last commit before the architecture work of issue 11."""


@dataclass(frozen=True)
class Case:
    label: str
    query: Path
    stream: str
    events_file: Path
    events: int


@dataclass
class Timing:
    wall: float
    cpu: float
    output: str


def unpack(rev: str, folder: Path) -> Path:
    """The files of `rev` in `folder` (symlinks kept, so `rsep/` resolves there)."""
    folder.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", rev], cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def cases(workloads: list[Workload], folder: Path) -> list[Case]:
    found = []
    for index, workload in enumerate(workloads):
        events_file = folder / f"w{index}.trig"
        events_file.write_bytes(workload.trig)
        for label, text in workload.queries.items():
            if label in workload.unkeyed:
                continue  # an unkeyed plan is a benchmark-only variant, not a query text
            query = folder / f"w{index}-{len(found)}.rq"
            query.write_text(text)
            found.append(
                Case(f"{workload.name}: {label}", query, workload.stream, events_file, workload.events)
            )
    return found


def run_once(tree: Path, case: Case) -> Timing:
    """`rsep run` of `tree` on the case, in-process engine: its wall and CPU seconds (children
    run one at a time, so the growth of the children's CPU time is this one's)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, "-m", "rsep.endpoint.cli", "run", str(case.query),
               "--stream", f"{case.stream}={case.events_file}", "--engine", "inprocess"]  # fmt: skip
    before = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=tree, capture_output=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{tree}: rsep run failed on {case.label}:\n{done.stderr.decode()}")
    return Timing(wall, _children_cpu() - before, done.stdout.decode())


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def best(timings: list[Timing]) -> Timing:
    return min(timings, key=lambda t: t.cpu)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--rev", default=DEFAULT_REV, help="the revision to compare with (default %(default)s)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per tree and case, taking turns")
    parser.add_argument("--quick", action="store_true", help="small workloads: checks the script")
    parser.add_argument("--only", help="run the workloads whose name holds this text")
    args = parser.parse_args()
    workloads = (
        [credit_card(2000), stock(20, 200), windowed_pairs(2000)]
        if args.quick
        else [credit_card(), stock(), windowed_pairs()]
    )
    workloads = [w for w in workloads if args.only is None or args.only in w.name]
    with tempfile.TemporaryDirectory(prefix="rsep-bench-revisions-") as temp:
        folder = Path(temp)
        other = unpack(args.rev, folder / "other")
        trees = {"this tree": REPO, args.rev: other}
        rows = []
        for case in cases(workloads, folder):
            timings: dict[str, list[Timing]] = {name: [] for name in trees}
            for _ in range(args.repeat):
                for name, tree in trees.items():
                    timings[name].append(run_once(tree, case))
            outputs = {name: {t.output for t in found} for name, found in timings.items()}
            if len({o for found in outputs.values() for o in found}) != 1:
                raise SystemExit(f"{case.label}: the trees print different matches")
            matches = timings["this tree"][0].output.count("\n")
            mine, theirs = best(timings["this tree"]), best(timings[args.rev])
            rows.append((case, matches, mine, theirs))
            print(f"{case.label}: {case.events} events, {matches} matches, same output", flush=True)
    print()
    print(f"| case | events | matches | this tree ev/s (CPU / wall) | {args.rev} ev/s (CPU / wall) ", end="")
    print("| CPU ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for case, matches, mine, theirs in rows:
        n = case.events
        print(
            f"| {case.label} | {n:,} | {matches:,} | {n / mine.cpu:,.0f} / {n / mine.wall:,.0f} "
            f"| {n / theirs.cpu:,.0f} / {n / theirs.wall:,.0f} | x{theirs.cpu / mine.cpu:.2f} |"
        )
    print(
        "\n(whole processes, start-up included; the best of",
        args.repeat,
        "runs by CPU time; ratio > 1: this tree is faster)",
    )


if __name__ == "__main__":
    main()
