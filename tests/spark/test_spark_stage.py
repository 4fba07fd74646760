"""The Spark stage on small hand-built inputs: exact matches, and the same
matches as the in-process replay. Small `batch_size`s spread the events over
several partitions and GPM batches."""

from __future__ import annotations

import math
import os
import pickle
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pytest

from rsep.grammar import parse_event_query
from rsep.plugin.algebra.events import Negation, SelectionStrategy, Sequence
from rsep.plugin.algebra.sparql import XSD_INTEGER
from rsep.plugin.compile.query_plan import compile_query
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.nfa.runtime import Match
from rsep.plugin.spark.adapter import GPM_COLUMNS, BatchKeyStep, match_frame, matches_of, rows_of
from rsep.plugin.spark.cds import ClassCache
from rsep.plugin.spark.session import default_conf, local_cores
from rsep.plugin.spark.stage import SparkReplay
from rsep.plugin.store.kb import KnowledgeBase
from tests.support.spark import (
    KB,
    S1,
    S2,
    bgp,
    compare,
    event,
    found,
    gpm,
    in_kb,
    knowledge_base,
    numbered,
    optional,
    plan_of,
    reference,
    typed,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

NEXT, ANY, STRICT = (
    SelectionStrategy.SKIP_TILL_NEXT,
    SelectionStrategy.SKIP_TILL_ANY,
    SelectionStrategy.STRICT,
)


def seq(*elements: object, strategy: SelectionStrategy = NEXT) -> Sequence:
    return Sequence(tuple(elements), (strategy,) * (len(elements) - 1))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- Spark runs


@pytest.mark.spark
def test_sequence_over_two_streams_with_several_keys(spark: SparkSession) -> None:
    plan = plan_of(
        seq(typed("A", "A", value="a", streams=(S1,)), typed("B", "B", value="b", streams=(S2,))),
        streams=(S1, S2),
    )
    assert plan.key == ("k",)
    events = numbered(
        [event(1, "A", "k1", 1), event(2, "A", "k2", 2), event(4, "A", "k1", 3)],
        [
            event(3, "B", "k1", 5, stream=S2),
            event(5, "B", "k2", 6, stream=S2),
            event(5, "B", "k1", 7, stream=S2),
        ],
    )
    matches = SparkReplay(plan, KnowledgeBase(), spark, batch_size=2).run(events)
    assert found(matches) == [
        ((0, 2), {"a": "1", "b": "5", "k": "k1"}),
        ((1, 4), {"a": "2", "b": "6", "k": "k2"}),
        ((3, 5), {"a": "3", "b": "7", "k": "k1"}),
    ]
    assert [(m.start_time, m.end_time, m.start_rank, m.end_rank) for m in matches] == [
        (1.0, 3.0, 0, 2),
        (2.0, 5.0, 1, 4),
        (4.0, 5.0, 3, 4),
    ]
    assert matches == reference(plan, KnowledgeBase(), events)


@pytest.mark.spark
def test_strict_contiguity_sees_the_other_keys_events(spark: SparkSession) -> None:
    """Each key's NFA only gets its own rows, yet `A , B` must not match
    across another key's event: ranks are numbered before partitioning."""
    plan = plan_of(seq(typed("A", "A"), typed("B", "B"), strategy=STRICT))
    events = numbered(
        [
            event(1, "A", "k1"),
            event(2, "A", "k2"),  # between k1's A and B
            event(3, "B", "k1"),
            event(4, "B", "k2"),  # k1's B is between k2's A and B
            event(5, "A", "k1"),
            event(6, "B", "k1"),  # contiguous
            event(7, "A", "k2"),
            event(7, None),  # same timestamp, same rank: not in between
            event(8, "B", "k2"),
        ]
    )
    matches = SparkReplay(plan, KnowledgeBase(), spark, batch_size=3).run(events)
    assert found(matches) == [((4, 5), {"k": "k1"}), ((6, 8), {"k": "k2"})]
    assert matches == reference(plan, KnowledgeBase(), events)


@pytest.mark.spark
def test_stateful_filter_compares_with_an_earlier_event(spark: SparkSession) -> None:
    plan = plan_of(
        seq(typed("A", "A", value="a"), typed("B", "B", compare(">", "?b", "?a"), value="b"), strategy=ANY)
    )
    assert plan.gpms[1].residuals, "the FILTER reads ?a, bound by A: the NFA evaluates it"
    events = numbered(
        [
            event(1, "A", "k1", 2),
            event(2, "B", "k1", 1),
            event(3, "B", "k1", 3),
            event(4, "A", "k1", 5),
            event(5, "B", "k1", 6),
            event(6, "B", "k2", 9),
        ]
    )
    matches = SparkReplay(plan, KnowledgeBase(), spark, batch_size=2).run(events)
    assert found(matches) == [
        ((0, 2), {"a": "2", "b": "3", "k": "k1"}),
        ((0, 4), {"a": "2", "b": "6", "k": "k1"}),
        ((3, 4), {"a": "5", "b": "6", "k": "k1"}),
    ]
    assert matches == reference(plan, KnowledgeBase(), events)


ROOMS = ("<urn:room1> <urn:holds> 1", "<urn:room1> <urn:holds> 2", "<urn:room2> <urn:holds> 3")


@pytest.mark.spark
def test_background_graph_joins_once_and_constrains_the_sequence(spark: SparkSession) -> None:
    """`GRAPH <kb>` blocks run once on the driver (kb_query) and join on the
    executors; ?room, bound through the KB by both GPMs, must agree."""
    plan = plan_of(
        seq(
            typed("A", "A", in_kb(bgp("?room <urn:holds> ?a")), value="a"),
            typed("B", "B", in_kb(bgp("?room <urn:holds> ?b")), value="b"),
            strategy=ANY,
        )
    )
    assert plan.gpms[0].kb_query is not None and not plan.gpms[0].kb_graphs_in_batch
    kb = knowledge_base(*ROOMS)
    events = numbered(
        [
            event(1, "A", "k1", 1),
            event(2, "B", "k1", 3),  # room2: incompatible
            event(3, "B", "k1", 2),  # room1
            event(4, "A", "k1", 4),  # in no room: the inner join drops it
            event(5, "B", "k2", 2),
        ]
    )
    matches = SparkReplay(plan, kb, spark, batch_size=2).run(events)
    assert found(matches) == [((0, 2), {"a": "1", "b": "2", "k": "k1", "room": "<urn:room1>"})]
    assert matches == reference(plan, kb, events)


@pytest.mark.spark
def test_background_graph_inside_optional_is_copied_into_the_batches(spark: SparkSession) -> None:
    """A GRAPH block under OPTIONAL cannot be joined afterwards: the KB graph
    travels to the executors as N-Quads and is loaded into each batch store."""
    plan = plan_of(
        seq(
            typed("A", "A", optional(in_kb(bgp("?room <urn:holds> ?a"))), value="a"),
            typed("B", "B"),
        )
    )
    assert plan.gpms[0].kb_graphs_in_batch == (KB,) and plan.gpms[0].kb_query is None
    kb = knowledge_base(*ROOMS)
    events = numbered(
        [event(1, "A", "k1", 3), event(2, "A", "k2", 7), event(3, "B", "k2"), event(4, "B", "k1")]
    )
    matches = SparkReplay(plan, kb, spark, batch_size=1).run(events)
    assert found(matches) == [
        ((1, 2), {"a": "7", "k": "k2"}),
        ((0, 3), {"a": "3", "k": "k1", "room": "<urn:room2>"}),
    ]
    assert matches == reference(plan, kb, events)


@pytest.mark.spark
def test_no_partition_key_runs_one_nfa(spark: SparkSession) -> None:
    """A GPM without ?k leaves no shared variable: every row has key `[]`."""
    unkeyed = gpm("D", bgp("<urn:ev> <urn:type> <urn:D>", "<urn:ev> <urn:v> ?d"))
    plan = plan_of(seq(typed("A", "A"), Negation(typed("C", "C")), unkeyed))
    assert plan.key == ()
    events = numbered(
        [
            event(1, "A", "k1"),
            event(2, "D", None, 5),
            event(3, "A", "k2"),
            event(4, "C", "k2"),
            event(5, "D", None, 6),
        ]
    )
    matches = SparkReplay(plan, KnowledgeBase(), spark).run(events)
    assert found(matches) == [((0, 1), {"d": "5", "k": "k1"})]
    assert matches == reference(plan, KnowledgeBase(), events)


@pytest.mark.spark
def test_inputs_without_matches(spark: SparkSession) -> None:
    plan = plan_of(seq(typed("A", "A"), typed("B", "B")))
    replay = SparkReplay(plan, KnowledgeBase(), spark)
    assert replay.run([]) == []
    assert replay.run(numbered([event(1, "C", "k1"), event(2, None), event(3, "A", "k1")])) == []


BIND_VALUES = """SELECT ?a ?next ?band WHERE {
  { ?e <urn:v> ?a BIND(?a + 1 AS ?next) VALUES (?a ?band) { (1 "low") (UNDEF "any") } }
  SEQ { ?f <urn:v> ?next } }"""


@pytest.mark.spark
def test_bind_and_values_find_the_replays_matches(spark: SparkSession) -> None:
    """An EP-SPARQL BIND (a later value one above an earlier one) and VALUES (a row for 1, an
    UNDEF row for any value) on the executors: the runtime there extends and forks the runs
    as in-process."""
    plan = compile_query(parse_event_query(BIND_VALUES, dialect="ep-sparql"))
    events = numbered(
        [event(1, "A", "k1", 1), event(2, "A", "k1", 2), event(3, "A", "k2", 3), event(4, "A", "k1", 2)]
    )
    matches = SparkReplay(plan, KnowledgeBase(), spark, batch_size=2).run(events)
    assert sorted((m.start_time, m.end_time, m.mapping["a"], m.mapping["band"]) for m in matches) == [
        (1.0, 2.0, f'"1"^^<{XSD_INTEGER}>', '"any"'),
        (1.0, 2.0, f'"1"^^<{XSD_INTEGER}>', '"low"'),
        (1.0, 4.0, f'"1"^^<{XSD_INTEGER}>', '"any"'),
        (1.0, 4.0, f'"1"^^<{XSD_INTEGER}>', '"low"'),
        (2.0, 3.0, f'"2"^^<{XSD_INTEGER}>', '"any"'),
    ]
    assert matches == reference(plan, KnowledgeBase(), events)


INTERVAL_SEQ = "SELECT ?x WHERE { ?x <urn:type> <urn:A> } SEQ { ?x <urn:type> <urn:B> }"


@pytest.mark.spark
def test_interval_events_give_the_replays_matches(spark: SparkSession) -> None:
    """EP-SPARQL SEQ over A [1, 5], B [3, 8] (overlaps A: no sequence; as points, 5 < 8, it would
    be one), B [6, 9], A at 10 and B [11, 12]: the executors read the intervals' starts as the
    in-process runtime does (SeqJoin, and the match starts where its first interval does)."""
    plan = compile_query(parse_event_query(INTERVAL_SEQ, dialect="ep-sparql"))

    def spanning(start: int, time: int, kind: str) -> GraphEvent:
        return replace(event(time, kind), start=Timestamp(float(start), str(start), True))

    events = numbered(
        [spanning(1, 5, "A"), spanning(3, 8, "B"), spanning(6, 9, "B"), event(10, "A"), spanning(11, 12, "B")]
    )
    matches = SparkReplay(plan, KnowledgeBase(), spark, batch_size=2).run(events)
    assert [(m.events, m.start_time, m.end_time) for m in matches] == [
        ((0, 2), 1.0, 9.0),
        ((0, 4), 1.0, 12.0),
        ((3, 4), 10.0, 12.0),
    ]
    assert matches == reference(plan, KnowledgeBase(), events)


# --------------------------------------------------------------------------- pieces without Spark


def gpm_rows(
    *rows: tuple[int, float, int, int, dict[str, str]], starts: dict[int, float] | None = None
) -> pd.DataFrame:
    """GPM rows of key k1; `starts`: the interval starts of the events that span one."""
    spans = starts or {}
    return pd.DataFrame(
        [
            ('["k1"]', rank, time, ev, gpm, mapping, spans.get(ev, math.nan))
            for rank, time, ev, gpm, mapping in rows
        ],
        columns=list(GPM_COLUMNS),
    )


def test_rows_are_ordered_by_rank_gpm_and_event_whatever_the_shuffle() -> None:
    rows = gpm_rows((3, 9.0, 5, 1, {"k": "x"}), (1, 2.0, 2, 0, {"k": "x"}), (3, 9.0, 4, 1, {"k": "y"}))
    found, events = rows_of(rows)
    assert found == {0: [(2, {"k": "x"})], 1: [(4, {"k": "y"}), (5, {"k": "x"})]}
    assert [(events[e].rank, events[e].event.time.seconds, events[e].event.start) for e in (2, 4, 5)] == [
        (1, 2.0, None),
        (3, 9.0, None),
        (3, 9.0, None),
    ]


def test_events_carry_their_interval_starts() -> None:
    """As in process: only events spanning an interval have a start."""
    rows = gpm_rows((3, 9.0, 5, 1, {"k": "x"}), (1, 2.0, 2, 0, {"k": "x"}), (3, 9.0, 4, 1, {"k": "y"}),
                    starts={5: 6.5, 2: 0.5})  # fmt: skip
    _, events = rows_of(rows)
    starts = {e: None if n.event.start is None else n.event.start.seconds for e, n in events.items()}
    assert starts == {2: 0.5, 4: None, 5: 6.5}


def test_key_step_pickles_without_its_runtime() -> None:
    plan = plan_of(seq(typed("A", "A"), typed("B", "B")))
    step = pickle.loads(pickle.dumps(BatchKeyStep(plan.automaton, plan.key)))
    assert step.keyed._runtime is None
    rows = gpm_rows((0, 1.0, 0, 0, {"k": '"k1"'}), (1, 2.0, 1, 1, {"k": '"k1"'}))
    matches = step.matches(rows)
    assert matches == [Match((0, 1), 1.0, 2.0, 0, 1, {"k": '"k1"'})]
    assert matches_of(match_frame(matches).to_dict("records")) == matches


def test_local_masters_get_few_shuffle_partitions() -> None:
    assert local_cores("local[2]") == 2 and local_cores("local") == 1 and local_cores("local[3,2]") == 3
    assert local_cores("spark://host:7077") is None
    assert default_conf("local[2]")["spark.sql.shuffle.partitions"] == "4"
    assert "spark.sql.shuffle.partitions" not in default_conf("spark://host:7077")


def test_background_snapshot_pickles_and_answers_like_the_knowledge_base() -> None:
    kb = knowledge_base(*ROOMS)
    plan = plan_of(
        seq(
            typed("A", "A", in_kb(bgp("?room <urn:holds> ?a")), value="a"),
            typed("B", "B", optional(in_kb(bgp("?room <urn:holds> ?b"))), value="b"),
        )
    )
    snapshot = pickle.loads(pickle.dumps(kb.snapshot(plan.gpms)))
    query = plan.gpms[0].kb_query
    assert query is not None and snapshot.select(query) == kb.select(query)
    assert sorted(map(str, snapshot.graph_quads(KB))) == sorted(map(str, kb.graph_quads(KB)))
    with pytest.raises(KeyError, match="not in the snapshot"):
        snapshot.select("SELECT * WHERE { ?s ?p ?o }")


# --------------------------------------------------------------------------- the class-data archive


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def fake_dump(cache: ClassCache, log: str, pid: int) -> Path:
    dump = cache.directory / f"{cache.archive.name}.0123.dump"
    dump.write_bytes(b"archive")
    Path(f"{dump}.log").write_text(log)
    Path(f"{dump}.pid").write_text(str(pid))
    return dump


def test_a_finished_dump_becomes_the_archive(tmp_path: Path) -> None:
    cache = ClassCache(tmp_path, Path(sys.executable))
    fake_dump(cache, "[30.9s][info][cds,dynamic] Written dynamic archive 0x8 - 0x9\n", dead_pid())
    assert f"-XX:SharedArchiveFile={cache.archive}" in cache.java_options()
    assert cache.archive.read_bytes() == b"archive"
    assert [p.name for p in tmp_path.iterdir()] == [cache.archive.name]


def test_an_interrupted_dump_is_discarded_and_a_new_one_started(tmp_path: Path) -> None:
    cache = ClassCache(tmp_path, Path(sys.executable))
    fake_dump(cache, "[27.5s][info][cds,dynamic] Copying 13934 klasses\n", dead_pid())
    options = cache.java_options()
    assert not cache.archive.exists() and cache.dump is not None
    assert f"-XX:ArchiveClassesAtExit={cache.dump}" in options
    cache.started(4242)
    assert Path(f"{cache.dump}.pid").read_text() == "4242"


def test_a_dump_in_progress_is_left_alone(tmp_path: Path) -> None:
    cache = ClassCache(tmp_path, Path(sys.executable))
    dump = fake_dump(cache, "", os.getpid())
    assert cache.java_options() == "" and cache.dump is None
    assert dump.exists() and not cache.archive.exists()
