"""EP-SPARQL's Test 2 (WWW 2011 §6, "Stream Reasoning"): the delay RDFS entailment adds per event.

A stream of triples `<s_i> rdf:type <C>` whose subjects are checked for membership in a class with
40,080 subclasses and a class hierarchy 8 deep (the paper used EthanPlants' Tracheobionta, which
cannot be fetched; the ontology here is generated deterministically with the same two numbers: a
tree with branching 4 down to depth 7, the remaining classes at depth 8, plus an unrelated
hierarchy of `--others` classes so that some events are not members). 80% of the events name a
class of the Tracheobionta tree (the root included), 20% one of the other tree.

The SPAseq query `SEQ (A) DEFINE GPM A ON S1 { ?x a p:Tracheobionta }` runs in-process
(`Replay` + `GpmEvaluator`, what `rsep run --engine inprocess` does) as:

- materialised: without entailment, over the same stream with each event's types closed by the
          producer (its class and all its superclasses): the same matches with no reasoning at
          query time, the reference for the delay reasoning adds;
- lookup: `entailment=rdfs`, the default mechanism: the schema closure is a table evaluated once
          per knowledge-base version and hash-joined per event row;
- paths:  the same rewrite with Mechanism.PATHS: `GRAPH <rsep:schema> { ?t rdfs:subClassOf+ C }`
          evaluated by Oxigraph per batch, over a batch store holding a copy of the schema;
- hand:   no entailment, the hand-written background join `?x a ?c . GRAPH <onto> { ?c
          rdfs:subClassOf* p:Tracheobionta }` (the ontology also loaded as a named graph), i.e.
          what a user could already write with SPAseq Def. 15 joins.

It prints, measured in the same run: events/s over the whole stream in batches of 5,000 events
(the replay's default; `paths` over a quarter of it, at least one batch), and per-event latency
with batches of one event (a stream processed as events arrive, as the endpoint does), with the
once-per-knowledge-base-version cost beside it; the delay entailment adds is latency(mechanism) -
latency(materialised). Then a sweep over the ontology's size shows why PATHS collapses (§8.2 of the
SPAseq paper): its cost per batch grows with the knowledge base, LOOKUP's does not.

The window case runs the C-SPARQL query `SELECT (COUNT(?x) AS ?n) ... [RANGE 10s STEP 1s] WHERE
{ ?x a p:Tracheobionta }` over one event per second (`WindowReplay` + `OxigraphWindows`, what `rsep
run` does for a window query) and prints the cost per evaluation: `entailed` (entailment=rdfs: the
window's entailed triples kept in a hidden graph, the schema read once per version), `plain` (no
entailment, the raw stream: the query alone, other counts), `materialised` (no entailment, the
materialised stream: the same counts) and `hand` (`?x a ?c . GRAPH <onto> { ?c rdfs:subClassOf*
p:Tracheobionta }`, a property path evaluated at every evaluation, as window blocks were entailed
before). Every configuration's answers are checked. Timings are printed, never asserted.

Run from the repository root:
    .venv/bin/python -m bench.bench_entailment [--quick] [--events N] [--subclasses N]
"""

from __future__ import annotations

import argparse
import platform
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import pyoxigraph as ox

from rsep import compiler
from rsep.plugin.algebra.events import EventQuery, MatchElement
from rsep.plugin.algebra.sparql import GroupPattern
from rsep.plugin.compile.entailment import Mechanism, entail_pattern
from rsep.plugin.compile.query_plan import QueryPlan, compile_query, event_pattern_of
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.numbering import NumberedEvent, number_events
from rsep.plugin.replay import Replay
from rsep.plugin.store.gpm_stage import GpmEvaluator
from rsep.plugin.store.kb import KnowledgeBase
from rsep.plugin.store.windows import OxigraphWindows
from rsep.plugin.windows import plan_windows
from rsep.plugin.windows.window_plan import WindowPlan
from rsep.plugin.windows.window_replay import Answer, Evaluation, StreamItem, WindowReplay

P = "http://example.org/plants#"
ROOT = P + "Tracheobionta"
OTHER_ROOT = P + "Fungi"
ONTOLOGY_GRAPH = "http://example.org/plants/ontology"
STREAM = "http://example.org/plants/stream"
SUBCLASS = "http://www.w3.org/2000/01/rdf-schema#subClassOf"
TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
BATCH = 5000

QUERY = f"""PREFIX p: <{P}>
SELECT ?x FROM STREAM S1 <{STREAM}>
WHERE {{ SEQ (A) DEFINE GPM A ON S1 {{ ?x a p:Tracheobionta }} }}"""
HAND = f"""PREFIX p: <{P}>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
SELECT ?x FROM STREAM S1 <{STREAM}>
WHERE {{ SEQ (A) DEFINE GPM A ON S1 {{
  ?x a ?c . GRAPH <{ONTOLOGY_GRAPH}> {{ ?c rdfs:subClassOf* p:Tracheobionta }} }} }}"""
WINDOW = f"""REGISTER QUERY q AS PREFIX p: <{P}>
SELECT (COUNT(?x) AS ?n) FROM STREAM <{STREAM}> [RANGE 10s STEP 1s] WHERE {{ ?x a p:Tracheobionta }}"""
WINDOW_HAND = f"""REGISTER QUERY q AS PREFIX p: <{P}>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
SELECT (COUNT(?x) AS ?n) FROM STREAM <{STREAM}> [RANGE 10s STEP 1s]
WHERE {{ ?x a ?c . GRAPH <{ONTOLOGY_GRAPH}> {{ ?c rdfs:subClassOf* p:Tracheobionta }} }}"""


# ---------------------------------------------------------------------- workload


def hierarchy(root: str, prefix: str, size: int, depth: int = 8, branching: int = 4) -> list[tuple[str, str]]:
    """(class, superclass) pairs of a tree of `size` classes below `root`, at most `depth` deep:
    breadth-first with `branching` children per class down to depth - 1, the rest of the classes
    spread over the nodes at depth - 1 (so the deepest level is `depth`, when size allows)."""
    pairs: list[tuple[str, str]] = []
    level = [root]
    for current in range(1, depth):
        if len(pairs) >= size:
            break
        below: list[str] = []
        for parent in level:
            for _ in range(branching):
                if len(pairs) + len(below) >= size:
                    break
                below.append(f"{prefix}{current}_{len(pairs) + len(below)}")
                pairs.append((below[-1], parent))
        level = below
    for index in range(size - len(pairs)):
        pairs.append((f"{prefix}{depth}_{len(pairs)}", level[index % len(level)]))
    return pairs


@dataclass(frozen=True)
class Workload:
    kb: KnowledgeBase
    triples: int
    """The ontology's triples in the default graph (what `lookup`, `paths` and the entailed window
    read); `hand` reads the same triples again, from a named graph."""
    members: frozenset[str]
    """Tracheobionta and its subclasses."""
    depth: int
    events: list[NumberedEvent]
    materialised: list[NumberedEvent]
    """The same events with their types closed under rdfs:subClassOf."""


def workload(subclasses: int, others: int, events: int, seed: int = 2011) -> Workload:
    plants = hierarchy(ROOT, P + "T", subclasses)
    fungi = hierarchy(OTHER_ROOT, P + "F", others)
    kb = KnowledgeBase()
    quads = [
        ox.Quad(ox.NamedNode(c), ox.NamedNode(SUBCLASS), ox.NamedNode(s), graph)
        for graph in (ox.DefaultGraph(), ox.NamedNode(ONTOLOGY_GRAPH))
        for c, s in (*plants, *fungi)
    ]
    with kb.writing() as store:
        store.bulk_extend(quads)
    members = [ROOT, *(c for c, _ in plants)]
    outsiders = [OTHER_ROOT, *(c for c, _ in fungi)]
    parent = dict((*plants, *fungi))
    rng = random.Random(seed)
    raw: list[GraphEvent] = []
    closed: list[GraphEvent] = []
    for i in range(events):
        cls = rng.choice(members) if rng.random() < 0.8 else rng.choice(outsiders)
        time = Timestamp(float(i), str(i), True)
        types = [cls]
        while types[-1] in parent:
            types.append(parent[types[-1]])
        lines = [f"<urn:plants:s{i}> <{TYPE}> <{c}> .\n" for c in types]
        raw.append(GraphEvent(STREAM, f"<urn:plants:e{i}>", time, lines[0]))
        closed.append(GraphEvent(STREAM, f"<urn:plants:e{i}>", time, "".join(lines)))
    depth = max(int(c[len(P) + 1 :].split("_")[0]) for c, _ in plants)
    triples = len(plants) + len(fungi)
    return Workload(kb, triples, frozenset(members), depth, number_events([raw]), number_events([closed]))


# ---------------------------------------------------------------------- plans


def plans() -> dict[str, QueryPlan]:
    query = compiler.parse(QUERY, source="<bench>")
    return {
        "materialised": compile_query(query),
        "lookup": compile_query(replace(query, entailment="rdfs")),
        "paths": compile_query(_with_mechanism(query, Mechanism.PATHS)),
        "hand": compile_query(compiler.parse(HAND, source="<bench>")),
    }


def _with_mechanism(query: EventQuery, mechanism: Mechanism) -> EventQuery:
    pattern = entail_pattern(event_pattern_of(query), "rdfs", mechanism)
    return replace(query, where=GroupPattern((MatchElement(pattern),)))


# ---------------------------------------------------------------------- measuring


@dataclass(frozen=True)
class Run:
    seconds: float
    matches: int
    events: int

    @property
    def per_second(self) -> float:
        return self.events / self.seconds

    @property
    def ms_per_event(self) -> float:
        return 1000 * self.seconds / self.events


def replay(plan: QueryPlan, kb: KnowledgeBase, events: Sequence[NumberedEvent], batch: int) -> Run:
    """The replay of `events`, timed after the knowledge base's answers are cached (the first
    batch of a KB version pays for them: measured apart, `refresh`)."""
    evaluator = GpmEvaluator(plan.gpms, kb)
    evaluator.evaluate([(events[0].id, events[0].event)])  # warm: per-version background answers
    start = time.perf_counter()
    matches = Replay(plan, evaluator, batch_size=batch).run(events)
    return Run(time.perf_counter() - start, len(matches), len(events))


def refresh(plan: QueryPlan, kb: KnowledgeBase, repeat: int = 3) -> float:
    """Seconds to evaluate what a plan reads from the knowledge base once (per KB version)."""
    times = []
    for _ in range(repeat):
        with kb.writing():  # a new version: nothing cached
            pass
        start = time.perf_counter()
        kb.snapshot(plan.gpms)
        times.append(time.perf_counter() - start)
    return min(times)


def best(run: Callable[[], Run], repeat: int) -> Run:
    return min((run() for _ in range(repeat)), key=lambda r: r.seconds)


# ---------------------------------------------------------------------- windows


class CountingWindows(OxigraphWindows):
    """The window store, counting its evaluations (the replay reuses an answer while the window
    content does not change)."""

    evaluations = 0

    def evaluate(self, contents: Sequence[Sequence[StreamItem]]) -> Answer:
        self.evaluations += 1
        return super().evaluate(contents)


@dataclass(frozen=True)
class WindowTiming:
    seconds: float
    evaluations: int
    answers: tuple[tuple[int, Answer], ...]

    @property
    def ms_per_evaluation(self) -> float:
        return 1000 * self.seconds / self.evaluations


def window_plans() -> dict[str, WindowPlan]:
    query = compiler.parse(WINDOW, source="<bench>")
    return {
        "materialised": plan_windows(query),
        "plain": plan_windows(query),
        "entailed": plan_windows(replace(query, entailment="rdfs")),
        "hand": plan_windows(compiler.parse(WINDOW_HAND, source="<bench>")),
    }


def window_replay(plan: WindowPlan, kb: KnowledgeBase, events: Sequence[NumberedEvent]) -> WindowTiming:
    """The replay of `events` through the windows, timed after the evaluator's per-version work
    (the copy of the knowledge base, the schema read: `window_refresh`)."""
    evaluator = CountingWindows(plan, kb)
    start = time.perf_counter()
    found: list[Evaluation] = WindowReplay(plan, evaluator).run({STREAM: [n.event for n in events]})
    seconds = time.perf_counter() - start
    return WindowTiming(seconds, evaluator.evaluations, tuple((e.time, e.answer) for e in found))


def window_refresh(plan: WindowPlan, kb: KnowledgeBase, repeat: int = 3) -> float:
    """Seconds for what a window query does once per knowledge-base version: copy the knowledge
    base into its store and, under entailment, read the schema."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        OxigraphWindows(plan, kb)
        times.append(time.perf_counter() - start)
    return min(times)


# ---------------------------------------------------------------------- report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer events, one repetition")
    parser.add_argument("--events", type=int, default=20_000, help="stream length (throughput)")
    parser.add_argument("--subclasses", type=int, default=40_080)
    parser.add_argument("--others", type=int, default=4_000, help="classes outside Tracheobionta")
    args = parser.parse_args(argv)
    repeat = 1 if args.quick else 3
    total = 4_000 if args.quick else args.events

    print(f"rsep entailment benchmark (EP-SPARQL Test 2) on {platform.python_implementation()} "
          f"{platform.python_version()}, pyoxigraph {ox.__version__}, {platform.machine()}")  # fmt: skip
    work = workload(args.subclasses, args.others, total)
    print(f"knowledge base: {work.triples:,} rdfs:subClassOf triples in the default graph, the schema "
          f"`lookup`, `paths` and `entailed` read ({args.subclasses:,} subclasses of Tracheobionta, "
          f"depth {work.depth}; {args.others:,} other classes); `hand` reads the same triples "
          f"from <{ONTOLOGY_GRAPH}>")  # fmt: skip
    compiled = plans()
    per_version = {name: refresh(compiled[name], work.kb) for name in ("lookup", "hand")}
    throughput = report_throughput(compiled, work, total, repeat)
    latency = report_latency(compiled, work, per_version, repeat, args.quick)
    report_ratios(throughput, latency)
    report_sweep(compiled, args, repeat)
    report_windows(work, repeat, args.quick)
    return 0


def report_throughput(
    compiled: dict[str, QueryPlan], work: Workload, total: int, repeat: int
) -> dict[str, Run]:
    paths = min(total, max(BATCH, total // 4))
    print(f"\nthroughput: batches of {BATCH:,}; {total:,} events (`paths`: the first {paths:,})")
    throughput: dict[str, Run] = {}
    for name, plan in compiled.items():
        events = work.materialised if name == "materialised" else work.events
        events = events if name != "paths" else events[:paths]
        throughput[name] = best(lambda plan=plan, events=events: replay(plan, work.kb, events, BATCH), repeat)
        _check(name, throughput[name], work, events)
        run = throughput[name]
        print(f"  {name:<12} {run.per_second:>10,.0f} events/s   {run.ms_per_event * 1000:8.1f} µs/event"
              f"   ({run.matches:,} matches of {run.events:,} events)")  # fmt: skip
    return throughput


def report_latency(
    compiled: dict[str, QueryPlan], work: Workload, per_version: dict[str, float], repeat: int, quick: bool
) -> dict[str, Run]:
    print("\nlatency: one event per batch (each event processed as it arrives), and what one")
    print("knowledge-base version (a SPARQL Update) costs the next batch once")
    single = {"materialised": 2_000, "lookup": 2_000, "hand": 40, "paths": 40}
    if quick:
        single = {name: max(20, n // 10) for name, n in single.items()}
    latency: dict[str, Run] = {}
    for name, plan in compiled.items():
        events = (work.materialised if name == "materialised" else work.events)[: single[name]]
        latency[name] = best(lambda plan=plan, events=events: replay(plan, work.kb, events, 1), repeat)
        _check(name, latency[name], work, events)
        run = latency[name]
        delay = run.ms_per_event - latency["materialised"].ms_per_event
        once = f"{1000 * per_version[name]:7.1f} ms" if name in per_version else "      —   "
        print(f"  {name:<12} {run.ms_per_event:9.3f} ms/event   delay from reasoning {delay:9.3f} ms/event"
              f"   per version {once}   ({run.events:,} events)")  # fmt: skip
    return latency


def report_ratios(throughput: dict[str, Run], latency: dict[str, Run]) -> None:
    print("\nratios (same run):")
    ratio = throughput["lookup"].per_second / throughput["paths"].per_second
    tp, lat = throughput, latency
    print(f"  events/s   lookup / paths = {ratio:8.1f}x   lookup / materialised = "
          f"{tp['lookup'].per_second / tp['materialised'].per_second:5.2f}   lookup / hand = "
          f"{tp['lookup'].per_second / tp['hand'].per_second:5.2f}")  # fmt: skip
    print(f"  latency    paths / lookup = {lat['paths'].ms_per_event / lat['lookup'].ms_per_event:8.1f}x"
          f"   lookup / materialised = {lat['lookup'].ms_per_event / lat['materialised'].ms_per_event:5.2f}"
          f"   hand / lookup = {lat['hand'].ms_per_event / lat['lookup'].ms_per_event:5.1f}x")  # fmt: skip


def report_sweep(compiled: dict[str, QueryPlan], args: argparse.Namespace, repeat: int) -> None:
    sizes = [1_000, 10_000, args.subclasses] if not args.quick else [1_000, args.subclasses]
    print(
        "\nontology size sweep, one event per batch (SPAseq §8.2: re-derivation per batch grows with the KB)"
    )
    for size in sizes:
        small = workload(size, args.others // 10, 400 if not args.quick else 100)
        row = []
        for name in ("lookup", "paths"):
            events = small.events[: 400 if name == "lookup" else 20]
            run = best(lambda n=name, e=events, kb=small.kb: replay(compiled[n], kb, e, 1), repeat)
            _check(name, run, small, events)
            row.append(run.ms_per_event)
        print(f"  {size:>7,} subclasses ({small.triples:>7,} triples): lookup {row[0]:7.3f} ms/event,"
              f" paths {row[1]:8.2f} ms/event  ({row[1] / row[0]:7.1f}x)")  # fmt: skip


def report_windows(work: Workload, repeat: int, quick: bool) -> None:
    count = 60 if quick else 200
    print(f"\nwindow query (C-SPARQL COUNT, [RANGE 10s STEP 1s]), {count} events, one per second")
    plans = window_plans()
    timings: dict[str, WindowTiming] = {}
    for name, plan in plans.items():
        events = (work.materialised if name == "materialised" else work.events)[:count]
        timings[name] = min(
            (window_replay(plan, work.kb, events) for _ in range(repeat)), key=lambda t: t.seconds
        )
        once = 1000 * window_refresh(plan, work.kb)
        timing = timings[name]
        print(f"  {name:<12} {timing.ms_per_evaluation:9.3f} ms/evaluation   per version {once:7.1f} ms"
              f"   ({timing.evaluations:,} evaluations)")  # fmt: skip
    for name in ("entailed", "hand"):
        if timings[name].answers != timings["materialised"].answers:
            raise SystemExit(f"window {name}: answers differ from the materialised stream's")
    base = timings["materialised"].ms_per_evaluation
    print(f"  per evaluation, against the materialised stream (same answers): entailed "
          f"{timings['entailed'].ms_per_evaluation / base:.2f}x, hand "
          f"{timings['hand'].ms_per_evaluation / base:.0f}x")  # fmt: skip


def _check(name: str, run: Run, work: Workload, events: Sequence[NumberedEvent]) -> None:
    """Every configuration must find exactly the generator's matches."""
    expected = sum(1 for n in events if n.event.ntriples.split()[2][1:-1] in work.members)
    if run.matches != expected:
        raise SystemExit(f"{name}: {run.matches} matches, expected {expected}")


if __name__ == "__main__":
    sys.exit(main())
