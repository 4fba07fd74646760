"""Workloads and measuring harness shared by the engine benchmarks.

Workloads are built in memory (nothing is written into the repository):

- credit card (SPAseq UC 3): the reference engine's `card10k.n3`, 20,001
  transactions of two triples each, one event per two consecutive triples,
  stamped 1 ms apart (as the reference engine's sequence-based generation
  and `tests/conformance/spaseq_reference.py` do), so WITHIN 100 SECONDS
  spans the whole stream;
- stock (SPAseq UC 4): a seeded random walk of prices; every tick all
  companies report at the same timestamp (a market snapshot), so strict
  contiguity (`,`) between one company's events means "consecutive ticks".

Each workload is a TriG payload plus queries; `parse` (event_reader) turns the
payload into events, as `rsep run` does after reading the file.

The harness wraps the GPM evaluator and the NFA runtime of a `Replay` with
timers (`Instrumented`) and provides the naive GPM stage the SPAseq paper warns
about (`NaiveGpmEvaluator`: one fresh Oxigraph store per event). Revisions are
compared as whole processes by bench/bench_revisions.py (module names and
internals move between revisions; the command line does not).
"""

from __future__ import annotations

import gc
import hashlib
import importlib.util
import random
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from rsep import compiler
from rsep.plugin.compile.gpm_plan import EVENT_GRAPH_PREFIX
from rsep.plugin.compile.query_plan import QueryPlan
from rsep.plugin.graph_events import GraphEvent
from rsep.plugin.store.rdfio import batch_nquads

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
CARD_FILE = SHARED_DATA / "spaseq" / "credit-card" / "card10k.n3"

ENGINE_MODULES = (
    "rsep.plugin.store.event_reader",
    "rsep.plugin.store.gpm_stage",
    "rsep.plugin.numbering",
    "rsep.plugin.nfa.outcomes",
    "rsep.plugin.replay",
)
"""The modules a replay's stages are read from (parse, GPM stage, numbering, the runtime's
sharing constant, the replay)."""

_PROV = "<http://www.w3.org/ns/prov#generatedAtTime>"
_DECIMAL = "<http://www.w3.org/2001/XMLSchema#decimal>"
_DOUBLE = "<http://www.w3.org/2001/XMLSchema#double>"
_INTEGER = "<http://www.w3.org/2001/XMLSchema#integer>"


# ---------------------------------------------------------------------- workloads


@dataclass(frozen=True)
class Workload:
    name: str
    stream: str
    trig: bytes
    events: int
    queries: dict[str, str]
    """Query label -> SPAseq text."""
    note: str
    unkeyed: frozenset[str] = frozenset()
    """Labels of queries replayed without their partition key: one NFA holds
    the runs of all key values, as when the GPMs share no variable."""


def _trig(events: Iterable[tuple[float, Sequence[str]]]) -> bytes:
    """TriG text: one named graph per (seconds, N-Triples lines)."""
    chunks = []
    for index, (seconds, triples) in enumerate(events):
        graph = f"<urn:bench:e{index}>"
        chunks.append(f"{graph} {{\n  " + "\n  ".join(triples) + "\n}\n")
        chunks.append(f'{graph} {_PROV} "{seconds:.3f}"^^{_DECIMAL} .\n')
    return "".join(chunks).encode()


CARD_STREAM = "http://example.org/main"

_CARD_QUERY = """\
PREFIX pred: <http://example/>
SELECT ?card ?amount1 ?amount2
WITHIN 100 SECONDS
FROM STREAM S1 <http://example.org/main>
WHERE {
  SEQ (A; %(b)s)
  DEFINE GPM A ON S1 { ?card pred:id ?id . ?card pred:amount ?amount1 . }
  DEFINE GPM B ON S1 { ?card pred:id ?id2 . ?card pred:amount ?amount2 . FILTER (?amount2 %(op)s ?amount1) }
}
"""


def credit_card(limit: int | None = None) -> Workload:
    """The reference credit-card stream, one event per 2 triples, 1 ms apart.
    Queries: the reference query with its typo fixed (it compares `?id2` with
    an `?id1` no GPM binds; the same card is already the shared `?card`),
    and a Kleene+ variant (a small purchase followed by bigger ones)."""
    lines = [line.strip() for line in CARD_FILE.read_text().splitlines() if line.strip()]
    pairs = [lines[i : i + 2] for i in range(0, len(lines) - 1, 2)]
    if limit is not None:
        pairs = pairs[:limit]
    return Workload(
        name="credit card (UC 3)",
        stream=CARD_STREAM,
        trig=_trig((0.001 * (i + 1), pair) for i, pair in enumerate(pairs)),
        events=len(pairs),
        queries={
            "SEQ(A; B) amount2<amount1": _CARD_QUERY % {"b": "B", "op": "<"},
            "SEQ(A; B+) amount2>amount1": _CARD_QUERY % {"b": "B+", "op": ">"},
        },
        note=f"{len(pairs)} transactions of {CARD_FILE.name}, 1 ms apart, key ?card",
    )


STOCK_STREAM = "http://example.org/stocks"
UNKEYED_STRICT = "SEQ(A, B+, C) strict, no key"

_STOCK_QUERY = """\
PREFIX pred: <http://example.org/stock#>
SELECT ?company ?p1 ?p2 ?p3
WITHIN 60 MINUTES
FROM STREAM S1 <http://example.org/stocks>
WHERE {
  SEQ (A%(s1)sB+%(s2)sC)
  DEFINE GPM A ON S1 { ?company pred:price ?p1 . ?company pred:volume ?v1 . }
  DEFINE GPM B ON S1 { ?company pred:price ?p2 . ?company pred:volume ?v2 . FILTER (?p2 < ?p1) }
  DEFINE GPM C ON S1 { ?company pred:price ?p3 . ?company pred:volume ?v3 . FILTER (?p3 > ?p1) }
}
"""


def stock(companies: int = 20, ticks: int = 2500, seed: int = 4, tick_seconds: float = 60.0) -> Workload:
    """`companies` x `ticks` events: at every tick (`tick_seconds` apart) each
    company reports its price (a random walk, 2 decimals) and volume.
    Queries: the V-shape `SEQ(A, B+, C)` (prices below A's, then above it, in
    consecutive ticks), its skip-till-next variant `SEQ(A; B+; C)`, and the
    V-shape again with all companies in one NFA (no partition key)."""
    rng = random.Random(seed)
    prices = [rng.uniform(20, 200) for _ in range(companies)]
    price, volume = "<http://example.org/stock#price>", "<http://example.org/stock#volume>"
    events = []
    for tick in range(ticks):
        for c in range(companies):
            prices[c] = max(1.0, prices[c] * (1 + rng.gauss(0, 0.004)))
            subject = f"<http://example.org/company/C{c}>"
            triples = (
                f'{subject} {price} "{prices[c]:.2f}"^^{_DOUBLE} .',
                f'{subject} {volume} "{rng.randint(100, 10_000)}"^^{_INTEGER} .',
            )
            events.append((tick * tick_seconds, triples))
    per_window = int(3600 / tick_seconds) * companies
    return Workload(
        name="stock V-shape (UC 4)",
        stream=STOCK_STREAM,
        trig=_trig(events),
        events=len(events),
        queries={
            "SEQ(A, B+, C) strict": _STOCK_QUERY % {"s1": ", ", "s2": ", "},
            "SEQ(A; B+; C) skip-till-next": _STOCK_QUERY % {"s1": "; ", "s2": "; "},
            UNKEYED_STRICT: _STOCK_QUERY % {"s1": ", ", "s2": ", "},
        },
        unkeyed=frozenset({UNKEYED_STRICT}),
        note=(
            f"{companies} companies x {ticks} ticks {tick_seconds:g} s apart, seed {seed}; "
            f"a 60-minute window holds {per_window} events; key ?company"
        ),
    )


PAIRS_STREAM = "http://example.org/bench/stream"
_PAIRS_QUERY = """\
PREFIX b: <http://example.org/bench#>
PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>
SELECT ?k ?a ?b WHERE
{ ?a b:opens ?k ; b:group "g5" }
SEQ { ?b b:closes ?k }
FILTER ( getDURATION() < "PT10S"^^xsd:duration )
"""


def windowed_pairs(pairs: int = 20_000, groups: int = 200, rate: float = 1_000.0) -> Workload:
    """bench_soak's EP-SPARQL shape: `pairs` events opening a key in group j mod `groups`, each
    followed by one closing it, `rate` events a second; the query's first operand is a join of
    two triple patterns under a 10-second getDURATION window (its memory holds some 10 seconds
    of openings), and it matches the pairs of one group."""
    b = "http://example.org/bench#"
    events = []
    for j in range(pairs):
        opening = (f"<urn:a{j}> <{b}opens> <urn:k{j}> .", f'<urn:a{j}> <{b}group> "g{j % groups}" .')
        events.append((2 * j / rate, opening))
        events.append(((2 * j + 1) / rate, (f"<urn:b{j}> <{b}closes> <urn:k{j}> .",)))
    return Workload(
        name="windowed EP-SPARQL pairs",
        stream=PAIRS_STREAM,
        trig=_trig(events),
        events=len(events),
        queries={"{A} SEQ {B} within 10 s": _PAIRS_QUERY},
        note=f"{pairs} open/close pairs, {rate:g} events/s, {groups} groups; a 10 s window",
    )


def compile_text(text: str, keyed: bool = True) -> QueryPlan:
    """The query's plan (`rsep.compiler`), without its partition key when not `keyed`."""
    plan = compiler.compile_text(text, source="<bench>")
    assert isinstance(plan, QueryPlan)
    return plan if keyed else replace(plan, key=())


# ---------------------------------------------------------------------- engine versions


@dataclass(frozen=True)
class Engine:
    """The modules one replay uses (`ENGINE_MODULES`): rdfio (parse), gpm, the
    NFA runtime's, replay."""

    label: str
    modules: Mapping[str, Any]
    """By name (`ENGINE_MODULES`)."""
    constants: Mapping[tuple[str, str], Any] = field(default_factory=dict)
    """(module name, constant) -> value, set while this engine replays (a
    variant of the current engine that exists only in the benchmark)."""

    @property
    def rdfio(self) -> Any:
        return self.modules["rsep.plugin.store.event_reader"]

    @property
    def gpm(self) -> Any:
        return self.modules["rsep.plugin.store.gpm_stage"]

    @property
    def replay(self) -> Any:
        return self.modules["rsep.plugin.replay"]

    @contextmanager
    def configured(self) -> Iterator[None]:
        saved = {(module, name): getattr(self.modules[module], name) for module, name in self.constants}
        for (module, name), value in self.constants.items():
            setattr(self.modules[module], name, value)
        try:
            yield
        finally:
            for (module, name), value in saved.items():
                setattr(self.modules[module], name, value)

    def parse(self, workload: Workload) -> list[Any]:
        """TriG payload -> numbered events (what `rsep run` does after reading the file)."""
        events = self.rdfio.parse_events(
            workload.trig, ox.RdfFormat.TRIG, workload.stream, source="<bench>", scope="s0"
        )
        numbered: list[Any] = self.modules["rsep.plugin.numbering"].number_events([events])
        return numbered


def current_engine() -> Engine:
    return Engine("current", {name: importlib.import_module(name) for name in ENGINE_MODULES})


def without_sharing(engine: Engine) -> Engine:
    """The current engine with the runtime's outcome sharing (`Outcomes`)
    switched off: the NFA optimisations without that one."""
    return replace(
        engine, label="no sharing", constants={("rsep.plugin.nfa.outcomes", "SHARE_MIN_RUNS"): sys.maxsize}
    )


# ---------------------------------------------------------------------- naive GPM stage


class NaiveGpmEvaluator:
    """The GPM stage the SPAseq paper warns about: a fresh Oxigraph store per
    event and every GPM query run against it. Same rows as `GpmEvaluator`
    (background knowledge is not supported: the workloads have none)."""

    def __init__(self, plans: Sequence[Any]) -> None:
        assert all(p.kb_query is None and not p.kb_graphs_in_batch for p in plans)
        self.plans = plans

    def evaluate(
        self, events: Iterable[tuple[int, GraphEvent]]
    ) -> dict[int, list[tuple[int, dict[str, str]]]]:
        rows: dict[int, list[tuple[int, dict[str, str]]]] = {}
        for event_id, event in events:
            store = ox.Store()
            store.extend(
                ox.parse(batch_nquads([(event_id, event)], EVENT_GRAPH_PREFIX), ox.RdfFormat.N_QUADS)
            )
            for plan in self.plans:
                if event.stream not in plan.streams:
                    continue
                result = store.query(plan.event_query)
                assert isinstance(result, ox.QuerySolutions)
                names = [v.value for v in result.variables][1:]  # the first is the event graph
                for solution in result:
                    mapping = {
                        n: str(t) for n, t in zip(names, list(solution)[1:], strict=True) if t is not None
                    }
                    rows.setdefault(plan.index, []).append((event_id, mapping))
        return rows


# ---------------------------------------------------------------------- timing


CPU = time.process_time
"""The stages are timed in CPU seconds of this process: on a shared machine,
wall-clock time also counts what the other processes did meanwhile (Oxigraph
evaluates queries on the calling thread, so nothing is missed)."""


@dataclass
class Timings:
    """CPU seconds per stage of one replay, its wall-clock total, and the
    peak of the total number of runs of all keys' NFA states, sampled after
    every `Runtime.process` and `advance_time` call."""

    gpm: float = 0.0
    nfa: float = 0.0
    total: float = 0.0
    wall: float = 0.0
    runs_now: int = 0
    peak_runs: int = 0
    counts: dict[int, int] = field(default_factory=dict)

    def sample(self, state: Any) -> None:
        count = state.run_count()
        self.runs_now += count - self.counts.get(id(state), 0)
        self.counts[id(state)] = count
        self.peak_runs = max(self.peak_runs, self.runs_now)


class _TimedEvaluator:
    def __init__(self, inner: Any, timings: Timings) -> None:
        self.inner, self.timings = inner, timings

    def evaluate(self, events: Iterable[tuple[int, GraphEvent]]) -> Mapping[int, Sequence[Any]]:
        start = CPU()
        rows: Mapping[int, Sequence[Any]] = self.inner.evaluate(events)
        self.timings.gpm += CPU() - start
        return rows


class _TimedRuntime:
    """Forwards to a `Runtime`, timing `process` and `advance_time` and
    sampling the run count of every state it touches."""

    def __init__(self, inner: Any, timings: Timings) -> None:
        self.inner, self.timings = inner, timings

    def new_state(self) -> Any:
        return self.inner.new_state()

    def process(self, state: Any, groups: Any) -> Any:
        start = CPU()
        result = self.inner.process(state, groups)
        self.timings.nfa += CPU() - start
        self.timings.sample(result[0])
        return result

    def advance_time(self, state: Any, rank: int, seconds: float) -> Any:
        start = CPU()
        result = self.inner.advance_time(state, rank, seconds)
        self.timings.nfa += CPU() - start
        self.timings.sample(result)
        return result


def replay(
    engine: Engine, plan: QueryPlan, events: Sequence[Any], *, naive: bool = False, fast: bool = True
) -> tuple[list[Any], Timings]:
    """Run `engine`'s in-process replay, timing its stages (the wrappers add
    a few calls per key and batch) after a full garbage collection, so that
    every run starts from the same heap. `fast=False`: the GPM stage without its fast path
    (every GPM through Oxigraph)."""
    timings = Timings()
    evaluator: Any = NaiveGpmEvaluator(plan.gpms) if naive else engine.gpm.GpmEvaluator(plan.gpms, fast=fast)
    driver = engine.replay.Replay(plan, _TimedEvaluator(evaluator, timings))
    driver.runtime = _TimedRuntime(driver.runtime, timings)
    gc.collect()
    with engine.configured():
        start, wall = CPU(), time.perf_counter()
        matches: list[Any] = driver.run(events)
        timings.total, timings.wall = CPU() - start, time.perf_counter() - wall
    return matches, timings


def parse(engine: Engine, workload: Workload) -> tuple[list[Any], float, float]:
    """`engine.parse(workload)` with its CPU and wall-clock seconds."""
    gc.collect()
    start, wall = CPU(), time.perf_counter()
    events = engine.parse(workload)
    return events, CPU() - start, time.perf_counter() - wall


def digest(matches: Iterable[Any]) -> tuple[int, str]:
    """The length and a fingerprint of a match list (events, times, ranks, bindings, order)
    that any engine version's `Match` objects give alike; comparing these
    instead of keeping every engine's matches keeps the heap, and with it
    the garbage collector's work, the same for all runs."""
    hashed = hashlib.sha256()
    count = 0
    for m in matches:
        item = (m.events, m.start_time, m.end_time, m.start_rank, m.end_rank, sorted(m.mapping.items()))
        hashed.update(repr(item).encode())
        count += 1
    return count, hashed.hexdigest()


def latencies(times: Sequence[float]) -> str:
    """`p50 ... ms  p99 ... ms  max ... ms` of request times in seconds (the p99 is the sample at
    99% of the sorted list, as bench_pressure and bench_query_child print it)."""
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (f"p50 {ordered[len(ordered) // 2] * 1000:7.1f} ms  p99 {p99 * 1000:7.1f} ms  "
            f"max {ordered[-1] * 1000:7.1f} ms")  # fmt: skip
