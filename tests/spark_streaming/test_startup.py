"""Starting Spark, as a user sees it: a standalone master that cannot be reached fails within
15 s in one line (Spark itself retries for a minute), `rsep serve` says what it does while Spark
starts, and the JVM's own noise ("WARNING: Using incubator modules") stays out of rsep's output."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.support.paths import REPO
from tests.support.servers import free_port
from tests.support.smart_grid import SMART_GRID, SMART_GRID_STREAMS

FAIL_WITHIN = 15.0
NOISE = "Using incubator modules"


def rsep(*args: str, timeout: float = 300) -> tuple[subprocess.CompletedProcess[str], float]:
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "rsep.endpoint.cli", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ), check=False)  # fmt: skip
    return done, time.monotonic() - began


def smart_grid_run(*extra: str) -> list[str]:
    streams = [f"--stream={iri}={path}" for iri, path in SMART_GRID_STREAMS.items()]
    return ["run", str(SMART_GRID / "query.rq"), *streams, "--kb", str(SMART_GRID / "kb.trig"), *extra]


def test_rsep_run_on_an_unreachable_master_fails_fast_in_one_line():
    port = free_port()
    master = f"spark://127.0.0.1:{port}"
    done, took = rsep(*smart_grid_run("--master", master), timeout=60)
    assert done.returncode == 2 and took < FAIL_WITHIN, (took, done.stderr)
    assert done.stdout == ""
    refused = f"127.0.0.1:{port}: Connection refused"
    assert done.stderr.splitlines() == [f"rsep: Spark master {master} is unreachable ({refused})"]


def test_rsep_serve_on_an_unreachable_master_fails_fast_in_one_line(tmp_path):
    master = f"spark://127.0.0.1:{free_port()},127.0.0.1:{free_port()}"
    done, took = rsep("serve", "--port", str(free_port()), "--data", str(tmp_path / "data"),
                      "--engine", "spark", "--master", master, timeout=60)  # fmt: skip
    assert done.returncode == 2 and took < FAIL_WITHIN, (took, done.stderr)
    assert f"rsep: starting Spark ({master})…" in done.stderr
    assert done.stderr.splitlines()[-1].startswith(f"rsep: Spark master {master} is unreachable (127.0.0.1:")


@pytest.mark.spark
@pytest.mark.e2e
def test_rsep_run_on_spark_prints_no_jvm_noise():
    done, _ = rsep(*smart_grid_run("--master", "local[1]"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") >= 1
    assert NOISE not in done.stderr and NOISE not in done.stdout


@pytest.mark.spark
@pytest.mark.e2e
def test_rsep_serve_says_what_it_does_while_spark_starts(tmp_path):
    command = [sys.executable, "-m", "rsep.endpoint.cli", "serve", "--port", str(free_port()),
               "--data", str(tmp_path / "data"), "--engine", "spark", "--master", "local[1]"]  # fmt: skip
    server = subprocess.Popen(command, cwd=REPO, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    lines: list[str] = []
    try:
        assert server.stderr is not None
        deadline = time.monotonic() + 180
        while not any("listening on" in line for line in lines):
            line = server.stderr.readline()
            assert line and time.monotonic() < deadline, lines
            lines.append(line.rstrip("\n"))
    finally:
        server.terminate()
        rest = server.communicate(timeout=90)[1]
    assert lines[0] == "rsep: starting Spark (local[1])…", lines
    assert lines[1].startswith("rsep: Spark ready in ") and lines[1].endswith(" s"), lines
    assert lines[-1].startswith("rsep: listening on http://127.0.0.1:") and " ready in " in lines[-1]
    assert server.returncode == 0
    assert NOISE not in "\n".join(lines) + rest
