"""The garbage collector waits while a large text is parsed (rsep.grammar.collector), and is
back as it was after: across overlapping parses, errors, long overlaps, a fork, and a collector
already disabled."""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator

import pytest

from rsep.compiler import parse
from rsep.grammar import collector
from rsep.grammar.collector import PAUSE_SIZE, collector_paused
from rsep.grammar.parser import SparqlSyntaxError, parse_query
from rsep.grammar.transformer_base import TransformerBase

PREFIX = "PREFIX ex: <http://example.org/>\n"
WINDOWED = "SELECT * FROM STREAM <http://example.org/s> [RANGE 10s STEP 1s] WHERE"


def large_query(size: int = 200_000) -> str:
    groups = []
    while sum(map(len, groups)) < size:
        i = len(groups)
        groups.append(f"{{ ?s ex:p{i} ?o{i} FILTER (?o{i} > {i} || STRSTARTS(STR(?o{i}), 'x')) }}")
    unions = [" UNION ".join(groups[i : i + 200]) for i in range(0, len(groups), 200)]
    return PREFIX + "SELECT * WHERE { " + " UNION ".join(f"{{ {u} }}" for u in unions) + " }"


@pytest.fixture
def observed(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[bool]]]:
    """Whether the collector ran while a parse held it paused, and whether it was enabled when
    each transformer started (the parse tree built by then)."""
    seen: dict[str, list[bool]] = {"collected while paused": [], "enabled at transform": []}
    transform = TransformerBase.transform

    def spied(self, tree):  # type: ignore[no-untyped-def]
        seen["enabled at transform"].append(gc.isenabled())
        return transform(self, tree)

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and collector.pausing():
            seen["collected while paused"].append(True)

    monkeypatch.setattr(TransformerBase, "transform", spied)
    gc.callbacks.append(count)
    try:
        yield seen
    finally:
        gc.callbacks.remove(count)


def test_a_large_query_is_parsed_without_a_collection(observed: dict[str, list[bool]]) -> None:
    parse_query(large_query())
    assert observed == {"collected while paused": [], "enabled at transform": [False]}
    assert gc.isenabled()


def test_a_large_continuous_query_too(observed: dict[str, list[bool]]) -> None:
    text = large_query().replace("SELECT * WHERE", WINDOWED)
    parse(text)
    parse(text, dialect="c-sparql")
    assert observed["collected while paused"] == []
    assert observed["enabled at transform"] and not any(observed["enabled at transform"])
    assert gc.isenabled()


def test_small_texts_leave_the_collector_alone(observed: dict[str, list[bool]]) -> None:
    parse_query(PREFIX + "SELECT * WHERE { ?s ex:p ?o }")
    assert observed["enabled at transform"] == [True]


def test_overlapping_pauses_end_with_the_last() -> None:
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with collector_paused(PAUSE_SIZE):
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    inside.wait(10)
    with collector_paused(PAUSE_SIZE):
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other parse still runs
    release.set()
    thread.join(10)
    assert gc.isenabled()


def test_a_long_overlap_still_collects_the_young(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parses that keep overlapping would hold the collector off for ever: past
    MAX_PAUSE_SECONDS, the next one to start collects the young generations first."""
    collected: list[int] = []
    monkeypatch.setattr(collector, "MAX_PAUSE_SECONDS", 0.0)
    monkeypatch.setattr(collector.gc, "collect", lambda generation=2: collected.append(generation) or 0)
    with collector_paused(PAUSE_SIZE), collector_paused(PAUSE_SIZE), collector_paused(PAUSE_SIZE):
        assert not gc.isenabled()
    assert collected == [1, 1]
    assert gc.isenabled()


def test_an_error_ends_the_pause() -> None:
    with pytest.raises(SparqlSyntaxError):
        parse_query(large_query() + " }")
    assert gc.isenabled()


def test_a_collector_disabled_before_stays_disabled() -> None:
    gc.disable()
    try:
        with collector_paused(PAUSE_SIZE):
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_child_forked_during_a_pause_starts_unpaused() -> None:
    """The child has none of the parent's threads: their pause is not its own, and a parse in
    the child pauses and resumes the child's collector."""
    read, write = os.pipe()
    with collector_paused(PAUSE_SIZE):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            with collector_paused(PAUSE_SIZE):
                paused = not gc.isenabled() and collector.pausing()
            os.write(write, b"1" if paused and gc.isenabled() and not collector.pausing() else b"0")
            os._exit(0)
    os.close(write)
    answer = os.read(read, 1)
    os.close(read)
    os.waitpid(pid, 0)
    assert answer == b"1"
    assert gc.isenabled()
