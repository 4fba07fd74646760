"""One real `rsep serve` (in-process engine) per module of the hardening tests: what they probe
is what a hostile client does to the process, so they talk to it over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.servers import Server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder: Path = tmp_path_factory.mktemp("serve")
    running = Server(folder / "data", folder / "server.log")
    yield running
    running.terminate()
