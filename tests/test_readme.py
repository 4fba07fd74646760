"""The README's walkthrough ("Using the endpoint"), run verbatim against a real `rsep serve`: its
shell blocks with bash, its Python block with this interpreter, and what they print compared
with the output blocks that follow them (`…` stands for what differs between runs: ids, hashes,
detection times). Only the address (a free port instead of 7878) and the path of `rsep` (this
environment's) are changed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO
from tests.support.servers import Server

pytestmark = pytest.mark.e2e

BLOCK = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def walkthrough() -> list[tuple[str, str]]:
    """(language, text) of the code blocks of the README's "Using the endpoint", in order."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Using the endpoint", 1)[1].split("\n## ", 1)[0]
    return [(found.group(1), found.group(2)) for found in BLOCK.finditer(section)]


def matches(pattern: str, text: str) -> bool:
    regex = ".*?".join(re.escape(part) for part in pattern.split("…"))
    return re.fullmatch(regex, text, flags=re.DOTALL) is not None


def test_the_readme_walkthrough_works_and_prints_what_it_shows(tmp_path: Path) -> None:
    server = Server(tmp_path / "data", tmp_path / "server.log")
    rsep = str(Path(sys.executable).parent / "rsep")
    try:
        blocks = walkthrough()
        assert [language for language, _ in blocks] == ["sh", "python", "", "sh", ""]
        outputs = []
        for language, text in blocks:
            text = text.replace("http://127.0.0.1:7878", server.base).replace(".venv/bin/rsep", rsep)
            if language == "sh":
                command = ["bash", "-euo", "pipefail", "-c", text]
            elif language == "python":
                command = [sys.executable, "-c", text]
            else:
                assert matches(text, outputs[-1]), f"expected:\n{text}\ngot:\n{outputs[-1]}"
                continue
            done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stderr
            outputs.append(done.stdout)
    finally:
        server.terminate()
