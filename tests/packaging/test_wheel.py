"""`pip install .` gives a working `rsep`: the wheel is built from the repository, installed into a
fresh virtual environment, and run from outside the repository: `rsep --version`, one `rsep run`
(the grammars must be in the wheel), and `rsep serve` answering its page and static files (the
templates and static assets must be). The fresh environment takes rsep from the wheel alone; its
dependencies (pyspark is hundreds of megabytes) come from this environment's site-packages, added
behind its own."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from tests.support.paths import REPO
from tests.support.servers import free_port
from tests.support.smart_grid import SMART_GRID, SMART_GRID_STREAMS

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin folder of a virtual environment with the wheel of the repository installed."""
    root = tmp_path_factory.mktemp("wheel")
    build = [sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "-w", str(root / "dist")]
    built = subprocess.run(build, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    (wheel,) = (root / "dist").glob("rsep-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    grammars = ("rsep/grammar/sparql11.lark", "rsep/grammar/spaseq.lark")
    assets = ("rsep/endpoint/templates/index.html", "rsep/endpoint/static/rsep.js")
    for needed in (*grammars, *assets):
        assert needed in names
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    done = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", str(wheel)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    (Path(site) / "zz_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv / "bin"


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_the_installed_rsep_comes_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    where = run(
        [str(installed / "python"), "-c", "import rsep.grammar; print(rsep.grammar.__file__)"], tmp_path
    )
    assert where.stdout.startswith(str(installed.parent)), where


def test_rsep_version(installed: Path, tmp_path: Path) -> None:
    done = run([str(installed / "rsep"), "--version"], tmp_path)
    assert (done.returncode, done.stdout) == (0, "rsep 0.1.0\n"), done.stderr


def test_rsep_run(installed: Path, tmp_path: Path) -> None:
    streams = [f"--stream={iri}={path}" for iri, path in SMART_GRID_STREAMS.items()]
    done = run([str(installed / "rsep"), "run", str(SMART_GRID / "query.rq"), *streams,
                "--kb", str(SMART_GRID / "kb.trig"), "--engine", "inprocess"], tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    match = json.loads(line)
    assert (match["start"], match["end"]) == ("2026-11-22T10:00:00Z", "2026-11-22T10:15:00Z")
    assert match["bindings"]["city"] == "<http://smartgrid.org/Lyon>"


def test_rsep_serve_serves_its_page_and_static_files(installed: Path, tmp_path: Path) -> None:
    port = free_port()
    command = [str(installed / "rsep"), "serve", "--port", str(port), "--data", str(tmp_path / "d")]
    server = subprocess.Popen([*command, "--engine", "inprocess"], cwd=tmp_path, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + 60
        while True:
            try:
                page = urllib.request.urlopen(base, timeout=5).read().decode()
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None
                time.sleep(0.2)
        assert "<html" in page.lower()
        with urllib.request.urlopen(base + "static/rsep.js", timeout=5) as script:
            assert script.status == 200
    finally:
        server.terminate()
        server.wait(timeout=60)
