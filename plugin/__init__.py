"""The event-processing core, and its public face: what the edges import.

`rsep.endpoint` (the HTTP layer and the command line), `rsep.compiler` and `bench/` import the
core through the names below, never its modules (`tests/test_layering.py` holds this for the
endpoint), so the modules behind them can move without touching the edges. The names load
lazily: importing `rsep.plugin.algebra` (as the grammar does) or the Java check loads nothing
else, and the Spark names load pyspark only when used.

Inside, the core is: `algebra` (typed nodes), `compile` (algebra -> automaton and GPM queries),
`nfa` (the pure runtime and its per-key step), `store` (the Oxigraph adapter), `windows` (the
C-SPARQL/CQELS runtime), `service` (continuous queries for the endpoint) and `spark` (the Spark
stages and engine).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_MODULES = {
    "rsep.plugin.algebra.events": ("ConstructForm", "ConsumptionPolicy", "EventQuery"),
    "rsep.plugin.closure": ("DERIVED_STREAM", "Closure", "ClosureLimits"),
    "rsep.plugin.compile.entailment": ("REGIMES",),
    "rsep.plugin.compile.nfa_compiler": ("CompileError",),
    "rsep.plugin.compile.query_plan": ("QueryPlan", "compile_query"),
    "rsep.plugin.errors": (
        "EngineFailure",
        "EngineUnavailable",
        "InvalidInput",
        "NotFoundError",
        "RemoteFailure",
        "RsepError",
        "StorageFailure",
        "Unrepresentable",
    ),
    "rsep.plugin.graph_events": ("GraphEvent", "Timestamp"),
    "rsep.plugin.store.remote": ("RemoteRefused", "allow_remote"),
    "rsep.plugin.store.remote_deadline": ("ServiceTimeout", "set_service_timeout"),
    "rsep.plugin.store.literal_limit": ("limit_literals",),
    "rsep.plugin.log": ("EventLog", "LateEventError", "LogRecord", "MixedTimeError"),
    "rsep.plugin.nfa.runtime": ("Match",),
    "rsep.plugin.numbering": ("NumberedEvent", "number_events", "number_stream"),
    "rsep.plugin.prefetch": ("read_ahead",),
    "rsep.plugin.replay": ("Replay",),
    "rsep.plugin.results": (
        "Projector",
        "Solution",
        "derived_event",
        "jsonl_line",
        "srj_document",
        "srj_frame",
        "srj_mapping",
        "srj_row",
    ),
    "rsep.plugin.service.checkpoints": ("CheckpointStore",),
    "rsep.plugin.service.engine": ("FAILED", "StreamingEngine"),
    "rsep.plugin.service.inprocess": ("InProcessEngine",),
    "rsep.plugin.service.ingest": ("Ingest", "Submitted"),
    "rsep.plugin.service.reorder": ("EventTimePolicy", "ReorderBuffer"),
    "rsep.plugin.service.query_child": (
        "ChildCancelled",
        "ChildLimits",
        "ChildTimeout",
        "ChildUnavailable",
        "child_available",
        "run_in_child",
    ),
    "rsep.plugin.store.late_events": ("LateEventGraphs",),
    "rsep.plugin.service.lifecycle": ("EngineWiring",),
    "rsep.plugin.service.listeners": ("MatchListeners", "Subscription"),
    "rsep.plugin.service.producers": (
        "ProducerError",
        "Producers",
        "TooManyCloses",
        "produced_stream",
        "registration_warnings",
    ),
    "rsep.plugin.service.registry": ("RegisteredQuery", "Registry", "query_iri"),
    "rsep.plugin.service.split": ("SplitEngine",),
    "rsep.plugin.store.gpm_stage": ("GpmEvaluator",),
    "rsep.plugin.store.kb": ("KnowledgeBase",),
    "rsep.plugin.store.match_sink": ("OxigraphMatchSink",),
    "rsep.plugin.store.persistent": ("open_store",),
    "rsep.plugin.store.prepare": ("check_plan", "check_window_plan"),
    "rsep.plugin.store.event_reader": ("parse_events", "read_event_file", "stream_event_file"),
    "rsep.plugin.store.rdfio": (
        "MEDIA_TYPES",
        "DataError",
        "events_trig",
        "payload_timestamp_position",
        "timestamp_position",
    ),
    "rsep.plugin.store.sparql_service": (
        "DATASET_MEDIA_TYPES",
        "GRAPH_MEDIA_TYPES",
        "GRAPH_PAYLOAD_MEDIA_TYPES",
        "OFFERS",
        "Dataset",
        "Payload",
        "QueryForm",
        "QuerySyntaxError",
        "is_absolute_iri",
    ),
    "rsep.plugin.store.service_description": (
        "ServiceDescription",
        "ServiceDialect",
        "ServiceRoute",
        "describe_service",
    ),
    "rsep.plugin.store.windows": (
        "OxigraphWindows",
        "WindowStream",
        "replay_window_events",
        "stream_window_events",
    ),
    "rsep.plugin.windows.chain": ("CycleError", "dependency_order"),
    "rsep.plugin.windows.output": ("WindowRun", "output_variables"),
    "rsep.plugin.windows.window_functions": ("to_ticks",),
    "rsep.plugin.windows.window_plan": ("Form", "WindowPlan", "is_window_query", "plan_windows"),
    "rsep.plugin.spark.session": ("SPARK_ERRORS", "failure_message", "get_session", "java_problem"),
    "rsep.plugin.spark.stage": ("SparkReplay",),
    "rsep.plugin.spark.streaming_engine": ("SparkStreamingEngine",),
}
"""Module -> the names it gives the edges (loaded on first use)."""

_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # the same names, for type checkers (tests/test_layering.py: they agree)
    from rsep.plugin.algebra.events import (
        ConstructForm as ConstructForm,
    )
    from rsep.plugin.algebra.events import (
        ConsumptionPolicy as ConsumptionPolicy,
    )
    from rsep.plugin.algebra.events import (
        EventQuery as EventQuery,
    )
    from rsep.plugin.closure import (
        DERIVED_STREAM as DERIVED_STREAM,
    )
    from rsep.plugin.closure import (
        Closure as Closure,
    )
    from rsep.plugin.closure import (
        ClosureLimits as ClosureLimits,
    )
    from rsep.plugin.compile.entailment import (
        REGIMES as REGIMES,
    )
    from rsep.plugin.compile.nfa_compiler import (
        CompileError as CompileError,
    )
    from rsep.plugin.compile.query_plan import (
        QueryPlan as QueryPlan,
    )
    from rsep.plugin.compile.query_plan import (
        compile_query as compile_query,
    )
    from rsep.plugin.errors import (
        EngineFailure as EngineFailure,
    )
    from rsep.plugin.errors import (
        EngineUnavailable as EngineUnavailable,
    )
    from rsep.plugin.errors import (
        InvalidInput as InvalidInput,
    )
    from rsep.plugin.errors import (
        NotFoundError as NotFoundError,
    )
    from rsep.plugin.errors import (
        RemoteFailure as RemoteFailure,
    )
    from rsep.plugin.errors import (
        RsepError as RsepError,
    )
    from rsep.plugin.errors import (
        StorageFailure as StorageFailure,
    )
    from rsep.plugin.errors import (
        Unrepresentable as Unrepresentable,
    )
    from rsep.plugin.graph_events import (
        GraphEvent as GraphEvent,
    )
    from rsep.plugin.graph_events import (
        Timestamp as Timestamp,
    )
    from rsep.plugin.log import (
        EventLog as EventLog,
    )
    from rsep.plugin.log import (
        LateEventError as LateEventError,
    )
    from rsep.plugin.log import (
        LogRecord as LogRecord,
    )
    from rsep.plugin.log import (
        MixedTimeError as MixedTimeError,
    )
    from rsep.plugin.nfa.runtime import (
        Match as Match,
    )
    from rsep.plugin.numbering import (
        NumberedEvent as NumberedEvent,
    )
    from rsep.plugin.numbering import (
        number_events as number_events,
    )
    from rsep.plugin.numbering import (
        number_stream as number_stream,
    )
    from rsep.plugin.prefetch import (
        read_ahead as read_ahead,
    )
    from rsep.plugin.replay import (
        Replay as Replay,
    )
    from rsep.plugin.results import (
        Projector as Projector,
    )
    from rsep.plugin.results import (
        Solution as Solution,
    )
    from rsep.plugin.results import (
        derived_event as derived_event,
    )
    from rsep.plugin.results import (
        jsonl_line as jsonl_line,
    )
    from rsep.plugin.results import (
        srj_document as srj_document,
    )
    from rsep.plugin.results import (
        srj_frame as srj_frame,
    )
    from rsep.plugin.results import (
        srj_mapping as srj_mapping,
    )
    from rsep.plugin.results import (
        srj_row as srj_row,
    )
    from rsep.plugin.service.checkpoints import (
        CheckpointStore as CheckpointStore,
    )
    from rsep.plugin.service.engine import (
        FAILED as FAILED,
    )
    from rsep.plugin.service.engine import (
        StreamingEngine as StreamingEngine,
    )
    from rsep.plugin.service.ingest import (
        Ingest as Ingest,
    )
    from rsep.plugin.service.ingest import (
        Submitted as Submitted,
    )
    from rsep.plugin.service.inprocess import (
        InProcessEngine as InProcessEngine,
    )
    from rsep.plugin.service.lifecycle import (
        EngineWiring as EngineWiring,
    )
    from rsep.plugin.service.listeners import (
        MatchListeners as MatchListeners,
    )
    from rsep.plugin.service.listeners import (
        Subscription as Subscription,
    )
    from rsep.plugin.service.producers import (
        ProducerError as ProducerError,
    )
    from rsep.plugin.service.producers import (
        Producers as Producers,
    )
    from rsep.plugin.service.producers import (
        TooManyCloses as TooManyCloses,
    )
    from rsep.plugin.service.producers import (
        produced_stream as produced_stream,
    )
    from rsep.plugin.service.producers import (
        registration_warnings as registration_warnings,
    )
    from rsep.plugin.service.query_child import (
        ChildCancelled as ChildCancelled,
    )
    from rsep.plugin.service.query_child import (
        ChildLimits as ChildLimits,
    )
    from rsep.plugin.service.query_child import (
        ChildTimeout as ChildTimeout,
    )
    from rsep.plugin.service.query_child import (
        ChildUnavailable as ChildUnavailable,
    )
    from rsep.plugin.service.query_child import (
        child_available as child_available,
    )
    from rsep.plugin.service.query_child import (
        run_in_child as run_in_child,
    )
    from rsep.plugin.service.registry import (
        RegisteredQuery as RegisteredQuery,
    )
    from rsep.plugin.service.registry import (
        Registry as Registry,
    )
    from rsep.plugin.service.registry import (
        query_iri as query_iri,
    )
    from rsep.plugin.service.reorder import (
        EventTimePolicy as EventTimePolicy,
    )
    from rsep.plugin.service.reorder import (
        ReorderBuffer as ReorderBuffer,
    )
    from rsep.plugin.service.split import (
        SplitEngine as SplitEngine,
    )
    from rsep.plugin.spark.session import (
        SPARK_ERRORS as SPARK_ERRORS,
    )
    from rsep.plugin.spark.session import (
        failure_message as failure_message,
    )
    from rsep.plugin.spark.session import (
        get_session as get_session,
    )
    from rsep.plugin.spark.session import (
        java_problem as java_problem,
    )
    from rsep.plugin.spark.stage import (
        SparkReplay as SparkReplay,
    )
    from rsep.plugin.spark.streaming_engine import (
        SparkStreamingEngine as SparkStreamingEngine,
    )
    from rsep.plugin.store.event_reader import (
        parse_events as parse_events,
    )
    from rsep.plugin.store.event_reader import (
        read_event_file as read_event_file,
    )
    from rsep.plugin.store.event_reader import (
        stream_event_file as stream_event_file,
    )
    from rsep.plugin.store.gpm_stage import (
        GpmEvaluator as GpmEvaluator,
    )
    from rsep.plugin.store.kb import (
        KnowledgeBase as KnowledgeBase,
    )
    from rsep.plugin.store.late_events import (
        LateEventGraphs as LateEventGraphs,
    )
    from rsep.plugin.store.literal_limit import (
        limit_literals as limit_literals,
    )
    from rsep.plugin.store.match_sink import (
        OxigraphMatchSink as OxigraphMatchSink,
    )
    from rsep.plugin.store.persistent import (
        open_store as open_store,
    )
    from rsep.plugin.store.prepare import (
        check_plan as check_plan,
    )
    from rsep.plugin.store.prepare import (
        check_window_plan as check_window_plan,
    )
    from rsep.plugin.store.rdfio import (
        MEDIA_TYPES as MEDIA_TYPES,
    )
    from rsep.plugin.store.rdfio import (
        DataError as DataError,
    )
    from rsep.plugin.store.rdfio import (
        events_trig as events_trig,
    )
    from rsep.plugin.store.rdfio import (
        payload_timestamp_position as payload_timestamp_position,
    )
    from rsep.plugin.store.rdfio import (
        timestamp_position as timestamp_position,
    )
    from rsep.plugin.store.remote import (
        RemoteRefused as RemoteRefused,
    )
    from rsep.plugin.store.remote import (
        allow_remote as allow_remote,
    )
    from rsep.plugin.store.remote_deadline import (
        ServiceTimeout as ServiceTimeout,
    )
    from rsep.plugin.store.remote_deadline import (
        set_service_timeout as set_service_timeout,
    )
    from rsep.plugin.store.service_description import (
        ServiceDescription as ServiceDescription,
    )
    from rsep.plugin.store.service_description import (
        ServiceDialect as ServiceDialect,
    )
    from rsep.plugin.store.service_description import (
        ServiceRoute as ServiceRoute,
    )
    from rsep.plugin.store.service_description import (
        describe_service as describe_service,
    )
    from rsep.plugin.store.sparql_service import (
        DATASET_MEDIA_TYPES as DATASET_MEDIA_TYPES,
    )
    from rsep.plugin.store.sparql_service import (
        GRAPH_MEDIA_TYPES as GRAPH_MEDIA_TYPES,
    )
    from rsep.plugin.store.sparql_service import (
        GRAPH_PAYLOAD_MEDIA_TYPES as GRAPH_PAYLOAD_MEDIA_TYPES,
    )
    from rsep.plugin.store.sparql_service import (
        OFFERS as OFFERS,
    )
    from rsep.plugin.store.sparql_service import (
        Dataset as Dataset,
    )
    from rsep.plugin.store.sparql_service import (
        Payload as Payload,
    )
    from rsep.plugin.store.sparql_service import (
        QueryForm as QueryForm,
    )
    from rsep.plugin.store.sparql_service import (
        QuerySyntaxError as QuerySyntaxError,
    )
    from rsep.plugin.store.sparql_service import (
        is_absolute_iri as is_absolute_iri,
    )
    from rsep.plugin.store.windows import (
        OxigraphWindows as OxigraphWindows,
    )
    from rsep.plugin.store.windows import (
        WindowStream as WindowStream,
    )
    from rsep.plugin.store.windows import (
        replay_window_events as replay_window_events,
    )
    from rsep.plugin.store.windows import (
        stream_window_events as stream_window_events,
    )
    from rsep.plugin.windows.chain import (
        CycleError as CycleError,
    )
    from rsep.plugin.windows.chain import (
        dependency_order as dependency_order,
    )
    from rsep.plugin.windows.output import (
        WindowRun as WindowRun,
    )
    from rsep.plugin.windows.output import (
        output_variables as output_variables,
    )
    from rsep.plugin.windows.window_functions import (
        to_ticks as to_ticks,
    )
    from rsep.plugin.windows.window_plan import (
        Form as Form,
    )
    from rsep.plugin.windows.window_plan import (
        WindowPlan as WindowPlan,
    )
    from rsep.plugin.windows.window_plan import (
        is_window_query as is_window_query,
    )
    from rsep.plugin.windows.window_plan import (
        plan_windows as plan_windows,
    )
