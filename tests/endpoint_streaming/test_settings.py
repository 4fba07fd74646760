"""`rsep serve` configured by environment variables and by flags (`rsep.endpoint.settings`):
the flag wins, an unset setting keeps the application's default, a bad value stops the server
before it starts with one line that names the variable or the flag."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from rsep.endpoint.app import DEFAULTS
from rsep.endpoint.cli import build_parser
from rsep.endpoint.engines import ENGINES
from rsep.endpoint.settings import ENGINE_NAMES, SETTINGS, configuration
from tests.support.events import QUERIES, synthetic_events
from tests.support.paths import REPO
from tests.support.servers import Listener, Server, expected, post_events


def serve_options(*argv: str):
    return build_parser().parse_args(["serve", *argv])


def rsep_serve(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "rsep.endpoint.cli", "serve", *argv]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env})  # fmt: skip


def test_every_setting_is_a_configuration_key_with_a_default() -> None:
    assert all(setting.key in DEFAULTS for setting in SETTINGS)
    assert set(ENGINE_NAMES) == set(ENGINES)


def test_the_environment_sets_what_no_flag_gives() -> None:
    environ = {
        "RSEP_ENGINE": "inprocess",
        "RSEP_MASTER": "local[2]",
        "RSEP_TOKEN": "s3cret",
        "RSEP_CHECKPOINT_INTERVAL": "0",
        "RSEP_SSE_HEARTBEAT": "2.5",
        "RSEP_SPARK_TRIGGER_INTERVAL": "0.05",
        "RSEP_CHECKPOINT_LOCATION": "file:///shared/rsep",
        "RSEP_UNRELATED": "ignored",
    }
    assert configuration(serve_options(), environ) == {
        "RSEP_ENGINE": "inprocess",
        "RSEP_MASTER": "local[2]",
        "RSEP_TOKEN": "s3cret",
        "RSEP_CHECKPOINT_INTERVAL": 0.0,
        "RSEP_SSE_HEARTBEAT": 2.5,
        "RSEP_SPARK_TRIGGER_INTERVAL": 0.05,
        "RSEP_CHECKPOINT_LOCATION": "file:///shared/rsep",
    }


def test_a_flag_overrides_its_variable() -> None:
    options = serve_options("--engine", "spark", "--sse-heartbeat", "1", "--trigger-interval", "0")
    environ = {"RSEP_ENGINE": "inprocess", "RSEP_SSE_HEARTBEAT": "9"}
    assert configuration(options, environ) == {
        "RSEP_ENGINE": "spark",
        "RSEP_SSE_HEARTBEAT": 1.0,
        "RSEP_SPARK_TRIGGER_INTERVAL": 0.0,
    }


def test_nothing_set_leaves_the_application_defaults() -> None:
    assert configuration(serve_options(), {}) == {}


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("RSEP_ENGINE", "flink", "expected one of spark, inprocess, got 'flink'"),
        ("RSEP_CHECKPOINT_INTERVAL", "-1", "expected a number of seconds (0 or more), got '-1'"),
        ("RSEP_SSE_HEARTBEAT", "0", "expected a number of seconds above 0, got '0'"),
        ("RSEP_SPARK_TRIGGER_INTERVAL", "fast", "expected a number of seconds (0 or more), got 'fast'"),
        ("RSEP_MASTER", " ", "expected a value, got nothing"),
    ],
)
def test_a_bad_variable_is_an_error_that_names_it(variable: str, value: str, message: str) -> None:
    with pytest.raises(ValueError) as error:
        configuration(serve_options(), {variable: value})
    assert str(error.value) == f"rsep: {variable}: {message}"


def test_a_bad_variable_stops_serve_before_it_starts(tmp_path) -> None:
    done = rsep_serve("--data", str(tmp_path / "data"), env={"RSEP_ENGINE": "flink"})
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "rsep: RSEP_ENGINE: expected one of spark, inprocess, got 'flink'\n"
    assert not (tmp_path / "data").exists()


def test_a_bad_flag_is_one_line_and_exit_2(tmp_path) -> None:
    done = rsep_serve("--data", str(tmp_path / "data"), "--checkpoint-interval", "soon", env={})
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "rsep serve: argument --checkpoint-interval: expected a number of seconds (0 or more), got 'soon'\n"
    )


@pytest.mark.parametrize("port", ["99999", "-1", "65536", "http"])
def test_a_port_outside_0_to_65535_is_exit_2(tmp_path, port: str) -> None:
    """99999 was served on 34463 (99999 modulo 65536, what the socket took); -1 was a ValueError
    traceback, exit 1."""
    done = rsep_serve("--data", str(tmp_path / "data"), "--engine", "inprocess", "--port", port, env={})
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr == f"rsep serve: argument --port: expected a port from 0 to 65535, got {port!r}\n"


def test_a_host_that_is_no_address_is_exit_2_naming_it(tmp_path) -> None:
    """Waitress's ValueError (`Invalid host/port specified.`) was a traceback, exit 1."""
    done = rsep_serve("--data", str(tmp_path / "data"), "--engine", "inprocess", "--host", "999.1.1.1",
                      "--port", "0", env={})  # fmt: skip
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.startswith("rsep: cannot listen on 999.1.1.1:0: "), done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.e2e
def test_serve_takes_its_engine_and_heartbeat_from_the_environment(tmp_path) -> None:
    """No flags: the in-process engine (no Spark in the checkpoints) and 0.2 s heartbeats."""
    data = tmp_path / "data"
    env = {"RSEP_ENGINE": "inprocess", "RSEP_SSE_HEARTBEAT": "0.2", "RSEP_CHECKPOINT_INTERVAL": "0"}
    server = Server(data, tmp_path / "server.log", options=(), env=env)
    try:
        status, query = server.request(
            "POST", "/queries", QUERIES["any"].encode(), "application/sparql-query"
        )
        assert status == 201
        listener = Listener(server, query["id"])
        time.sleep(1.2)
        assert listener.comments.count(": heartbeat") >= 3  # every 0.2 s, not every 15 s
        events = synthetic_events(12)
        post_events(server, events)
        matches = expected(query["id"], events)
        assert {r["graph"] for r in listener.take(len(matches))} == matches
        folder = data / "checkpoints" / query["id"]
        assert any(folder.glob("*.ckpt")) and not (folder / "spark").exists()
    finally:
        assert server.terminate() == 0


def test_switches_are_flags_without_a_value_or_boolean_variables() -> None:
    assert configuration(serve_options("--cors", "--union-default-graph"), {}) == {
        "RSEP_CORS": True,
        "RSEP_UNION_DEFAULT_GRAPH": True,
    }
    environ = {"RSEP_CORS": "true", "RSEP_UNION_DEFAULT_GRAPH": "0"}
    assert configuration(serve_options(), environ) == {"RSEP_CORS": True, "RSEP_UNION_DEFAULT_GRAPH": False}
    with pytest.raises(ValueError, match="RSEP_CORS: expected true or false, got 'maybe'"):
        configuration(serve_options(), {"RSEP_CORS": "maybe"})
