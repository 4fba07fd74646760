"""Fixtures shared by more than one test package, and the `shared_data` marker: a test marked
`shared_data(*parts)` reads that path of the shared data folder, looked up when the test sets up
(tests/support/shared_data.py: without the folder, the test skips saying why)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from flask import Flask

from rsep.endpoint.app import create_app
from tests.support.shared_data import shared_data
from tests.support.streaming_endpoint import config, shut_down

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("shared_data"):
        shared_data(*mark.args)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """One `local[2]` SparkSession for the whole test session (it takes seconds
    to start); pyspark is only imported when a test asks for it."""
    from rsep.plugin.spark.session import get_session, stop_session

    session = get_session("local[2]", app_name="rsep-tests")
    yield session
    stop_session()


# --------------------------------------------------------------------------- the streaming endpoint
# Applications of the continuous-query endpoint (tests/support/streaming_endpoint.py), for
# tests/endpoint_streaming and tests/entailment; tests/endpoint has its own `app` (no streaming).


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def make_app(data_dir: Path) -> Iterator[Callable[..., Flask]]:
    """Apps on the test's data folder; each is shut down (cleanly) at the end."""
    apps: list[Flask] = []

    def make(**overrides: Any) -> Flask:
        app = create_app(config(data_dir, **overrides))
        apps.append(app)
        return app

    yield make
    for app in apps:
        shut_down(app)


@pytest.fixture
def app(make_app: Callable[..., Flask]) -> Flask:
    return make_app()
