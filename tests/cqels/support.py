"""Helpers of the CQELS-CEP tests: a window query around a SEQ, and `rsep run`'s lines of it."""

from __future__ import annotations

from pathlib import Path

from tests.support.run_cases import run_inline

S = "http://example.org/s"
PREFIX = "PREFIX : <http://example.org/>\n"


def window_query(seq: str, window: str = "[RANGE 10s]", select: str = "?x ?y") -> str:
    return (
        f"{PREFIX}SELECT {select} FROM NAMED WINDOW :w ON <{S}> {window}\n"
        f"WHERE {{ WINDOW :w {{ SEQ({seq}) }} }}"
    )


def lines(folder: Path, query: str, stream: str, kb: dict[str, str] | None = None) -> list[tuple]:
    """(evaluation time, start, end, bindings without the prefix) per line."""
    out = run_inline(folder, query, {S: stream}, kb)
    return [
        (
            line["time"],
            line["start"],
            line["end"],
            {k: v.removeprefix("<http://example.org/").rstrip(">") for k, v in line["bindings"].items()},
        )
        for line in out
    ]
