"""Fixtures of the endpoint tests: an application on a fresh data directory with its Flask test
client, and one real `rsep serve` subprocess for the whole session (the client-library tests).
The reader of the W3C manifests that describe HTTP exchanges is tests/endpoint/w3c_manifests.py.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from rsep.endpoint.app import create_app
from tests.support.paths import REPO
from tests.support.servers import free_port

SERVER_START_TIMEOUT = 60.0


@pytest.fixture
def app(tmp_path: Path) -> Flask:
    """The application on its own store, without the streaming service."""
    return create_app(
        {"RSEP_DATA_DIR": str(tmp_path / "data"), "RSEP_START_STREAMING": False, "TESTING": True}
    )


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture(scope="session")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real `rsep serve` (waitress, in-process engine: no Spark) on a free port; its base URL."""
    port = free_port()
    root = tmp_path_factory.mktemp("server")
    data, log = root / "data", (root / "server.log").open("w+b")
    command = [sys.executable, "-m", "rsep.endpoint.cli", "serve", "--port", str(port), "--data", str(data)]
    process = subprocess.Popen(
        [*command, "--engine", "inprocess"],
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        _wait_until_answering(url, process, log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _wait_until_answering(url: str, process: subprocess.Popen[bytes], log: Any) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    probe = url + "sparql?query=ASK%7B%7D"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log.seek(0)
            pytest.fail(
                f"rsep serve exited with {process.returncode}:\n{log.read().decode(errors='replace')}"
            )
        try:
            with urllib.request.urlopen(probe, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.1)
    pytest.fail(f"rsep serve did not answer {probe} within {SERVER_START_TIMEOUT} s")
