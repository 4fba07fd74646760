"""`rsep run`'s work, callable from tests and benchmarks: read the query and
the files, compile, replay in-process or on Spark, format the matches.

`--rule` files feed the query: EP-SPARQL CONSTRUCT rules through the Q-closure
(rsep.plugin.closure), and C-SPARQL `REGISTER STREAM <s> AS CONSTRUCT` rules,
whose evaluations become graph events of the stream <s> stamped with their
evaluation time (`derive_streams`), merged by time with the input streams
before the query (or a later rule) reads them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from rsep import compiler
from rsep.plugin import (
    DERIVED_STREAM,
    Closure,
    ClosureLimits,
    ConstructForm,
    ConsumptionPolicy,
    CycleError,
    DataError,
    EngineFailure,
    EventQuery,
    Form,
    GpmEvaluator,
    GraphEvent,
    InvalidInput,
    KnowledgeBase,
    Match,
    NumberedEvent,
    Projector,
    QueryPlan,
    Replay,
    Solution,
    Timestamp,
    WindowPlan,
    WindowRun,
    WindowStream,
    dependency_order,
    derived_event,
    events_trig,
    is_window_query,
    jsonl_line,
    number_events,
    number_stream,
    plan_windows,
    read_ahead,
    replay_window_events,
    srj_document,
    srj_frame,
    srj_mapping,
    srj_row,
    stream_event_file,
    stream_window_events,
    timestamp_position,
    to_ticks,
)

Streams = dict[str, list[GraphEvent]]
"""Events per stream IRI, each list in time order."""


class UsageError(InvalidInput):
    """A request that cannot be served as given (unknown stream, missing file)."""


@dataclass(frozen=True, slots=True)
class StreamFile:
    iri: str
    path: Path
    written: str = ""
    """The `IRI=FILE` argument as given, split again by `for_query` (an IRI may contain `=`)."""
    lateness: float | None = None
    """`--max-lateness`: seconds the file may be out of time order (None: by 1,000 events)."""
    read_ahead: bool = False
    """Parse it in a second process when it is a regular file (rsep.plugin.prefetch): the command
    line's choice; a library caller, whose process may run threads, reads it itself."""

    def for_query(self, declared: Sequence[str]) -> StreamFile:
        """The split of `IRI=FILE` whose IRI is one the query declares, the longest such IRI
        followed by `=` (`http://ex.org/s?id=1=e1.trig`); as split at the first `=` otherwise."""
        fits = [iri for iri in declared for head in (iri, f"<{iri}>") if self.written.startswith(head + "=")]
        if not fits:
            return self
        iri = max(fits, key=len)
        head = iri if self.written.startswith(iri + "=") else f"<{iri}>"
        return StreamFile(
            iri, Path(self.written[len(head) + 1 :]), self.written, self.lateness, self.read_ahead
        )


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
    """CONSTRUCT rules whose output is fed back into the stream (EP-SPARQL Q-closure), or
    C-SPARQL `REGISTER STREAM <s> AS CONSTRUCT` queries whose evaluations are the stream <s>."""
    warnings: list[str] = field(default_factory=list)
    entailment: str | None = None
    """Entailment regime of the query and its rules (`rdfs`), EventQuery.entailment."""
    base: str | None = None
    """The base IRI of the query's and the rules' relative IRIs (`--base`); None: each file's own
    address (SPARQL resolves a relative IRI against the document's address, RFC 3986 §5.1.3)."""
    match_limit: int | None = None
    """`--match-limit`: matches one timestamp of one key may report (`Automaton.match_limit`)."""
    dialect: str | None = None
    """`--dialect`: the query file's dialect (None: whichever claims it; rules are detected)."""
    closure: ClosureLimits = field(default_factory=ClosureLimits)
    """When the Q-closure of a timestamp is taken to diverge (`--closure-rounds`, `--closure-events`)."""
    t0: Timestamp | None = None
    """`--t0`: when the window query and its rules were registered, at or before the first event
    (None: at the first event); windows opening before it are not evaluated (docs/semantics.md)."""


@dataclass(frozen=True, slots=True)
class Rule:
    """A `--rule` file and its query."""

    path: Path
    query: EventQuery


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


Batch = tuple[list[Match], list[Solution]]
"""A batch's matches and their solutions."""


@dataclass
class StreamedRun:
    """An event pattern replayed in-process as its files are read (`rsep run`'s usual path): the
    solutions come batch by batch, in detection order, while the files are still being read, and
    memory holds one batch and what live runs refer to (bounded by WITHIN), not the stream."""

    plan: QueryPlan
    kb: KnowledgeBase
    sources: list[Iterator[GraphEvent]]

    def batches(
        self, seen: list[NumberedEvent] | None = None
    ) -> Iterator[tuple[list[Match], list[Solution]]]:
        """Per batch: its matches and their solutions (`seen` collects the numbered events)."""
        events: Iterable[NumberedEvent] = number_stream(self.sources)
        if seen is not None:
            events = _recorded(events, seen)
        replay = Replay(self.plan, GpmEvaluator(self.plan.gpms, self.kb))
        projector = Projector.for_plan(self.plan)
        for found, named in replay.stream(events):
            yield found, projector.solutions(found, named)

    def collect(self) -> RunResult:
        """The whole run in memory (tests, benchmarks)."""
        seen: list[NumberedEvent] = []
        matches: list[Match] = []
        solutions: list[Solution] = []
        for found, projected in self.batches(seen):
            matches.extend(found)
            solutions.extend(projected)
        return RunResult(self.plan, seen, matches, solutions)


def _recorded(events: Iterable[NumberedEvent], seen: list[NumberedEvent]) -> Iterator[NumberedEvent]:
    for event in events:
        seen.append(event)
        yield event


def load_query(path: Path, request: RunRequest, dialect: str | None = None) -> EventQuery:
    """The query in `path` with the request's options; its relative IRIs resolve against
    `--base`, else the file's address. (A window query takes no --policy: `run_windows` says so.)"""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise DataError(str(path), f"cannot read the query: {error.strerror}") from None
    base_iri = request.base or path.resolve().as_uri()
    query = compiler.parse(_utf8(data, path), dialect=dialect, base=base_iri, source=str(path))
    policy = None if is_window_query(query) else request.policy
    return compiler.with_options(query, policy=policy, entailment=request.entailment)


def _utf8(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = len(data[data.rfind(b"\n", 0, error.start) + 1 : error.start].decode("utf-8", "replace")) + 1
        byte = data[error.start]
        raise DataError(str(path), f"the query is not UTF-8 text (byte 0x{byte:02x})", line, column) from None


def compile_file(query: EventQuery, path: Path, match_limit: int | None = None) -> QueryPlan:
    """The plan of an event pattern, checked by Oxigraph, its errors located in the query file."""
    found = compiler.limited(compiler.plan(query, source=str(path)), match_limit)
    assert isinstance(found, QueryPlan)
    return found


def plan_window_file(query: EventQuery, path: Path) -> WindowPlan:
    """The plan of a window query (CQELS-CEP's event clauses, the window query), checked by
    Oxigraph before any file is read, its errors located in the query file."""
    found = compiler.plan(query, source=str(path))
    assert isinstance(found, WindowPlan)
    return found


def read_streams(plan: QueryPlan, streams: Sequence[StreamFile]) -> list[list[GraphEvent]]:
    """Events per stream of the query, in the query's stream order. A query
    naming no streams (EP-SPARQL) reads every given stream, merged by time."""
    return select_streams(plan.streams, read_inputs(streams, [plan.query]))


def read_inputs(
    files: Sequence[StreamFile], readers: Sequence[EventQuery], rules: Sequence[Rule] = ()
) -> Streams:
    """The event files, per stream, checked against what the query and the rules read (`readers`;
    one naming no stream, an EP-SPARQL query, reads them all) and what the stream rules produce."""
    given: Streams = {}
    for iri, events in stream_inputs(files, readers, rules):
        given.setdefault(iri, []).extend(events)
    return {iri: sorted(events, key=lambda e: e.time.seconds) for iri, events in given.items()}


def stream_inputs(
    files: Sequence[StreamFile], readers: Sequence[EventQuery], rules: Sequence[Rule] = ()
) -> list[tuple[str, Iterator[GraphEvent]]]:
    """`read_inputs`, as the files are read: per file, its stream and its events in time order
    (a file is read when its events are needed). The files are checked before any is read."""
    produced = {rule.query.produced_stream: rule.path for rule in rules}
    wanted = list(dict.fromkeys(decl.iri for query in readers for decl in query.streams))
    every = any(not query.streams for query in readers)
    files = [stream.for_query(wanted) for stream in files]
    for stream in files:
        if stream.iri in produced:
            raise UsageError(
                f"stream <{stream.iri}> is what --rule {produced[stream.iri]} produces: "
                "do not also give it with --stream"
            )
        if not every and stream.iri not in wanted:
            readers_text = "the query and its rules read" if rules else "the query reads"
            known = ", ".join(f"<{iri}>" for iri in wanted)
            raise UsageError(f"unknown stream <{stream.iri}>: {readers_text} {known}")
    if every and not files:  # as a query missing its FROM STREAM's events is refused, below
        raise UsageError(
            "no events given: the query names no stream (EP-SPARQL reads every stream given), "
            "add --stream IRI=FILE"
        )
    missing = [iri for iri in wanted if iri not in {s.iri for s in files} and iri not in produced]
    if missing:
        raise UsageError(f"no events given for stream <{missing[0]}>: add --stream {missing[0]}=FILE")
    kinds: dict[bool, tuple[Path, GraphEvent]] = {}
    return [
        (stream.iri, _one_kind_of_time(stream.path, _read(stream, index), kinds))
        for index, stream in enumerate(files)
    ]


def select_streams(wanted: Sequence[str], streams: Streams) -> list[list[GraphEvent]]:
    """The event lists of the `wanted` streams, in that order; no `wanted` means every stream."""
    return [streams[iri] for iri in (wanted or list(streams))]


def _read(stream: StreamFile, index: int) -> Iterator[GraphEvent]:
    """A file's events, parsed in a second process while this one matches (rsep.plugin.prefetch)
    when it is a regular file; a pipe's writer sets the pace, and events read ahead in batches would
    wait there for the batch to fill, so a pipe (a FIFO, standard input) is read here."""

    def read() -> Iterator[GraphEvent]:
        return stream_event_file(stream.path, stream.iri, scope=f"s{index}", lateness=stream.lateness)

    return read_ahead(read) if stream.read_ahead and stream.path.is_file() else read()


def _one_kind_of_time(
    path: Path, events: Iterable[GraphEvent], kinds: dict[bool, tuple[Path, GraphEvent]]
) -> Iterator[GraphEvent]:
    """The events, checked as they pass: all timestamps of a run are xsd:dateTimes or all are
    numbers (epoch seconds and abstract time units do not compare). `kinds` holds the first event
    of each kind seen so far, in any file."""
    for event in events:
        kinds.setdefault(event.time.numeric, (path, event))
        other = kinds.get(not event.time.numeric)
        if other is not None:
            line, column = timestamp_position(path, event.name)
            other_line, other_column = timestamp_position(other[0], other[1].name)
            elsewhere = f"{other[0]}" + (f":{other_line}:{other_column}" if other_line is not None else "")
            raise DataError(
                str(path),
                f"timestamp {event.time.lexical} is {event.time.kind}, but {elsewhere} gives "
                f"{other[1].time.lexical}, {other[1].time.kind}: the timestamps of one run must all be "
                "xsd:dateTimes or all numbers (epoch seconds and abstract time units do not compare)",
                line,
                column,
            )
        yield event


def load_rules(request: RunRequest) -> tuple[list[Rule], list[Rule]]:
    """The `--rule` files: (C-SPARQL REGISTER STREAM rules, EP-SPARQL CONSTRUCT rules)."""
    stream_rules: list[Rule] = []
    event_rules: list[Rule] = []
    for path in request.rules:
        rule = Rule(path, load_query(path, request))
        if not is_window_query(rule.query):
            event_rules.append(rule)
        elif rule.query.produced_stream is None:
            raise UsageError(
                f"{path}: a window query as --rule is a C-SPARQL REGISTER STREAM <iri> AS CONSTRUCT ...: "
                "its evaluations become the events of the stream it names (a SELECT or a REGISTER QUERY "
                "yields solutions or graphs, no stream)"
            )
        elif any(other.query.produced_stream == rule.query.produced_stream for other in stream_rules):
            raise UsageError(f"{path}: another --rule also produces <{rule.query.produced_stream}>")
        else:
            plan_window_file(rule.query, path)  # refused now, not after the inputs are read
            stream_rules.append(rule)
    return stream_rules, event_rules


def derive_streams(rules: Sequence[Rule], kb: KnowledgeBase, streams: Streams, t0: int | None = None) -> None:
    """Add the stream of each REGISTER STREAM rule to `streams`: the rule's evaluations over the
    streams it reads (given, or produced by the rules it depends on), each one graph event stamped
    with its evaluation time t' (the window close). A rule runs after the rules it reads from, and
    evaluates every close up to the run's last given event, also past the last close whose window
    holds an item: the closes the event log passes on the endpoint (docs/semantics.md). Their
    windows start at `t0` (ticks), by default the run's first given event (`run_start`)."""
    times = [to_ticks(event.time.seconds) for events in streams.values() for event in events]
    until = max(times, default=None)
    t0 = run_start(streams) if t0 is None else t0
    for rule in _in_dependency_order(rules):
        produced = rule.query.produced_stream
        assert produced is not None
        result = replay_window_events(plan_windows(rule.query), kb, streams, until, scope=produced, t0=t0)
        streams[produced] = result.graph_events(produced)


def run_start(streams: Streams, given: Timestamp | None = None) -> int | None:
    """The run's t0 (ticks): `--t0` when given, else its first given event, of any stream. The
    query and its rules are registered together, so a window query over a derived stream starts
    there too (docs/semantics.md). A `--t0` of the other kind of time than the events', or after
    the first event (a query registered then would have read no earlier event), is refused."""
    firsts = [events[0] for events in streams.values() if events]
    first = min(firsts, key=lambda event: event.time.seconds, default=None)
    if given is None:
        return None if first is None else to_ticks(first.time.seconds)
    if first is not None and first.time.numeric != given.numeric:
        raise UsageError(
            f"--t0 {given.lexical} is {given.kind}, but the events' timestamps are "
            f"{'numbers' if first.time.numeric else 'xsd:dateTimes'} (the first: {first.time.lexical})"
        )
    t0 = to_ticks(given.seconds)
    if first is not None and t0 > to_ticks(first.time.seconds):
        raise UsageError(
            f"--t0 {given.lexical} is after the run's first event ({first.name} at {first.time.lexical}): "
            "a query registered then reads no earlier event; give the events from --t0 on instead"
        )
    return t0


def _in_dependency_order(rules: Sequence[Rule]) -> list[Rule]:
    """The rules, each after the rules whose streams it reads; a cycle cannot be replayed in time."""
    try:
        return dependency_order(
            rules, lambda r: r.query.produced_stream, lambda r: (d.iri for d in r.query.streams)
        )
    except CycleError as error:
        cycle = " -> ".join(str(rule.path) for rule in error.cycle)
        raise UsageError(f"the REGISTER STREAM rules read each other's streams in a cycle: {cycle}") from None


def load_kb(files: Sequence[KbFile]) -> KnowledgeBase:
    kb = KnowledgeBase()
    for file in files:
        kb.load(file.path, graph=file.graph)
    return kb


def run(request: RunRequest) -> RunResult | WindowRun:
    """The whole run, in memory (tests; the command line writes a `StreamedRun` or a
    `WindowStream` as it comes)."""
    outcome = start(request)
    if isinstance(outcome, WindowStream):
        return outcome.collect(list(outcome.evaluations))
    return outcome.collect() if isinstance(outcome, StreamedRun) else outcome


def start(request: RunRequest) -> RunResult | WindowStream | StreamedRun:
    """Read the query, check the inputs, and run it: in-process event patterns as their files are
    read (`StreamedRun`), window queries evaluation by evaluation once their files are read
    (`WindowStream`), everything else whole (`RunResult`)."""
    query = load_query(request.query_file, request, request.dialect)
    stream_rules, event_rules = load_rules(request)
    if stream_rules and request.engine != "inprocess":
        request.warnings.append("REGISTER STREAM rules (C-SPARQL) run in-process")
    if is_window_query(query):
        return run_windows(request, query, stream_rules, event_rules)
    if request.t0 is not None and not stream_rules:
        raise UsageError(
            "--t0 is when window queries (C-SPARQL, CQELS) and REGISTER STREAM rules start: "
            "this query has no window"
        )
    plan = compile_file(query, request.query_file, request.match_limit)
    request.warnings.extend(plan.warnings)
    kb = load_kb(request.kb)
    if not (
        stream_rules or event_rules or isinstance(query.form, ConstructForm) or request.engine != "inprocess"
    ):
        sources = stream_inputs(request.streams, [query])
        wanted = plan.streams or list(dict.fromkeys(iri for iri, _ in sources))
        ordered = [events for iri in wanted for stream, events in sources if stream == iri]
        return StreamedRun(plan, kb, ordered)
    streams = read_inputs(request.streams, [query, *(r.query for r in stream_rules)], stream_rules)
    derive_streams(stream_rules, kb, streams, run_start(streams, request.t0))
    events = number_events(select_streams(plan.streams, streams))
    if event_rules or isinstance(query.form, ConstructForm):
        return run_closure(request, plan, kb, events, event_rules)
    matches = replay(plan, kb, events, request.engine, request.master)
    solutions = Projector.for_plan(plan).solutions(matches, [n.event for n in events])
    return RunResult(plan, events, matches, solutions)


def run_closure(
    request: RunRequest,
    plan: QueryPlan,
    kb: KnowledgeBase,
    events: list[NumberedEvent],
    event_rules: Sequence[Rule] = (),
) -> RunResult:
    """The query over the stream closed under its CONSTRUCT rules (and its own
    output, when it is a CONSTRUCT query itself): in-process, per timestamp."""
    if request.engine != "inprocess":
        request.warnings.append("CONSTRUCT rules are replayed in-process: --engine spark is not used")
    rules = [compile_file(rule.query, rule.path, request.match_limit) for rule in event_rules]
    for source, rule in zip(event_rules, rules, strict=True):
        if not isinstance(rule.query.form, ConstructForm):
            raise UsageError(f"{source.path}: a --rule must be a CONSTRUCT query")
    plans = [*rules, plan]
    scopes = [*(f"rule{index}" for index in range(len(rules))), ""]  # the query's own: ""
    names = [*(str(rule.path) for rule in event_rules), str(request.query_file)]
    closure = Closure(plans, [GpmEvaluator(p.gpms, kb) for p in plans], request.closure, scopes, names)
    matches, by_id = closure.run(events)
    ordered = [by_id[i] for i in range(max(by_id, default=-1) + 1)]
    solutions = Projector.for_plan(plan).solutions(matches[-1], ordered)
    return RunResult(plan, events, matches[-1], solutions)


def run_windows(
    request: RunRequest,
    query: EventQuery,
    stream_rules: Sequence[Rule] = (),
    event_rules: Sequence[Rule] = (),
) -> WindowStream:
    """C-SPARQL and CQELS: windows queried with SPARQL, by the window runtime over Oxigraph."""
    if request.policy not in (None, ConsumptionPolicy.UNRESTRICTED):
        raise UsageError("--policy applies to event patterns, not to window queries (C-SPARQL, CQELS)")
    if request.match_limit is not None:
        raise UsageError("--match-limit applies to event patterns, not to window queries (C-SPARQL, CQELS)")
    if event_rules:
        raise UsageError(
            f"{event_rules[0].path}: an EP-SPARQL rule's events (<{DERIVED_STREAM}>) feed event patterns, "
            "not a window query: a window query reads the streams of REGISTER STREAM rules"
        )
    if request.engine != "inprocess":
        request.warnings.append("window queries (C-SPARQL, CQELS) run in-process: --engine spark is not used")
    plan = plan_window_file(query, request.query_file)
    request.warnings.extend(plan.warnings)
    kb = load_kb(request.kb)
    streams = read_inputs(request.streams, [query, *(r.query for r in stream_rules)], stream_rules)
    t0 = run_start(streams, request.t0)
    derive_streams(stream_rules, kb, streams, t0)
    return stream_window_events(plan, kb, streams, scope=query.produced_stream or "", t0=t0)


def write(
    outcome: RunResult | WindowRun | StreamedRun | WindowStream,
    output_format: str,
    out: TextIO,
    before: Callable[[], None] = lambda: None,
    batch: Callable[[], None] = lambda: None,
) -> None:
    """`rsep run`'s output; a `StreamedRun`'s solutions are written (and flushed) batch by batch,
    as the files are read. `before` runs once the first batch is in, before anything is written
    (the warnings: a run that fails on its input shows its error alone); `batch` before each
    batch that writes something (the progress bar leaves the line)."""
    if isinstance(outcome, WindowStream):
        write_windows(outcome, output_format, out, before, batch)
        return
    if not isinstance(outcome, StreamedRun):
        text = render(outcome, output_format)
        before()
        out.write(text)
        return
    if output_format not in ("jsonl", "srj"):
        raise UsageError(_TRIG_IS_FOR_EVENTS)
    srj = output_format == "srj"
    head, tail = srj_frame(outcome.plan.output_vars)
    separator: str | None = None
    for _, solutions in outcome.batches():
        if solutions:
            batch()
        if separator is None:
            before()
            out.write(head if srj else "")
            separator = ""
        for solution in solutions:
            if srj:
                out.write(separator + srj_row(solution))
                separator = ", "
            else:
                out.write(jsonl_line(solution) + "\n")
        out.flush()
    if separator is None:  # no events at all
        before()
        out.write(head if srj else "")
    out.write(tail + "\n" if srj else "")


def write_windows(
    replay: WindowStream,
    output_format: str,
    out: TextIO,
    before: Callable[[], None] = lambda: None,
    batch: Callable[[], None] = lambda: None,
) -> None:
    """A window query's output, each evaluation written (and flushed) once computed: jsonl and trig
    as `render` writes them, evaluation by evaluation; srj's head once the first evaluation has
    named the variables of a SELECT *. Checked before the first evaluation: --format trig of a
    SELECT, srj of a CONSTRUCT."""
    render(replay.collect(()), output_format)  # the format's refusals, before anything is computed
    head_written = False
    separator = ""
    for evaluation in replay.evaluations:
        one = replay.collect([evaluation])
        batch()
        if not head_written:
            before()
            head_written = True
            if output_format == "srj":
                out.write(srj_frame(replay.variables())[0])
        if output_format == "srj":
            for row in evaluation.answer.rows:
                out.write(separator + srj_mapping(row))
                separator = ", "
        else:
            out.write(render(one, output_format))
        out.flush()
    if not head_written:
        before()
        out.write(render(replay.collect(()), output_format))
    elif output_format == "srj":
        out.write(srj_frame(replay.variables())[1] + "\n")


def render(result: RunResult | WindowRun, output_format: str) -> str:
    """`rsep run --format`: jsonl, srj, or trig (a window CONSTRUCT's evaluations, or an EP-SPARQL
    CONSTRUCT's matches with their intervals, as graph events in the format `--stream` reads, so
    that another run can replay a REGISTER STREAM's or a rule's output)."""
    if output_format == "jsonl":
        return result.jsonl()
    if output_format == "srj":
        return result.srj()
    if isinstance(result, RunResult) and _interval_construct(result.plan.query):
        return events_trig(derived_event(s, DERIVED_STREAM) for s in result.solutions if s.triples)
    if not isinstance(result, WindowRun) or result.plan.form is not Form.CONSTRUCT:
        raise UsageError(_TRIG_IS_FOR_EVENTS)
    return events_trig(result.graph_events(result.plan.query.produced_stream or ""))


_TRIG_IS_FOR_EVENTS = (
    "--format trig writes graph events: the evaluations of a C-SPARQL or CQELS CONSTRUCT "
    "(REGISTER STREAM) or the matches of an EP-SPARQL CONSTRUCT; solutions print with --format jsonl"
)


def _interval_construct(query: EventQuery) -> bool:
    """A CONSTRUCT whose matches are triple occurrences over intervals (EP-SPARQL's rules)."""
    return isinstance(query.form, ConstructForm) and query.dialect.interval_semantics


def replay(
    plan: QueryPlan, kb: KnowledgeBase, events: list[NumberedEvent], engine: str, master: str
) -> list[Match]:
    if engine == "inprocess":
        return Replay(plan, GpmEvaluator(plan.gpms, kb)).run(events)
    from rsep.plugin import SPARK_ERRORS, SparkReplay, failure_message, get_session

    try:
        return SparkReplay(plan, kb, get_session(master)).run(events)
    except SPARK_ERRORS as error:
        raise EngineFailure(f"Spark failed on {master}: {failure_message(error)}") from None
