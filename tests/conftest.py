"""Fixtures shared by every test package."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """One `local[2]` SparkSession for the whole test session (it takes seconds
    to start); pyspark is only imported when a test asks for it."""
    from rsep.plugin.spark.session import get_session, stop_session

    session = get_session("local[2]", app_name="rsep-tests")
    yield session
    stop_session()
