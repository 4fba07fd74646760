"""Fuzzing every route and every dialect's parser (issue 15, item 9): mutations of valid
payloads and queries never get a 5xx, and a refused write leaves no trace (the event log, the
store and the registry are as they were). `RSEP_FUZZ_EXAMPLES` sets the number of cases
(scripts/fuzz.sh runs many more)."""

from __future__ import annotations

import contextlib

from flask import Flask
from hypothesis import HealthCheck, given, settings

from rsep.grammar import SparqlSyntaxError, parse_event_query, parse_query, parse_update
from rsep.plugin import InvalidInput
from tests.hardening.fuzzing import EVENT_QUERIES, EXAMPLES, PLAIN_QUERIES, UPDATES, Call, calls, mutated
from tests.support.streaming_endpoint import service

HEALTH = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=HEALTH)


def _state(app: Flask) -> tuple[int, int, int]:
    """What a write changes: the log's head, the store's size, the registry's size."""
    streaming = service(app)
    store = app.extensions["rsep"].kb.store
    return streaming.log.next_position, len(store), len(streaming.registry.all())


@FUZZ
@given(call=calls())
def test_no_request_gets_a_5xx_and_a_refused_write_leaves_no_trace(app: Flask, call: Call) -> None:
    client = app.test_client()
    before = _state(app)
    response = client.open(call.path, method=call.method, data=call.body, content_type=call.content_type)
    status = response.status_code
    text = response.get_data(as_text=True)
    assert status < 500, f"{call}: {status} {text}"
    if status >= 400:
        assert _state(app) == before, f"{call}: refused with {status} ({text}) but changed the state"


@FUZZ
@given(text=mutated(EVENT_QUERIES + PLAIN_QUERIES))
def test_the_dialect_parsers_refuse_only_with_input_errors(text: str) -> None:
    for parse in (parse_event_query, parse_query):
        with contextlib.suppress(InvalidInput):  # SparqlSyntaxError and the dialects' own
            parse(text, source="query")


@FUZZ
@given(text=mutated(UPDATES))
def test_the_update_parser_refuses_only_with_input_errors(text: str) -> None:
    with contextlib.suppress(SparqlSyntaxError):
        parse_update(text, source="update")
