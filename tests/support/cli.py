"""`rsep run` as the conformance and entailment tests call it: the installed script, or `main` in
this process on the SPAseq Fig. 1 fixture; and what a failure must look like (exit 2, nothing on
stdout, one line on stderr)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from rsep.endpoint.cli import main
from tests.support.paths import FIXTURES

RSEP = Path(sys.executable).parent / "rsep"
FIG1 = FIXTURES / "spaseq" / "fig1-strict"
FIG1_STREAM = "http://example.org/fig1/stream"


def assert_failure(result: subprocess.CompletedProcess[str], pattern: str) -> None:
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.endswith("\n") and result.stderr.count("\n") == 1, result.stderr
    assert re.fullmatch(pattern, result.stderr.rstrip("\n")), result.stderr


class Outcome:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.returncode, self.stdout, self.stderr = code, out, err


def run_main(capsys: pytest.CaptureFixture[str], query: Path, *extra: str) -> Outcome:
    """`rsep run` in this process (no Spark: the compile and data errors come before it)."""
    args = ["run", str(query), "--stream", f"{FIG1_STREAM}={FIG1 / 'stream.trig'}", "--engine", "inprocess"]
    code = main([*args, *extra])
    captured = capsys.readouterr()
    return Outcome(code, captured.out, captured.err)
