"""A registration is compiled once (rsep.endpoint.plans): POST /queries compiles it, and the
engine that runs it, and the split engine's question whether it is a window query, take that
plan. A text over `CHILD_SIZE` is compiled in a forked child, so its parse does not take the
server's interpreter; its plan, and its errors with their positions, come back whole. With
`--query-isolation thread` it is compiled in the server."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from rsep import compiler
from rsep.endpoint import plans, workers
from rsep.plugin import WindowPlan
from tests.support.streaming_endpoint import service

EVENT_QUERY = """PREFIX ex: <http://example.org/>
SELECT ?x WITHIN 10 SECONDS FROM STREAM S1 <http://example.org/s>
WHERE { SEQ (A; B) DEFINE GPM A ON S1 { ?x ex:p "1" } DEFINE GPM B ON S1 { ?x ex:p "2" } }
"""
WINDOW_QUERY = """PREFIX ex: <http://example.org/>
SELECT ?x FROM STREAM <http://example.org/s> [RANGE 10s STEP 1s] WHERE { ?x ex:p ?y }
"""
BROKEN = EVENT_QUERY.replace('"2" }', '"2" ')  # the GPM's group is not closed


class Compiles:
    """The process id of every compile of a query (the test's: in-process; another: a child),
    written to a file, which a child's compile reaches too."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.touch()

    def __call__(self) -> list[int]:
        return [int(line) for line in self.path.read_text().split()]


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Compiles:
    seen = Compiles(tmp_path / "compiles")
    real = compiler.compile_text

    def spy(*given: Any, **named: Any) -> Any:
        with seen.path.open("a") as out:
            out.write(f"{os.getpid()}\n")
        return real(*given, **named)

    monkeypatch.setattr(plans, "compile_text", spy)
    monkeypatch.setattr(plans, "_plans", type(plans._plans)())
    return seen


def register(app, text: str, query: str = ""):
    return app.test_client().post(f"/queries{query}", data=text, content_type="application/sparql-query")


@pytest.mark.parametrize("text", [EVENT_QUERY, WINDOW_QUERY], ids=["event pattern", "window query"])
def test_a_registration_is_compiled_once(make_app, compiles: Compiles, text: str) -> None:
    app = make_app()
    answer = register(app, text)
    assert answer.status_code == 201, answer.get_data(as_text=True)
    assert compiles() == [os.getpid()]  # small: in the server's process
    (query,) = service(app).registry.all()
    assert service(app).engine.progress(query.id) is not None  # the engine runs it


def test_the_split_engine_asks_the_plan_whether_it_is_a_window_query(compiles: Compiles) -> None:
    from rsep.endpoint.engines import is_window_registration
    from rsep.plugin import RegisteredQuery

    plan = plans.compiled(WINDOW_QUERY, None, {}, None)  # as POST /queries does (dialect detected)
    assert isinstance(plan, WindowPlan)
    registered = RegisteredQuery("q", WINDOW_QUERY, plan.query.dialect.name, (), 0, "2026-11-27T00:00:00Z")
    assert is_window_registration(registered)
    assert len(compiles()) == 1


@pytest.fixture
def small_child_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plans, "CHILD_SIZE", 100)


@pytest.mark.usefixtures("small_child_size")
def test_a_large_text_is_compiled_in_a_child(make_app, compiles: Compiles) -> None:
    app = make_app()
    answer = register(app, EVENT_QUERY)
    assert answer.status_code == 201, answer.get_data(as_text=True)
    assert len(compiles()) == 1 and compiles()[0] != os.getpid()
    (query,) = service(app).registry.all()
    assert service(app).engine.progress(query.id) is not None


@pytest.mark.usefixtures("small_child_size")
def test_a_large_text_refused_in_its_child_is_a_400_at_its_position(make_app, compiles: Compiles) -> None:
    app = make_app()
    answer = app.test_client().post(
        "/queries",
        data=BROKEN,
        content_type="application/sparql-query",
        headers={"Accept": "application/json"},
    )
    assert answer.status_code == 400, answer.get_data(as_text=True)
    assert (answer.json["parameter"], answer.json["line"]) == ("query", 4)
    assert len(compiles()) == 1 and compiles()[0] != os.getpid()
    assert service(app).registry.all() == []


@pytest.mark.usefixtures("small_child_size")
def test_with_query_isolation_thread_a_large_text_is_compiled_in_the_server(
    make_app, compiles: Compiles
) -> None:
    app = make_app(RSEP_QUERY_ISOLATION="thread")
    answer = register(app, EVENT_QUERY)
    assert answer.status_code == 201, answer.get_data(as_text=True)
    assert compiles() == [os.getpid()]


@pytest.mark.usefixtures("small_child_size")
def test_a_compile_past_the_query_timeout_is_stopped_and_refused(make_app, compiles: Compiles) -> None:
    app = make_app(RSEP_QUERY_TIMEOUT=0.001)
    answer = register(app, EVENT_QUERY)
    assert answer.status_code == 400, answer.get_data(as_text=True)
    assert "took over 0.001 s and was stopped (rsep serve --query-timeout" in answer.get_data(as_text=True)
    assert service(app).registry.all() == []


@pytest.mark.usefixtures("small_child_size")
def test_a_compile_in_a_child_takes_a_query_slot(make_app, compiles: Compiles) -> None:
    app = make_app(RSEP_MAX_RUNNING_QUERIES=1)
    with app.app_context():
        assert workers.workers().queries.take()  # a query holds the one slot
    answer = register(app, EVENT_QUERY)
    assert answer.status_code == 503, answer.get_data(as_text=True)
    assert "--max-running-queries" in answer.get_data(as_text=True)
    assert compiles() == []
