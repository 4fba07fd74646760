"""What the browser tests drive: the system Chromium (or a failure that says how to install it) and
`rsep serve --engine inprocess` in a subprocess (tests/browser/conftest.py has the fixtures)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.paths import REPO
from tests.support.servers import free_port

SERVER_START_TIMEOUT = 60.0
INSTALL_HINT = (
    "run `scripts/setup.sh --test` (it installs Debian's chromium package with apt-get), or "
    "`apt-get install chromium` as root, or set RSEP_CHROMIUM to a Chromium binary"
)


def chromium_path() -> str:
    """The system Chromium, or a failure that says how to install it."""
    given = os.environ.get("RSEP_CHROMIUM")
    path = given or "/usr/bin/chromium"
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        found = None if given else shutil.which("chromium")
        if found is None:
            pytest.fail(
                f"the browser tests need Chromium, not found at {path}: {INSTALL_HINT}", pytrace=False
            )
        path = found
    return path


@dataclass
class Server:
    """`rsep serve --engine inprocess` in a subprocess."""

    data: Path
    log: Path
    token: str | None = None
    options: tuple[str, ...] = ()
    """More flags of `rsep serve` (`--max-lateness 60`)."""
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Server:
        command = [sys.executable, "-m", "rsep.endpoint.cli", "serve", "--port", str(self.port),
                   "--data", str(self.data), "--engine", "inprocess"]  # fmt: skip
        if self.token:
            command += ["--token", self.token]
        command += self.options
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while True:
            try:
                with urllib.request.urlopen(self.base + "/", timeout=5) as response:
                    if response.status == 200:
                        return self
            except (OSError, urllib.error.URLError):
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"rsep serve did not start:\n{self.log.read_text()}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)
