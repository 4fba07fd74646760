"""The garbage collector waits while a large text is parsed (rsep.grammar.collector), and is
back as it was after: across overlapping parses, errors, and a collector already disabled."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from rsep.compiler import parse
from rsep.grammar.collector import PAUSE_SIZE, collector_paused
from rsep.grammar.parser import SparqlSyntaxError, parse_query

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
def collections() -> Iterator[list[int]]:
    """The generations the collector collects while the test runs (the parsers built before)."""
    parse_query("SELECT * {}")
    for dialect in ("c-sparql", None):
        parse(WINDOWED.replace("WHERE", "WHERE { ?s ?p ?o }"), dialect=dialect)
    seen: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(count)
    try:
        yield seen
    finally:
        gc.callbacks.remove(count)


def test_a_large_query_is_parsed_without_a_collection(collections: list[int]) -> None:
    parse_query(large_query())
    assert len(collections) <= 1  # the one put off until the parse ends (about 100 without the pause)
    assert gc.isenabled()


def test_a_large_continuous_query_too(collections: list[int]) -> None:
    text = large_query().replace("SELECT * WHERE", WINDOWED)
    parse(text)
    parse(text, dialect="c-sparql")
    assert len(collections) <= 2
    assert gc.isenabled()


def test_small_texts_leave_the_collector_alone() -> None:
    with collector_paused(PAUSE_SIZE - 1):
        assert gc.isenabled()


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
