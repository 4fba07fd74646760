"""`rsep run` as a user runs it (the installed script, in a subprocess) on two
EP-SPARQL fixtures: the Q-closure with --rule, and the recursion bound, which
must end the run with exit status 2, nothing on stdout and one line on stderr."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

RSEP = Path(sys.executable).parent / "rsep"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "epsparql"


def rsep(case: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    folder = FIXTURES / case
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    args = [str(RSEP), "run", str(folder / "query.rq"), "--engine", "inprocess"]
    for iri, file in manifest["streams"].items():
        args += ["--stream", f"{iri}={folder / file}"]
    for rule in manifest.get("rules", []):
        args += ["--rule", str(folder / rule)]
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd, timeout=300, check=False)


def test_rules_through_the_installed_script(tmp_path: Path):
    result = rsep("q2-downrated-by-rule4", tmp_path)
    assert result.returncode == 0, result.stderr
    expected = (FIXTURES / "q2-downrated-by-rule4" / "expected.jsonl").read_text(encoding="utf-8")
    assert Counter(result.stdout.splitlines()) == Counter(
        json.dumps(json.loads(line)) for line in expected.splitlines()
    )


def test_an_infinite_closure_exits_2_with_one_line(tmp_path: Path):
    result = rsep("closure-infinite", tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert re.fullmatch(
        r".*fresh\.rq: the CONSTRUCT rules still derive new events at time 1 past 10000 derived events .*\n",
        result.stderr,
    )
