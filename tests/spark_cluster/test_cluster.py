"""rsep on a real Spark standalone cluster: a master and two workers on 127.0.0.1, started from
the installed pyspark through the image's entrypoint (docker/entrypoint.sh, as docker/compose.yaml
starts them), shared by the tests of this module and stopped by PID at its end.

- `rsep run --master spark://...` prints the matches of the local run;
- `rsep serve --master spark://... --checkpoint-location file://...` (a URI: the streaming job's
  state where every executor and a restarted driver reach it): a query registered, events
  posted, the server killed with SIGKILL mid-stream, restarted on the same data and checkpoint
  location: every match of the local run is in the store, written once;
- both workers ran tasks of these applications: Spark's event logs (spark-defaults.conf in a
  SPARK_CONF_DIR of the test) name the executor of every finished task, and each executor's log
  address names the worker (its web UI port) that launched it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.events import QUERIES, synthetic_events
from tests.support.paths import REPO
from tests.support.servers import detection_times, expected, free_port, post_events
from tests.support.smart_grid import SMART_GRID, SMART_GRID_STREAMS
from tests.support.spark_server import SparkServer, wait_caught_up

pytestmark = [pytest.mark.spark, pytest.mark.e2e]

ENTRYPOINT = REPO / "docker" / "entrypoint.sh"
START_TIMEOUT = 120


@dataclass
class Cluster:
    master: str
    webui: int
    worker_webuis: list[int]
    events: Path
    """Spark's event logs (one file per application)."""
    env: dict[str, str]
    """The environment of the rsep commands run on the cluster (SPARK_CONF_DIR)."""

    def status(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.webui}/json", timeout=10) as answer:
            return json.loads(answer.read())  # type: ignore[no-any-return]

    def applications(self) -> set[str]:
        return {_application(path) for path in self.events.iterdir()}

    def workers_with_tasks(self, applications: set[str]) -> set[int]:
        """The web UI ports of the workers whose executors finished tasks of `applications`."""
        for _ in range(5):
            try:
                return self._workers_with_tasks(applications)
            except FileNotFoundError:  # a log renamed from `.inprogress` as its application ended
                time.sleep(1)
        return self._workers_with_tasks(applications)

    def _workers_with_tasks(self, applications: set[str]) -> set[int]:
        ports = set()
        for path in self.events.iterdir():
            if _application(path) not in applications:
                continue
            worker_of: dict[str, int] = {}
            executors_with_tasks = set()
            files = sorted(path.glob("events_*")) if path.is_dir() else [path]  # rolling logs: a folder
            for line in (line for file in files for line in file.read_text().splitlines()):
                try:
                    event = json.loads(line)
                except ValueError:  # the last line of a log being written (or of a killed driver)
                    continue
                if event.get("Event") == "SparkListenerExecutorAdded":
                    stdout = event["Executor Info"]["Log Urls"]["stdout"]
                    worker_of[event["Executor ID"]] = int(
                        stdout.split("//", 1)[1].split("/")[0].split(":")[1]
                    )
                elif event.get("Event") == "SparkListenerTaskEnd":
                    executors_with_tasks.add(event["Task Info"]["Executor ID"])
            ports |= {worker_of[e] for e in executors_with_tasks if e in worker_of}
        return ports


def _application(path: Path) -> str:
    """The application id of an event log (`app-...`, `app-....inprogress`, `eventlog_v2_app-...`)."""
    return path.name.removeprefix("eventlog_v2_").split(".")[0]


def _daemon(role: str, log: Path, env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    """`docker/entrypoint.sh ROLE`: it execs spark-class, which execs the JVM (one PID)."""
    with log.open("ab") as out:
        return subprocess.Popen(["sh", str(ENTRYPOINT), role, *args], cwd=REPO, stdout=out,
                                stderr=subprocess.STDOUT, env=env)  # fmt: skip


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("cluster")
    events, conf = root / "events", root / "conf"
    events.mkdir()
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(
        f"spark.eventLog.enabled true\nspark.eventLog.dir {events.as_uri()}\n"
        "spark.eventLog.compress false\nspark.eventLog.rolling.enabled false\n"
        "spark.executor.memory 512m\nspark.driver.host 127.0.0.1\n"
        # Jobs start once both executors are up, and tiny shuffles are not coalesced into one
        # partition: with the test's few events, tasks then reach both workers.
        "spark.scheduler.minRegisteredResourcesRatio 1.0\n"
        "spark.scheduler.maxRegisteredResourcesWaitingTime 60s\n"
        "spark.sql.adaptive.coalescePartitions.enabled false\n"
    )
    daemons_env = {**os.environ, "RSEP_PYTHON": sys.executable, "SPARK_DAEMON_MEMORY": "256m",
                   "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(root / "logs")}  # fmt: skip
    daemons_env.pop("SPARK_HOME", None)
    port, webui = free_port(), free_port()
    master = f"spark://127.0.0.1:{port}"
    processes = [
        _daemon(
            "master",
            root / "master.log",
            {
                **daemons_env,
                "SPARK_MASTER_HOST": "127.0.0.1",
                "SPARK_MASTER_PORT": str(port),
                "SPARK_MASTER_WEBUI_PORT": str(webui),
            },
        )
    ]
    worker_webuis = [free_port(), free_port()]
    try:
        for number, worker_webui in enumerate(worker_webuis):
            work = root / f"worker{number}"
            processes.append(_daemon("worker", root / f"worker{number}.log", {
                **daemons_env, "SPARK_WORKER_HOST": "127.0.0.1", "SPARK_WORKER_WEBUI_PORT": str(worker_webui),
                "SPARK_WORKER_CORES": "1", "SPARK_WORKER_MEMORY": "1g", "SPARK_WORKER_DIR": str(work),
            }, master))  # fmt: skip
        found = Cluster(master, webui, worker_webuis, events, {**os.environ, "SPARK_CONF_DIR": str(conf)})
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                alive = [w for w in found.status()["workers"] if w["state"] == "ALIVE"]
            except (OSError, ValueError):  # not up, or its UI not yet serving /json (an HTML page)
                alive = []
            if len(alive) == 2:
                break
            dead = [p for p in processes if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                logs = "\n".join(path.read_text()[-2000:] for path in sorted(root.glob("*.log")))
                raise AssertionError(f"the cluster did not start:\n{logs}")
            time.sleep(0.5)
        yield found
    finally:
        for process in reversed(processes):
            _stop(process)


def test_rsep_run_on_the_cluster_prints_the_matches_of_the_local_run(cluster):
    streams = [f"--stream={iri}={path}" for iri, path in SMART_GRID_STREAMS.items()]
    args = ["run", str(SMART_GRID / "query.rq"), *streams, "--kb", str(SMART_GRID / "kb.trig")]
    before = cluster.applications()
    command = [sys.executable, "-m", "rsep.endpoint.cli", *args]
    on_cluster = subprocess.run([*command, "--master", cluster.master], cwd=REPO, capture_output=True,
                                text=True, timeout=300, env=cluster.env, check=False)  # fmt: skip
    local = subprocess.run([*command, "--engine", "inprocess"], cwd=REPO, capture_output=True, text=True,
                           timeout=300, check=True)  # fmt: skip
    assert on_cluster.returncode == 0, on_cluster.stderr
    assert on_cluster.stdout == local.stdout and local.stdout.strip()
    applications = cluster.applications() - before
    assert len(applications) == 1
    assert cluster.workers_with_tasks(applications) == set(cluster.worker_webuis)


def test_rsep_serve_on_the_cluster_survives_a_sigkill_exactly_once(cluster, tmp_path):
    data, log = tmp_path / "data", tmp_path / "server.log"
    location = (tmp_path / "shared-checkpoint").as_uri()
    options = ["--checkpoint-location", location, "--trigger-interval", "0.2"]
    events = synthetic_events(40)
    before = cluster.applications()
    server = SparkServer(data, log, master=cluster.master, options=options, env=cluster.env)
    try:
        status, query = server.request(
            "POST", "/queries", QUERIES["any"].encode(), "application/sparql-query"
        )
        assert status == 201
        post_events(server, events[:20])
        read = wait_caught_up(server, query["id"], timeout=180)
        assert read["matches"] == len(expected(query["id"], events[:20]))
        post_events(server, events[20:26])  # acknowledged: each must yield its matches
        time.sleep(0.4)  # likely in the middle of a micro-batch
    finally:
        server.kill()
    assert (tmp_path / "shared-checkpoint" / "offsets").is_dir()  # the job's checkpoint is at the URI
    assert not (data / "spark" / "checkpoint").exists()

    server = SparkServer(data, log, master=cluster.master, options=options, env=cluster.env)
    try:
        post_events(server, events[26:])
        read = wait_caught_up(server, query["id"], timeout=180)
        everything = expected(query["id"], events)
        assert detection_times(server, query["iri"]) == dict.fromkeys(everything, 1)  # each written once
        assert read["matches"] == len(everything)
    finally:
        assert server.terminate() == 0
    applications = cluster.applications() - before
    assert len(applications) >= 2  # (more if a server had to retry on another port)
    assert cluster.workers_with_tasks(applications) == set(cluster.worker_webuis)
