"""`rsep run`'s work, callable from tests and benchmarks: read the query and
the files, compile, replay in-process or on Spark, format the matches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from rsep.grammar import parse_event_query
from rsep.plugin.algebra.events import ConstructForm, ConsumptionPolicy, EventQuery
from rsep.plugin.closure import Closure
from rsep.plugin.compile.plan import QueryPlan, compile_query
from rsep.plugin.events import GraphEvent
from rsep.plugin.nfa.runtime import Match
from rsep.plugin.replay import NumberedEvent, Replay, number_events
from rsep.plugin.results import Projector, Solution, jsonl_line, srj_document
from rsep.plugin.store.gpm import GpmEvaluator, KnowledgeBase
from rsep.plugin.store.rdfio import DataError, load_into, read_event_file
from rsep.plugin.store.windows import replay_windows
from rsep.plugin.windows import is_window_query, plan_windows
from rsep.plugin.windows.output import WindowRun


class UsageError(ValueError):
    """A request that cannot be served as given (unknown stream, missing file)."""


@dataclass(frozen=True, slots=True)
class StreamFile:
    iri: str
    path: Path


@dataclass(frozen=True, slots=True)
class KbFile:
    path: Path
    graph: str | None = None


@dataclass(slots=True)
class RunRequest:
    query_file: Path
    streams: Sequence[StreamFile]
    kb: Sequence[KbFile] = ()
    policy: ConsumptionPolicy | None = None
    engine: str = "spark"
    master: str = "local[*]"
    rules: Sequence[Path] = ()
    """CONSTRUCT rules whose output is fed back into the stream (EP-SPARQL Q-closure)."""
    warnings: list[str] = field(default_factory=list)
    entailment: str | None = None
    """Entailment regime of the query and its rules (`rdfs`), EventQuery.entailment."""


@dataclass(frozen=True, slots=True)
class RunResult:
    plan: QueryPlan
    events: list[NumberedEvent]
    matches: list[Match]
    solutions: list[Solution]

    def jsonl(self) -> str:
        return "".join(jsonl_line(s) + "\n" for s in self.solutions)

    def srj(self) -> str:
        return srj_document(self.plan.output_vars, self.solutions) + "\n"


def load_query(
    path: Path, policy: ConsumptionPolicy | None = None, entailment: str | None = None
) -> EventQuery:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise DataError(str(path), f"cannot read the query: {error.strerror}") from None
    query = parse_event_query(text, source=str(path))
    if policy is not None and policy is not query.consumption:
        query = replace(query, consumption=policy)
    if entailment is not None:
        query = replace(query, entailment=entailment)
    return query


def read_streams(plan: QueryPlan, streams: Sequence[StreamFile]) -> list[list[GraphEvent]]:
    """Events per stream of the query, in the query's stream order. A query
    naming no streams (EP-SPARQL) reads every given stream, merged by time."""
    wanted = list(plan.streams) or list(dict.fromkeys(s.iri for s in streams))
    given: dict[str, list[GraphEvent]] = {}
    for index, stream in enumerate(streams):
        if stream.iri not in wanted:
            raise UsageError(
                f"unknown stream <{stream.iri}>: the query reads " + ", ".join(f"<{iri}>" for iri in wanted)
            )
        events = read_event_file(stream.path, stream.iri, scope=f"s{index}")
        given.setdefault(stream.iri, []).extend(events)
    missing = [iri for iri in wanted if iri not in given]
    if missing:
        raise UsageError(f"no events given for stream <{missing[0]}>: add --stream {missing[0]}=FILE")
    return [sorted(given[iri], key=lambda e: e.time.seconds) for iri in wanted]


def load_kb(files: Sequence[KbFile]) -> KnowledgeBase:
    kb = KnowledgeBase()
    for file in files:
        load_into(kb.store, file.path, graph=file.graph)
    kb.touch()
    return kb


def run(request: RunRequest) -> RunResult | WindowRun:
    query = load_query(request.query_file, request.policy, request.entailment)
    if is_window_query(query):
        return run_windows(request, query)
    plan = compile_query(query)
    request.warnings.extend(plan.warnings)
    kb = load_kb(request.kb)
    events = number_events(read_streams(plan, request.streams))
    if request.rules or isinstance(query.form, ConstructForm):
        return run_closure(request, plan, kb, events)
    matches = replay(plan, kb, events, request.engine, request.master)
    solutions = Projector.for_plan(plan).solutions(matches, [n.event for n in events])
    return RunResult(plan, events, matches, solutions)


def run_closure(
    request: RunRequest, plan: QueryPlan, kb: KnowledgeBase, events: list[NumberedEvent]
) -> RunResult:
    """The query over the stream closed under its CONSTRUCT rules (and its own
    output, when it is a CONSTRUCT query itself): in-process, per timestamp."""
    if request.engine != "inprocess":
        request.warnings.append("CONSTRUCT rules are replayed in-process: --engine spark is not used")
    rules = [compile_query(load_query(path, request.policy, request.entailment)) for path in request.rules]
    for path, rule in zip(request.rules, rules, strict=True):
        if not isinstance(rule.query.form, ConstructForm):
            raise UsageError(f"{path}: a --rule must be a CONSTRUCT query")
    plans = [*rules, plan]
    closure = Closure(plans, [GpmEvaluator(p.gpms, kb) for p in plans])
    matches, by_id = closure.run(events)
    ordered = [by_id[i] for i in range(max(by_id, default=-1) + 1)]
    solutions = Projector.for_plan(plan).solutions(matches[-1], ordered)
    return RunResult(plan, events, matches[-1], solutions)


def run_windows(request: RunRequest, query: EventQuery) -> WindowRun:
    """C-SPARQL and CQELS: windows queried with SPARQL, by the window runtime over Oxigraph."""
    if request.policy not in (None, ConsumptionPolicy.UNRESTRICTED):
        raise UsageError("--policy applies to event patterns, not to window queries (C-SPARQL, CQELS)")
    if request.engine != "inprocess":
        request.warnings.append("window queries (C-SPARQL, CQELS) run in-process: --engine spark is not used")
    files = [(stream.iri, stream.path) for stream in request.streams]
    return replay_windows(plan_windows(query), load_kb(request.kb), files)


def replay(
    plan: QueryPlan, kb: KnowledgeBase, events: list[NumberedEvent], engine: str, master: str
) -> list[Match]:
    if engine == "inprocess":
        return Replay(plan, GpmEvaluator(plan.gpms, kb)).run(events)
    from rsep.plugin.spark.session import get_session
    from rsep.plugin.spark.stage import SparkReplay

    return SparkReplay(plan, kb, get_session(master)).run(events)
