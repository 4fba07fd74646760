"""A window query's results, in `rsep run`'s output formats.

`jsonl`: one line per solution per evaluation, in evaluation order,
`{"start": T, "end": T, "bindings": {"var": "<N-Triples term>"}}` with
start/end the bounds of that evaluation's windows (a CQELS-CEP solution with
an interval prints `{"time": t, "start": t1, "end": t2, ...}`: the evaluation
time and the solution's interval); a CONSTRUCT evaluation is
one graph event, `{"start": T, "end": T, "triples": ["<s> <p> <o> .", ...]}`.
T is a JSON number when every input timestamp was a number, else an
xsd:dateTime in UTC (`2014-08-01T08:00:03Z`). `srj`: SPARQL 1.1 Query
Results JSON of every SELECT solution, in the same order. A CONSTRUCT's
evaluations are also graph events (`graph_events`): what a C-SPARQL
`REGISTER STREAM` feeds to other queries and `--format trig` writes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from fractions import Fraction

from rsep.plugin.errors import InvalidInput
from rsep.plugin.graph_events import GraphEvent, Timestamp
from rsep.plugin.results import srj_term
from rsep.plugin.windows.window_functions import TICKS_PER_SECOND
from rsep.plugin.windows.window_plan import Form, WindowPlan
from rsep.plugin.windows.window_replay import Evaluation

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def format_ticks(ticks: int, numeric: bool) -> int | float | str:
    """A time for output: seconds as a JSON number, or an xsd:dateTime in UTC."""
    if numeric:
        seconds = Fraction(ticks, TICKS_PER_SECOND)
        return int(seconds) if seconds.denominator == 1 else float(seconds)
    moment = _EPOCH + timedelta(microseconds=ticks)
    return moment.isoformat().replace("+00:00", "Z")


def ticks_timestamp(ticks: int, numeric: bool) -> Timestamp:
    """A computed time (an evaluation time, a window bound) as a Timestamp written like the input's:
    a number of seconds, or an xsd:dateTime in UTC."""
    return Timestamp(ticks / TICKS_PER_SECOND, str(format_ticks(ticks, numeric)), numeric)


def evaluation_event(stream: str, ticks: int, numeric: bool, triples: Sequence[str]) -> GraphEvent:
    """An evaluation's constructed triples as one graph event of `stream`, stamped with the evaluation
    time t' (RSEP-QL §3.4: the window close that produced them) and named after both."""
    digest = hashlib.sha256(json.dumps([stream, ticks]).encode("utf-8")).hexdigest()[:32]
    body = "".join(f"{statement}\n" for statement in triples)
    return GraphEvent(stream, f"<urn:rsep:evaluation:{digest}>", ticks_timestamp(ticks, numeric), body)


@dataclass(frozen=True, slots=True)
class WindowRun:
    """Every evaluation that answered something, with what is needed to print it."""

    plan: WindowPlan
    evaluations: tuple[Evaluation, ...]
    variables: tuple[str, ...]
    numeric: bool

    def records(self) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for evaluation in self.evaluations:
            start = format_ticks(evaluation.start, self.numeric)
            end = format_ticks(evaluation.end, self.numeric)
            if self.plan.form is Form.CONSTRUCT:
                out.append({"start": start, "end": end, "triples": list(evaluation.answer.triples)})
                continue
            spans = evaluation.answer.spans or (None,) * len(evaluation.answer.rows)
            for row, span in zip(evaluation.answer.rows, spans, strict=True):
                if span is None:
                    out.append({"start": start, "end": end, "bindings": row})
                else:
                    first, last = (format_ticks(t, self.numeric) for t in span)
                    at = format_ticks(evaluation.time, self.numeric)
                    out.append({"time": at, "start": first, "end": last, "bindings": row})
        return out

    def jsonl(self) -> str:
        return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in self.records())

    def graph_events(self, stream: str) -> list[GraphEvent]:
        """A CONSTRUCT's evaluations as graph events of `stream`, in time order (evaluations that
        constructed nothing are not events)."""
        if self.plan.form is not Form.CONSTRUCT:
            raise InvalidInput("only a CONSTRUCT query's evaluations are graph events")
        return [evaluation_event(stream, e.time, self.numeric, e.answer.triples) for e in self.evaluations]

    def srj(self) -> str:
        if self.plan.form is Form.CONSTRUCT:
            raise InvalidInput(
                "--format srj lists solutions; a CONSTRUCT query's results are graph events: "
                "use --format jsonl"
            )
        rows = [row for e in self.evaluations for row in e.answer.rows]
        bindings = [{k: srj_term(v) for k, v in row.items()} for row in rows]
        document = {"head": {"vars": list(self.variables)}, "results": {"bindings": bindings}}
        return json.dumps(document, ensure_ascii=False) + "\n"


def output_variables(plan: WindowPlan, seen: Sequence[str]) -> tuple[str, ...]:
    """The SELECT projection, or for SELECT * the variables Oxigraph reported."""
    if plan.form is not Form.SELECT:
        return ()
    return plan.projection if plan.projection is not None else tuple(seen)
