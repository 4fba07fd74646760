"""Helpers of the C-SPARQL tests: a stream IRI, and `rsep run` refusing a query before any event."""

from __future__ import annotations

from pathlib import Path

from rsep.endpoint.cli import main

STREAM = "http://example.org/S"


def refused(capsys, tmp_path: Path, text: str) -> tuple[Path, str]:
    """`rsep run` of `text` over a stream file that does not exist: (the query file, stderr) of a
    refusal that came before any event was read (exit 2, nothing on stdout)."""
    query = tmp_path / "query.rq"
    query.write_text(text, encoding="utf-8")
    assert main(["run", str(query), "--stream", f"{STREAM}={tmp_path / 'missing.trig'}"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    return query, err
