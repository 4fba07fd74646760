"""End-to-end throughput and memory of whole processes: rsep (in-process, Spark) against PyFlink.

Three parts, one run (issue 12, item 6):

1. **Engines, end to end.** The V-shape `SEQ (A, B+, C)` (strict contiguity, WITHIN 1 HOURS) over
   one company's seeded random walk, one event per minute (bench/vshape.py), written into a
   temporary folder as TriG (rsep) and CSV (Flink). Each engine runs as a separate whole process,
   taking turns, start-up included: `rsep run --engine inprocess`, `rsep run --engine spark
   --master local[2]`, and PyFlink's SQL `MATCH_RECOGNIZE` in its own virtualenv (made on first
   use in a cache folder outside the repository; `--flink-venv`). For each: matches, wall
   seconds, events/s, the ratio of events/s to PyFlink's, and the peak RSS and PSS of the whole
   process tree (bench/proctree.py). Every engine must find the matches of the oracle written
   from the definitions (`vshape.expected_matches`): a difference exits 1.
2. **Skip-till-any memory versus n.** `SEQ (A: B+: C)` over n events with strictly falling
   prices: each event is an A for the later ones and a B for every earlier one, none is a C, so
   no run completes and none may be dropped; the runs number about n^3/6 (an A at i, a B run
   from j to l, i < j <= l <= n). Each n runs in a fresh process (this module with `--probe-any
   N`) that reports the NFA state's run count after every event; a process above the memory
   cap or the time limit is killed and the larger sizes are not tried.
3. **Stage split with floors.** The in-process replay of part 1's stream (300,000 events) in this
   process, CPU seconds, best of --repeat: parse (`read_event_file`), GPM (`GpmEvaluator`), NFA
   (`Runtime.process`/`advance_time`), grouping/other (bench.common's `replay` timers),
   each against its floor measured in the same run: `pyoxigraph.parse` of the same file alone;
   an Oxigraph store bulk-loaded per 5,000-event batch and the 3 GPM queries run on it, rows as
   dicts of `str(term)`; a plain-Python run-list loop over the same A/B/C rows (parse the
   compared literals, WITHIN, strict contiguity, Kleene+ continuation, one tuple per match).

Run from the repository root (Spark's Python is this interpreter):
    .venv/bin/python -m bench.bench_throughput [--sizes 300000,1000000] [--quick] [--no-spark]
        [--no-flink] [--no-any] [--no-split]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from bench import proctree, vshape
from bench.bench_engine import describe_machine
from bench.common import CPU, REPO, compile_text, current_engine, replay
from bench.proctree import GB, MB, Outcome
from rsep.plugin.numbering import number_events
from rsep.plugin.replay import Replay
from rsep.plugin.store.event_reader import parse_events, read_event_file
from rsep.plugin.store.gpm_stage import GpmEvaluator

FLINK_REQUIREMENT = "apache-flink==2.3.0"
"""What the PyFlink virtualenv holds (its own: it pins older pandas and pyarrow than rsep)."""
FLINK_PARALLELISM = 1
"""One company is one partition of MATCH_RECOGNIZE: one task does the pattern work whatever the
parallelism, and a second source reader would only hold the watermark back."""
SPARK_MASTERS = ("local[2]",)
"""Spark's masters, each an engine of part 1 (`--spark-masters local[1],local[2]` shows the
scaling from one core to two)."""
ENGINE_MEMORY_CAP = 12 * GB
"""A safety cap for part 1 (the machine is shared); a run above it fails the benchmark."""
ENGINE_TIME_LIMIT = 3600.0
BATCH = 5000
"""Events per batch: `Replay`'s default, which `rsep run` uses; the GPM floor loads batches of it."""


def default_flink_venv() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "rsep-bench" / "flink-venv"


# ---------------------------------------------------------------------- part 1: engines


@dataclass
class EngineRun:
    engine: str
    events: int
    outcome: Outcome | None = None
    matches: int | None = None
    skipped: str | None = None
    """Why the engine did not run here (no Java, no PyFlink): not a failure."""
    load: float = 0.0
    """The 1-minute load average just before the run."""

    @property
    def failed(self) -> str | None:
        if self.outcome is None or self.outcome.ok:
            return None
        return self.outcome.failure()

    @property
    def rate(self) -> float | None:
        if self.outcome is None or not self.outcome.ok or self.outcome.wall <= 0:
            return None
        return self.events / self.outcome.wall


def rsep_command() -> list[str]:
    """`rsep` of this interpreter's environment (the console script next to it)."""
    script = Path(sys.executable).with_name("rsep")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "rsep.endpoint.cli"]


def spark_env() -> dict[str, str]:
    return {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}


def java_version() -> tuple[int | None, str]:
    """(major version, the first line of `java -version`), (None, why) when there is no Java."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if java is None or not Path(java).exists():
        return None, "no java on PATH (nor JAVA_HOME)"
    done = subprocess.run([java, "-version"], capture_output=True, text=True)
    first = (done.stderr or done.stdout).splitlines()[0] if (done.stderr or done.stdout) else ""
    found = re.search(r'version "(\d+)(?:\.(\d+))?', first)
    if found is None:
        return None, f"cannot read the Java version from {first!r}"
    major = int(found.group(1))
    return (int(found.group(2)) if major == 1 and found.group(2) else major), first


def flink_python(venv: Path) -> tuple[Path | None, str]:
    """The PyFlink virtualenv's python, made on first use (`python -m venv`, `pip install
    apache-flink`), and its version; (None, why) when it cannot be made or PyFlink does not
    import. A marker file records a finished install, so an interrupted one is redone."""
    python, marker = venv / "bin" / "python", venv / ".rsep-bench-installed"
    if not (marker.exists() and marker.read_text() == FLINK_REQUIREMENT and python.exists()):
        print(f"  making the PyFlink virtualenv in {venv} ({FLINK_REQUIREMENT}; first use, some minutes)")
        venv.parent.mkdir(parents=True, exist_ok=True)
        steps = [
            [sys.executable, "-m", "venv", "--clear", str(venv)],
            [str(python), "-m", "pip", "install", "-q", FLINK_REQUIREMENT],
        ]
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True)
            if done.returncode != 0:
                lines = (done.stderr or done.stdout).strip().splitlines()
                return None, f"`{' '.join(step[-3:])}` failed: {lines[-1] if lines else done.returncode}"
        marker.write_text(FLINK_REQUIREMENT)
    done = subprocess.run(
        [str(python), "-c", "import pyflink.version; print(pyflink.version.__version__)"],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        return None, f"PyFlink does not import in {venv}: {done.stderr.strip().splitlines()[-1:]}"
    return python, done.stdout.strip()


@dataclass
class Setup:
    """What part 1 can run, and why not the rest."""

    spark: str | None
    """None: Spark runs; else why it is skipped."""
    flink: Path | None
    flink_note: str
    """PyFlink's version, or why it is skipped."""
    flink_script: Path
    masters: Sequence[str] = SPARK_MASTERS


def prepare(args: argparse.Namespace, folder: Path) -> Setup:
    major, java = java_version()
    print(f"Java: {java}")
    spark = "--no-spark" if args.no_spark else None
    if spark is None and major is None:
        spark = java
    flink: Path | None = None
    if args.no_flink:
        note = "--no-flink"
    elif major is None:
        note = java
    elif major < 11:
        note = f"Flink 2 needs Java 11 or later, found {major}"
    else:
        flink, note = flink_python(args.flink_venv)
    script = folder / "flink_vshape.py"
    script.write_text(vshape.FLINK_SCRIPT)
    print(f"PyFlink: {note if flink is None else f'{note} in {args.flink_venv}'}")
    masters = tuple(args.spark_masters.split(",")) if args.spark_masters else SPARK_MASTERS
    return Setup(spark, flink, note, script, masters)


ONE_PROCESS = "rsep in-process, 1 process"
"""`rsep run` with RSEP_READ_AHEAD=0: events parsed in the matching process (rsep.plugin.prefetch),
to show what the second core brings."""


def run_engines(files: vshape.Files, setup: Setup) -> list[EngineRun]:
    """Each engine once over the files, one after the other."""
    rsep = [*rsep_command(), "run", str(files.query), "--stream", f"{vshape.STREAM}={files.trig}"]
    spark: list[tuple[str, list[str] | None, str | None]] = [
        (f"rsep Spark {master}", [*rsep, "--engine", "spark", "--master", master], setup.spark)
        for master in setup.masters
    ]
    plans: list[tuple[str, list[str] | None, str | None]] = [
        ("rsep in-process", [*rsep, "--engine", "inprocess"], None),
        (ONE_PROCESS, [*rsep, "--engine", "inprocess"], None),
        *spark,
        (
            "PyFlink MATCH_RECOGNIZE",
            [
                str(setup.flink),
                str(setup.flink_script),
                str(files.csv),
                str((vshape.WITHIN_SECONDS + 1) * 1000),  # exclusive in Flink: see bench/vshape.py
                str(FLINK_PARALLELISM),
            ],
            None if setup.flink is not None else setup.flink_note,
        ),
    ]
    runs = []
    for engine, command, skipped in plans:
        run = EngineRun(engine, files.events, skipped=skipped)
        if skipped is None and command is not None:
            gc.collect()
            run.load = os.getloadavg()[0]
            env = spark_env()
            if engine == ONE_PROCESS:
                env["RSEP_READ_AHEAD"] = "0"
            run.outcome = proctree.run(
                command,
                env=env,
                cwd=str(files.folder),
                max_rss=ENGINE_MEMORY_CAP,
                timeout=ENGINE_TIME_LIMIT,
            )
            if run.outcome.ok:
                run.matches = flink_count(run.outcome) if engine.startswith("PyFlink") else run.outcome.lines
            print(f"  {engine}: {describe(run)}", flush=True)
        runs.append(run)
    return runs


def flink_count(outcome: Outcome) -> int | None:
    found = re.fullmatch(r"matches (\d+)", outcome.last_line.strip())
    return int(found.group(1)) if found else None


def describe(run: EngineRun) -> str:
    if run.skipped is not None:
        return f"skipped ({run.skipped})"
    assert run.outcome is not None
    if run.failed is not None:
        return f"FAILED ({run.failed})"
    return (
        f"{run.matches} matches in {run.outcome.wall:.1f} s, {run.outcome.cpu:.1f} CPU s "
        f"(load average before: {run.load:.2f}), "
        f"peak RSS {run.outcome.peak_rss / MB:,.0f} MB over {run.outcome.peak_processes} processes"
    )


def print_engines(results: Sequence[tuple[vshape.Files, list[EngineRun]]]) -> None:
    print("\nV-shape SEQ (A, B+, C), strict contiguity, WITHIN 1 HOURS: whole processes, start-up included")
    header = (
        f"  {'engine':<26}{'events':>10}{'matches':>10}{'wall s':>9}{'CPU s':>8}{'events/s':>10}"
        f"{'vs PyFlink':>11}{'peak RSS':>11}{'peak PSS':>11}{'procs':>7}{'load':>6}"
    )
    print(header)
    for files, runs in results:
        flink = next((r.rate for r in runs if r.engine.startswith("PyFlink")), None)
        for run in runs:
            cells = f"  {run.engine:<26}{run.events:>10,}"
            if run.skipped is not None or run.failed is not None or run.outcome is None:
                why = f"skipped: {run.skipped}" if run.skipped is not None else f"FAILED: {run.failed}"
                print(cells + f"  {why}")
                continue
            out, rate = run.outcome, run.rate or 0.0
            ratio = f"{rate / flink:.2f}" if flink else "-"
            matches = run.matches if run.matches is not None else "?"
            print(
                cells + f"{matches:>10}{out.wall:>9.1f}{out.cpu:>8.1f}{rate:>10,.0f}"
                f"{ratio:>11}{out.peak_rss / MB:>8,.0f} MB{out.peak_pss / MB:>8,.0f} MB"
                f"{out.peak_processes:>7}{run.load:>6.1f}"
            )
        print(f"  {'oracle (the definitions)':<26}{files.events:>10,}{files.matches:>10}")


def disagreements(results: Sequence[tuple[vshape.Files, list[EngineRun]]]) -> list[str]:
    """Engines that ran and failed, or found another number of matches than the oracle."""
    problems = []
    for files, runs in results:
        for run in runs:
            if run.failed is not None:
                problems.append(f"{run.engine} at {files.events:,} events failed: {run.failed}")
            elif run.outcome is not None and run.matches != files.matches:
                problems.append(
                    f"{run.engine} at {files.events:,} events found {run.matches} matches, "
                    f"the definitions give {files.matches}"
                )
    return problems


# ---------------------------------------------------------------------- part 2: skip-till-any


def falling_trig(n: int) -> bytes:
    """n events, one per second, each priced one cent below the one before."""
    lines = [vshape.PREFIXES]
    for i in range(n):
        price = 10_000 - 0.01 * i
        lines.append(f'e:{i} {{ c:C0 s:price "{price:.2f}"^^xsd:double ; s:volume 100 . }}\n')
        lines.append(f"e:{i} prov:generatedAtTime {i} .\n")
    return "".join(lines).encode()


class _CountingRuntime:
    """Forwards to a `Runtime`, printing the state's run count after every `process` call (one
    event each: the replay runs batches of one event), so a process killed at the memory cap
    has said how far it got."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.events, self.peak = inner, 0, 0

    def new_state(self) -> Any:
        return self.inner.new_state()

    def process(self, state: Any, groups: Any) -> Any:
        result = self.inner.process(state, groups)
        self.events += 1
        runs = result[0].run_count()
        self.peak = max(self.peak, runs)
        print(json.dumps({"events": self.events, "runs": runs, "cpu": round(CPU(), 3)}), flush=True)
        return result

    def advance_time(self, state: Any, rank: int, seconds: float) -> Any:
        return self.inner.advance_time(state, rank, seconds)


def probe_any(n: int) -> None:
    """The child of part 2: replay `SEQ (A: B+: C)` over `falling_trig(n)` in-process."""
    plan = compile_text(vshape.query(": ", within="1 DAYS"))
    events = parse_events(falling_trig(n), ox.RdfFormat.TRIG, vshape.STREAM, source="<any>", scope="s0")
    driver = Replay(plan, GpmEvaluator(plan.gpms), batch_size=1)
    counting = _CountingRuntime(driver.runtime)
    driver.runtime = counting  # type: ignore[assignment]
    matches = driver.run(number_events([events]))
    print(json.dumps({"done": n, "peak_runs": counting.peak, "matches": len(matches), "cpu": CPU()}))


@dataclass
class AnyRow:
    n: int
    outcome: Outcome
    events: int = 0
    runs: int = 0
    peak_runs: int = 0
    cpu: float = 0.0
    done: bool = False


def sweep_any(sizes: Sequence[int], cap: int, limit: float) -> list[AnyRow]:
    rows = []
    for n in sizes:
        progress: dict[str, Any] = {}

        def seen(line: str, progress: dict[str, Any] = progress) -> None:
            if line.startswith("{"):
                progress.update(json.loads(line))

        outcome = proctree.run(
            [sys.executable, "-m", "bench.bench_throughput", "--probe-any", str(n)],
            cwd=str(REPO),
            max_rss=cap,
            cpu_limit=limit,
            timeout=3 * limit,
            poll=0.1,
            on_line=seen,
        )
        row = AnyRow(n, outcome, progress.get("events", 0), progress.get("runs", 0))
        row.peak_runs, row.cpu = progress.get("peak_runs", row.runs), progress.get("cpu", 0.0)
        row.done = outcome.ok and "done" in progress
        rows.append(row)
        status = "done" if row.done else outcome.failure()
        print(f"  n={n}: {row.peak_runs:,} runs, {outcome.peak_rss / MB:,.0f} MB, {status}", flush=True)
        if not row.done:
            break
    return rows


def print_any(rows: Sequence[AnyRow], sizes: Sequence[int], cap: int, limit: float) -> None:
    print(
        "\nskip-till-any SEQ (A: B+: C), n events with falling prices (each an A and a B, no C), "
        "WITHIN 1 DAYS; one process per n"
    )
    print(
        f"  {'n':>6}{'peak runs':>14}{'n^3/6':>14}{'runs/(n^3/6)':>14}{'peak RSS':>11}"
        f"{'wall s':>9}{'CPU s':>9}  status"
    )
    for row in rows:
        cube = row.n**3 / 6
        status = "complete" if row.done else f"CUT OFF ({row.outcome.failure()}) after {row.events} events"
        print(
            f"  {row.n:>6}{row.peak_runs:>14,}{cube:>14,.0f}{row.peak_runs / cube:>14.2f}"
            f"{row.outcome.peak_rss / MB:>8,.0f} MB{row.outcome.wall:>9.1f}{row.cpu:>9.1f}  {status}"
        )
    done = [row for row in rows if row.done]
    if done and all(row.peak_runs == row.n * (row.n + 1) * (row.n + 2) // 6 for row in done):
        print(
            "  peak runs = n(n+1)(n+2)/6 exactly: n runs waiting for a first B, n(n-1)/2 B runs "
            "still growing, (n+1)n(n-1)/6 B runs waiting for a C"
        )
    if len(done) >= 2 and done[-1].peak_runs > done[0].peak_runs:
        per_run = (done[-1].outcome.peak_rss - done[0].outcome.peak_rss) / (
            done[-1].peak_runs - done[0].peak_runs
        )
        print(f"  about {per_run:,.0f} bytes of RSS per run (between n={done[0].n} and n={done[-1].n})")
    untried = [n for n in sizes if n > rows[-1].n] if rows else list(sizes)
    if untried:
        print(
            f"  not tried (a smaller n was cut off at {cap / GB:.0f} GB or {limit:.0f} CPU s): "
            + ", ".join(map(str, untried))
        )


# ---------------------------------------------------------------------- part 3: stage split


@dataclass
class Split:
    events: int
    matches: int
    parse: float
    gpm: float
    nfa: float
    other: float
    peak_runs: int
    quads: int
    parse_floor: float
    gpm_floor: float
    nfa_floor: float
    floor_matches: int

    @property
    def total(self) -> float:
        return self.parse + self.gpm + self.nfa + self.other


def _literal(term: str) -> float:
    """The value of a numeric literal's N-Triples text (`"12.5"^^<...#double>`)."""
    return float(term[1 : term.index('"', 1)])


def _event_quads(path: Path) -> tuple[list[list[ox.Quad]], dict[str, float]]:
    """The file's event-graph quads, one list per event in file order, and each event graph's
    time (str of the graph name -> seconds): the floors' inputs, prepared outside their timers."""
    by_graph: dict[str, list[ox.Quad]] = {}
    times: dict[str, float] = {}
    for quad in ox.parse(path=str(path), format=ox.RdfFormat.TRIG):
        if isinstance(quad.graph_name, ox.DefaultGraph):
            assert isinstance(quad.object, ox.Literal)
            times[str(quad.subject)] = float(quad.object.value)
        else:
            by_graph.setdefault(str(quad.graph_name), []).append(quad)
    return list(by_graph.values()), times


def _chunks(items: list[list[ox.Quad]], size: int) -> Iterator[list[ox.Quad]]:
    for start in range(0, len(items), size):
        yield [quad for event in items[start : start + size] for quad in event]


def floors(path: Path, queries: Sequence[str], repeat: int) -> tuple[int, float, float, float, int]:
    """(quads, parse floor, GPM floor, NFA floor, matches the NFA floor found), CPU seconds,
    each the best of `repeat`."""
    parse_best, quads = float("inf"), 0
    for _ in range(repeat):
        gc.collect()
        start = CPU()
        quads = sum(1 for _ in ox.parse(path=str(path), format=ox.RdfFormat.TRIG))
        parse_best = min(parse_best, CPU() - start)
    events, times = _event_quads(path)
    gpm_best = nfa_best = float("inf")
    matches = 0
    for _ in range(repeat):
        gc.collect()
        gpm = nfa = 0.0
        runs: list[tuple[float, float, bool]] = []
        found: list[tuple[float, float]] = []
        for batch in _chunks(events, BATCH):
            start = CPU()
            rows = []
            store = ox.Store()
            store.bulk_extend(batch)
            for text in queries:
                result = store.query(text)
                assert isinstance(result, ox.QuerySolutions)
                names = [v.value for v in result.variables]
                rows.append(
                    [{n: str(t) for n, t in zip(names, s, strict=True) if t is not None} for s in result]
                )
            gpm += CPU() - start
            ordered = _by_event(rows, times)  # grouping: not a floor of the NFA
            start = CPU()
            runs = _nfa_floor(ordered, runs, found)
            nfa += CPU() - start
        gpm_best, nfa_best, matches = min(gpm_best, gpm), min(nfa_best, nfa), len(found)
    return quads, parse_best, gpm_best, nfa_best, matches


def _by_event(
    rows: list[list[dict[str, str]]], times: dict[str, float]
) -> list[tuple[float, dict[str, str], dict[str, str], dict[str, str]]]:
    """The A, B and C rows of each event (one of each here), in time order."""
    joined: dict[str, list[dict[str, str]]] = {}
    for gpm_rows in rows:
        for row in gpm_rows:
            joined.setdefault(row["__rsep_event"], []).append(row)
    ordered = sorted((times[graph], *found) for graph, found in joined.items())
    return ordered  # type: ignore[return-value]


def _nfa_floor(
    events: list[tuple[float, dict[str, str], dict[str, str], dict[str, str]]],
    runs: list[tuple[float, float, bool]],
    found: list[tuple[float, float]],
) -> list[tuple[float, float, bool]]:
    """The V-shape over consecutive events: a run is (A's time, A's price, took a B); an event
    continues a run as B (price below A's), completes it as C (above A's, after a B), or ends
    it (strict contiguity); every event starts a run as A. Returns the runs left."""
    within = vshape.WITHIN_SECONDS
    for time_, a, b, c in events:
        p2, p3 = _literal(b["p2"]), _literal(c["p3"])
        kept = []
        for start, p1, took in runs:
            if time_ - start > within:
                continue
            if p2 < p1:
                kept.append((start, p1, True))
            elif took and p3 > p1:
                found.append((start, time_))
        kept.append((time_, _literal(a["p1"]), False))
        runs = kept
    return runs


def stage_split(files: vshape.Files, repeat: int) -> Split:
    plan = compile_text(vshape.query())
    parse_best = float("inf")
    for _ in range(repeat):
        events = None
        gc.collect()
        start = CPU()
        events = read_event_file(files.trig, vshape.STREAM, scope="s0")
        parse_best = min(parse_best, CPU() - start)
    assert events is not None
    numbered = number_events([events])
    del events
    engine = current_engine()
    best = None
    for _ in range(repeat):
        matches, timings = replay(engine, plan, numbered)
        count = len(matches)
        del matches
        if best is None or timings.total < best[1].total:
            best = (count, timings)
    assert best is not None
    count, timings = best
    del numbered
    gc.collect()
    quads, parse_floor, gpm_floor, nfa_floor, floor_matches = floors(
        files.trig, [g.event_query for g in sorted(plan.gpms, key=lambda g: g.index)], repeat
    )
    return Split(
        files.events,
        count,
        parse_best,
        timings.gpm,
        timings.nfa,
        timings.total - timings.gpm - timings.nfa,
        timings.peak_runs,
        quads,
        parse_floor,
        gpm_floor,
        nfa_floor,
        floor_matches,
    )


def print_split(split: Split, repeat: int) -> None:
    n = split.events
    print(
        f"\nstage split: in-process replay of the {n:,}-event V-shape file, CPU seconds of this process, "
        f"best of {repeat}; {split.matches:,} matches, peak {split.peak_runs} runs"
    )
    print(
        f"  {'stage':<16}{'rsep s':>9}{'events/s':>11}   {'floor (same run)':<46}{'floor s':>9}"
        f"{'events/s':>11}{'rsep/floor':>11}"
    )
    rows = [
        (
            "parse",
            split.parse,
            f"pyoxigraph.parse alone ({split.quads / split.parse_floor:,.0f} quads/s)",
            split.parse_floor,
        ),
        ("GPM", split.gpm, "Store.bulk_extend per batch + 3 GPM queries", split.gpm_floor),
        ("NFA", split.nfa, "plain-Python run-list loop over A/B/C rows", split.nfa_floor),
        ("grouping/other", split.other, "-", None),
        ("total", split.total, "sum of the floors", split.parse_floor + split.gpm_floor + split.nfa_floor),
    ]
    for name, seconds, floor_name, floor in rows:
        cells = f"  {name:<16}{seconds:>9.2f}{n / seconds:>11,.0f}   {floor_name:<46}"
        if floor is not None:
            cells += f"{floor:>9.2f}{n / floor:>11,.0f}{seconds / floor:>10.1f}x"
        print(cells.rstrip())


# ---------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", help="events per engine run, comma-separated (default 300000,1000000)")
    parser.add_argument("--quick", action="store_true", help="small sizes, best of 1: to check the script")
    parser.add_argument("--no-spark", action="store_true", help="skip rsep on Spark")
    parser.add_argument("--no-flink", action="store_true", help="skip PyFlink")
    parser.add_argument("--spark-masters", help="Spark masters, comma-separated (default local[2])")
    parser.add_argument("--no-engines", action="store_true", help="skip part 1 (engines end to end)")
    parser.add_argument("--no-any", action="store_true", help="skip part 2 (skip-till-any memory)")
    parser.add_argument("--no-split", action="store_true", help="skip part 3 (stage split)")
    parser.add_argument("--any-sizes", help="n for part 2 (default 25,50,100,200,400)")
    parser.add_argument("--any-cap-gb", type=float, default=4.0, help="part 2 memory cap (default 4)")
    parser.add_argument(
        "--any-cpu-limit", type=float, default=120.0, help="part 2 limit in CPU seconds (default 120)"
    )
    parser.add_argument("--companies", type=int, default=1,
                        help="part 1: companies, each its own walk and key (default 1)")  # fmt: skip
    parser.add_argument("--tick", type=int, default=vshape.TICK_SECONDS, help="seconds between events (60)")
    parser.add_argument("--split-size", type=int, help="events of part 3 (default 300000)")
    parser.add_argument("--repeat", type=int, help="part 3: best of N (default 3, 1 with --quick)")
    parser.add_argument("--flink-venv", type=Path, default=default_flink_venv(), help="PyFlink's virtualenv")
    parser.add_argument("--probe-any", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))  # runs the cleanups: no orphans
    if args.probe_any is not None:
        probe_any(args.probe_any)
        return
    sizes = [int(s) for s in (args.sizes or ("20000" if args.quick else "300000,1000000")).split(",")]
    any_sizes = [
        int(s) for s in (args.any_sizes or ("10,20,40" if args.quick else "25,50,100,200,400")).split(",")
    ]
    split_size = args.split_size or (20_000 if args.quick else 300_000)
    repeat = args.repeat or (1 if args.quick else 3)
    started = time.perf_counter()
    print(f"rsep throughput benchmark{' --quick' if args.quick else ''}: {describe_machine()}")
    print(f"commit {_commit()}; pyspark {metadata.version('pyspark')}; rsep run: {' '.join(rsep_command())}")
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="rsep-bench-throughput-") as tmp:
        folder = Path(tmp)
        setup = prepare(args, folder) if not args.no_engines else None
        written: dict[int, vshape.Files] = {}
        results = []
        for size in sizes:
            if setup is None:
                break
            files = written[size] = vshape.write(
                folder / f"n{size}", size, tick=args.tick, companies=args.companies
            )
            print(
                f"\n{size:,} events written to {files.folder} "
                f"({files.trig.stat().st_size / MB:.0f} MB TriG); "
                f"the definitions give {files.matches:,} matches",
                flush=True,
            )
            results.append((files, run_engines(files, setup)))
        if results:
            print_engines(results)
        problems += disagreements(results)
        skipped = {run.engine: run.skipped for _, runs in results for run in runs if run.skipped}
        for engine, why in skipped.items():
            print(f"  skipped {engine}: {why}")
        if not args.no_any:
            print("\nskip-till-any sweep:", flush=True)
            cap = int(args.any_cap_gb * GB)
            print_any(sweep_any(any_sizes, cap, args.any_cpu_limit), any_sizes, cap, args.any_cpu_limit)
        if not args.no_split:
            files = (written.get(split_size) if args.companies == 1 else None) or vshape.write(
                folder / f"n{split_size}", split_size, tick=args.tick
            )
            print(f"\nstage split over {split_size:,} events (best of {repeat})...", flush=True)
            split = stage_split(files, repeat)
            print_split(split, repeat)
            for label, got in (("the replay", split.matches), ("the NFA floor", split.floor_matches)):
                if got != files.matches:
                    problems.append(
                        f"stage split: {label} found {got} matches, the definitions give {files.matches}"
                    )
    print(f"\ndone in {time.perf_counter() - started:.0f} s")
    if problems:
        sys.exit("FAILED:\n  " + "\n  ".join(problems))


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    return (done.stdout.strip() or "unknown") + (" (with uncommitted changes)" if dirty else "")


if __name__ == "__main__":
    main()
