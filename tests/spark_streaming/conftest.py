"""Fixtures of the Spark streaming engine tests: a knowledge base on a store in tmp, and nodes
(tests/spark_streaming/support.py) on one data folder, on the shared `local[2]` session of
tests/conftest.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from rsep.plugin.store.kb import KnowledgeBase
from rsep.plugin.store.persistent import open_store
from tests.spark_streaming.support import Node

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture
def kb(tmp_path: Path) -> KnowledgeBase:
    return KnowledgeBase(open_store(tmp_path / "store"))


@pytest.fixture
def make_node(tmp_path: Path, kb: KnowledgeBase, spark: SparkSession) -> Iterator[Callable[..., Node]]:
    """Nodes on one data folder; each engine still running is stopped at the end."""
    nodes: list[Node] = []

    def make(trigger_interval: float = 0.05, kb_poll: float = 0.1) -> Node:
        node = Node(tmp_path / "data", kb, spark, trigger_interval, kb_poll)
        nodes.append(node)
        return node

    yield make
    for node in nodes:
        node.engine.stop(timeout=0)
