"""`POST /queries?from=N`: a log position is ASCII digits. `str.isdigit` also holds for `²` and
`①`, which int() refuses (a 500), and for `١` (Arabic-Indic one), which int() reads as 1."""

from __future__ import annotations

import pytest

from tests.support.events import QUERIES, event
from tests.support.servers import Server, http_exchange, post_events


@pytest.mark.parametrize("position", ["%C2%B2", "%E2%91%A0", "%D9%A1", "%EF%BC%91"])
def test_a_position_that_is_not_ascii_digits_is_400_naming_from(server: Server, position: str) -> None:
    if server.get("/health")["log_position"] < 3:
        post_events(server, [event(t, f"e{t}") for t in (1, 2, 3)])
    before = len(server.get("/queries")["queries"])
    status, body = http_exchange(server, "POST", f"/queries?from={position}", QUERIES["any"].encode(),
                                 "application/sparql-query")  # fmt: skip
    assert status == 400 and body.startswith("from: expected now or a log position"), body
    assert len(server.get("/queries")["queries"]) == before
