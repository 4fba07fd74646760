"""docker/ without Docker (no engine here): the compose file against the Compose
Specification's JSON schema, what the deployment relies on (one image, a master and two
workers, a checkpoint volume shared at the path of `--checkpoint-location`, healthchecks), the
Dockerfile's pinned base, non-root user and locked dependencies, and the entrypoint script run
as the image runs it. The daemons it starts (`master`, `worker`) are exercised by the cluster
test, tests/spark_cluster/."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib

import jsonschema
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.paths import FIXTURES, REPO

DOCKER = REPO / "docker"
SCHEMA = FIXTURES / "docker" / "compose_spec.json"
"""The Compose Specification's schema as docker-compose 1.29.2 (PyPI, Apache-2.0) ships it
(compose/config/compose_spec.json): a copy, since the specification's repository is not
reachable from here. Later versions of the specification only add properties."""


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text())


def test_the_compose_file_is_valid_against_the_compose_specification(compose):
    validator = jsonschema.Draft201909Validator(json.loads(SCHEMA.read_text()))
    assert [error.message for error in validator.iter_errors(compose)] == []
    broken = {**compose, "services": {**compose["services"], "endpoint": {"helthcheck": {}}}}
    assert not validator.is_valid(broken)  # the schema does catch a misspelt key


def test_the_endpoint_a_master_and_two_workers_run_one_image_and_share_the_checkpoints(compose):
    services = compose["services"]
    assert set(services) == {"endpoint", "spark-master", "spark-worker-1", "spark-worker-2"}
    assert {s["image"] for s in services.values()} == {"rsep:latest"}
    assert {s["build"]["dockerfile"] for s in services.values()} == {"docker/Dockerfile"}
    assert all("healthcheck" in s for s in services.values())
    assert services["spark-master"]["command"] == ["master"]
    for name in ("spark-worker-1", "spark-worker-2"):
        assert services[name]["command"] == ["worker", "spark://spark-master:7077"]
        assert services[name]["depends_on"]["spark-master"]["condition"] == "service_healthy"
    command = services["endpoint"]["command"]
    assert command[0] == "serve"
    assert command[command.index("--master") + 1] == "spark://spark-master:7077"
    location = command[command.index("--checkpoint-location") + 1]
    assert location.startswith("file:///checkpoints/")
    for name in ("endpoint", "spark-worker-1", "spark-worker-2"):
        assert "checkpoints:/checkpoints" in services[name]["volumes"]
    assert "checkpoints" in compose["volumes"] and "data" in compose["volumes"]
    assert "spark.driver.host=endpoint" in services["endpoint"]["environment"]["PYSPARK_SUBMIT_ARGS"]


def test_the_dockerfile_pins_its_base_runs_as_a_user_and_installs_the_lock():
    text = (DOCKER / "Dockerfile").read_text()
    (base,) = re.findall(r"^FROM (\S+)", text, flags=re.M)
    assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?", base), base
    users = re.findall(r"^USER (\S+)", text, flags=re.M)
    assert users and users[-1] not in ("root", "0")
    assert "pip install --require-hashes --no-deps -r requirements.lock" in text
    assert "pip install --no-deps ." in text
    assert 'ENTRYPOINT ["rsep-entrypoint"]' in text and "docker/entrypoint.sh" in text


def test_the_lock_pins_every_dependency_with_hashes_within_pyproject():
    lock = (DOCKER / "requirements.lock").read_text()
    blocks = re.split(r"\n(?=[A-Za-z0-9])", lock)  # one requirement and its hashes per block
    pinned: dict[str, str] = {}
    for block in blocks[1:]:
        head = block.split()[0]
        name, _, version = head.partition("==")
        assert version, f"not pinned: {head}"
        assert "--hash=sha256:" in block, f"no hash: {head}"
        pinned[canonicalize_name(name)] = version
    options = [line for line in lock.splitlines() if line.startswith("-")]
    assert options == []  # no --find-links or --index-url of the machine that wrote it
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    for text in project["dependencies"]:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{name} is not in docker/requirements.lock"
        assert requirement.specifier.contains(pinned[name]), (text, pinned[name])
    assert {"py4j", "numpy", "pyarrow", "pandas"} <= set(pinned)  # what pyspark[sql] brings


def entrypoint(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RSEP_PYTHON": sys.executable}
    env.pop("SPARK_HOME", None)
    return subprocess.run(["sh", str(DOCKER / "entrypoint.sh"), *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, env=env, check=False)  # fmt: skip


def test_the_entrypoint_runs_rsep_for_any_other_command():
    direct = subprocess.run([sys.executable, "-m", "rsep.endpoint.cli", "run", "--help"], cwd=REPO,
                            capture_output=True, text=True, check=True)  # fmt: skip
    through = entrypoint("run", "--help")
    assert through.returncode == 0 and through.stdout == direct.stdout


def test_the_entrypoint_finds_spark_in_pyspark_for_the_daemons():
    """`master --help`: SPARK_HOME found in pyspark's folder, spark-class runs the Master's usage."""
    done = entrypoint("master", "--help")
    assert "Usage: Master [options]" in done.stdout + done.stderr, done.stderr
