"""The command line as a person at a terminal sees it: `rsep --version`; `rsep run` printing each
match while its input is still being written (a FIFO that stays open); a progress bar on a
terminal (a pty) and none when the output is captured or with --quiet; `rsep post --speed` and
`--rate` replaying in event time (the unreachable --master and `rsep serve`'s start-up lines are
tests/spark_streaming/test_startup.py's)."""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import threading
import time
from importlib import metadata
from pathlib import Path

import pytest

from rsep.endpoint.post import Pace, requests
from rsep.endpoint.run_command import run as run_whole
from rsep.endpoint.run_command import start, write
from rsep.plugin.store.windows import WindowStream
from tests.support.events import QUERIES, S1, S2, XSD_INTEGER, event
from tests.support.paths import REPO
from tests.support.run_cases import load_cases
from tests.support.servers import Server
from tests.support.smart_grid import SMART_GRID, SMART_GRID_STREAMS

RSEP = [sys.executable, "-m", "rsep.endpoint.cli"]
WINDOW_CASES = {case.name: case for case in load_cases(REPO / "tests" / "csparql" / "fixtures")}
PROV = "http://www.w3.org/ns/prov#"
XSD = "http://www.w3.org/2001/XMLSchema#"


def smart_grid_run(*extra: str) -> list[str]:
    streams = [f"--stream={iri}={path}" for iri, path in SMART_GRID_STREAMS.items()]
    return [*RSEP, "run", str(SMART_GRID / "query.rq"), *streams, "--kb", str(SMART_GRID / "kb.trig"),
            "--engine", "inprocess", *extra]  # fmt: skip


def test_version_is_the_installed_distributions() -> None:
    done = subprocess.run([*RSEP, "--version"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, f"rsep {metadata.version('rsep')}\n")


def test_rsep_run_prints_a_match_while_its_input_is_still_being_written(tmp_path: Path) -> None:
    """The match comes out while the FIFO is open: the run cannot have reached the end of its input.
    (The reader takes chunks of 20,000 quads and holds 1,000 events for reordering, so enough
    events follow the match to push it through.)"""
    fifo = tmp_path / "s1.nq"
    os.mkfifo(fifo)
    (tmp_path / "s2.nq").write_text("")
    query = tmp_path / "query.rq"
    query.write_text(QUERIES["strict"])
    events = [event(0, "e0", S1, kind="a", val=1), event(1, "e1", S1, kind="c", val=5)]
    events += [event(2 + i, f"x{i}", S1, kind="x") for i in range(9000)]
    command = [*RSEP, "run", str(query), "--stream", f"{S1}={fifo}", "--stream", f"{S2}={tmp_path / 's2.nq'}",
               "--engine", "inprocess"]  # fmt: skip
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    writer = open(fifo, "w")  # noqa: SIM115 (closed below, after the match is read)
    feeding = threading.Thread(target=lambda: writer.write("".join(e.nquads() for e in events)), daemon=True)
    feeding.start()
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 120)
        assert ready, "no match within 120 s"
        match = json.loads(process.stdout.readline())
        assert (match["start"], match["end"], match["bindings"]["v2"]) == (0, 1, f'"5"^^<{XSD_INTEGER}>')
        assert process.poll() is None  # still reading: the FIFO is open
    finally:
        feeding.join(timeout=60)
        writer.close()
        out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert out == ""  # the one match, already read


def on_a_terminal(command: list[str], timeout: float = 120) -> tuple[int, str]:
    """Run with stdout and stderr on a pseudo-terminal; (exit status, everything it wrote)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a 100-column terminal
    process = subprocess.Popen(command, cwd=REPO, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
    os.close(follower)
    chunks = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 1)
        if ready:
            try:
                data = os.read(leader, 65536)
            except OSError:  # the terminal closed: the process is gone
                break
            if not data:
                break
            chunks.append(data)
        elif process.poll() is not None:
            break
    os.close(leader)
    return process.wait(timeout=30), b"".join(chunks).decode("utf-8", "replace")


def test_rsep_run_shows_progress_on_a_terminal_only(tmp_path: Path) -> None:
    code, text = on_a_terminal(smart_grid_run())
    assert code == 0, text
    assert "read:" in text and "events" in text and "/s" in text, text
    assert '"house": "<http://smartgrid.org/H1>"' in text
    captured = subprocess.run(smart_grid_run(), cwd=REPO, capture_output=True, text=True, timeout=120)
    assert captured.returncode == 0 and captured.stderr == ""
    code, quiet = on_a_terminal(smart_grid_run("--quiet"))
    assert code == 0 and "read:" not in quiet and '"house"' in quiet


def test_a_window_query_shows_its_evaluations_on_a_terminal() -> None:
    case = WINDOW_CASES["count-window"]
    streams = [f"--stream={iri}={case.folder / file}" for iri, file in case.streams.items()]
    code, text = on_a_terminal(
        [*RSEP, "run", str(case.folder / "query.rq"), *streams, "--engine", "inprocess"]
    )
    assert code == 0, text
    assert "evaluated:" in text and "evaluations" in text, text
    assert text.count('"bindings"') == len(case.expected())


def test_rsep_post_shows_progress_on_a_terminal_and_replays_in_event_time(tmp_path: Path) -> None:
    """The smart-grid streams span 15 minutes of event time: at --speed 900 they take a second."""
    server = Server(tmp_path / "data", tmp_path / "server.log")
    try:
        streams = [f"--stream={iri}={path}" for iri, path in SMART_GRID_STREAMS.items()]
        began = time.monotonic()
        code, text = on_a_terminal([*RSEP, "post", server.base + "/", *streams, "--speed", "900"])
        took = time.monotonic() - began
        assert code == 0, text
        assert "posted:" in text and "events accepted by" in text
        assert took >= 1.0, took
        assert server.get("/health")["log_position"] == 8
        few = tmp_path / "few.nq"  # after the smart grid's, which are xsd:dateTimes
        few.write_text("".join(
            f'<urn:t:f{i}> <{PROV}generatedAtTime> "2026-11-23T00:00:{i:02}Z"^^<{XSD}dateTime> .\n'
            f'<urn:t:s> <urn:t:p> "{i}" <urn:t:f{i}> .\n' for i in range(10)))  # fmt: skip
        began = time.monotonic()
        done = subprocess.run([*RSEP, "post", server.base + "/", f"--stream={S1}={few}", "--rate", "20"],
                              cwd=REPO, capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert time.monotonic() - began >= 0.45  # 10 events at 20/s: the last is due at 0.45 s
        assert done.stderr == f"rsep: 10 events accepted by {server.base}/\n"  # no bar when captured
    finally:
        server.terminate()


def test_paced_requests_hold_the_events_due_together() -> None:
    events = [event(t, f"e{i}", S1) for i, t in enumerate([0, 0, 1, 1, 5])] + [event(5, "o", S2)]
    assert [(due, [e.name for e in group]) for due, _, group in requests(events, 500)] == [
        (0.0, ["<urn:t:e0>", "<urn:t:e1>", "<urn:t:e2>", "<urn:t:e3>", "<urn:t:e4>"]),
        (0.0, ["<urn:t:o>"]),
    ]
    by_time = [(due, len(group)) for due, _, group in requests(events, 500, Pace(speed=2))]
    assert by_time == [(0.0, 2), (0.5, 2), (2.5, 1), (2.5, 1)]
    by_rate = [(due, len(group)) for due, _, group in requests(events, 500, Pace(rate=10))]
    assert by_rate == [(0.0, 1), (0.1, 1), (0.2, 1), (0.3, 1), (0.4, 1), (0.5, 1)]
    assert [len(group) for _, _, group in requests(events, 2, Pace(speed=1))] == [2, 2, 1, 1]


@pytest.mark.parametrize("flag", ["--rate", "--speed"])
def test_a_pace_must_be_a_positive_number(flag: str) -> None:
    done = subprocess.run([*RSEP, "post", "http://127.0.0.1:1/", f"--stream={S1}=x.nq", flag, "0"],
                          cwd=REPO, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == f"rsep post: argument {flag}: expected a number above 0, got '0'\n"


@pytest.mark.parametrize(
    "url", ["notaurl", "127.0.0.1:7878", "http://[::1", "ftp://127.0.0.1/", "http:///x", "http://h:port/",
            "http://127.0.0.1:7878/?x=1", "http://127.0.0.1:7878/#top"],
)  # fmt: skip
def test_the_endpoint_must_be_an_http_url(url: str) -> None:
    """A URL urllib cannot open was a ValueError traceback (`unknown url type`, `Invalid IPv6
    URL`); one with a query or a fragment was posted to as `...?x=1/streams?stream=...`."""
    done = subprocess.run([*RSEP, "post", url, f"--stream={S1}=x.nq"],
                          cwd=REPO, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2, done.stderr
    expected = "rsep post: argument URL: expected the endpoint's http(s) URL, e.g. http://127.0.0.1:7878/, "
    expected += f"got {url!r}"
    assert done.stderr.startswith(expected), done.stderr
    assert "Traceback" not in done.stderr


class Recorder(io.StringIO):
    """stdout that notes, at each flush, how many evaluations had been computed then."""

    def __init__(self, computed: list[int]) -> None:
        super().__init__()
        self.computed = computed
        self.flushed_at: list[int] = []

    def flush(self) -> None:
        self.flushed_at.append(len(self.computed))


@pytest.mark.parametrize("output_format", ["jsonl", "srj"])
def test_rsep_run_prints_each_window_evaluation_once_computed(output_format: str) -> None:
    """A C-SPARQL query's evaluations are written one by one as the replay computes them (each
    flushed before the next is computed), and the text is the whole run's."""
    case = WINDOW_CASES["count-window"]
    outcome = start(case.request())
    assert isinstance(outcome, WindowStream)
    computed: list[int] = []

    def counted(evaluations):
        for evaluation in evaluations:
            computed.append(1)
            yield evaluation

    outcome.evaluations = counted(outcome.evaluations)
    out = Recorder(computed)
    write(outcome, output_format, out)
    assert len(computed) > 2
    assert out.flushed_at == list(range(1, len(computed) + 1))
    whole = run_whole(case.request())
    assert out.getvalue() == (whole.jsonl() if output_format == "jsonl" else whole.srj())
