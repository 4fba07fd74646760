"""`rsep run --entailment rdfs` as a user runs it: the installed script in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.entailment.support import expected, folder, manifest

RSEP = Path(sys.executable).parent / "rsep"
PEOPLE = "http://example.org/org/people"


def rsep(case: str, *extra: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    here = folder(case)
    args = [f"--stream={iri}={here / file}" for iri, file in manifest(case)["streams"].items()]
    args += [f"--kb={here / file}" for file in manifest(case).get("kb", [])]
    args += [f"--t0={manifest(case)['t0']}"] if "t0" in manifest(case) else []
    command = [str(RSEP), "run", str(here / "query.rq"), *args, "--engine", "inprocess", *extra]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=300, check=False)


@pytest.mark.parametrize("case", ["spaseq-subclass", "epsparql-seq", "csparql-count"])
def test_rsep_run_prints_the_entailed_matches(case, tmp_path):
    result = rsep(case, "--entailment", "rdfs", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected(case, "rdfs")
    plain = rsep(case, cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == expected(case, None)


def test_the_knowledge_base_given_decides_the_answer(tmp_path):
    """`rsep run` reads one knowledge base: the update fixture before and after its update."""
    here = folder("update")
    query, events = (
        here / "query.rq",
        [f"--stream={PEOPLE}={here / f}" for f in ("first.trig", "second.trig")],
    )

    def run(schema: str) -> list[str]:
        command = [str(RSEP), "run", str(query), *events, f"--kb={here / schema}", "--engine", "inprocess"]
        result = subprocess.run(
            [*command, "--entailment", "rdfs"], capture_output=True, text=True, check=False
        )
        assert result.returncode == 0, result.stderr
        return result.stdout.splitlines()

    assert run("schema-v1.ttl") == []
    assert run("schema-v2.ttl") == [
        '{"start": 1, "end": 1, "bindings": {"x": "<http://example.org/org#ann>"}}',
        '{"start": 2, "end": 2, "bindings": {"x": "<http://example.org/org#bob>"}}',
    ]


def test_an_unknown_regime_is_a_usage_error(tmp_path):
    result = rsep("spaseq-subclass", "--entailment", "owl", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "--entailment: invalid choice: 'owl'" in result.stderr
