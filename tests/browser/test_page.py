"""The page at `/` in headless Chromium against a real `rsep serve`: SPARQL results as a table,
errors with their line and column, and the smart-grid example end to end through the page
(background knowledge by the Graph Store Protocol, the SPAseq query registered, the three event
files ingested, the match arriving in the live list by Server-Sent Events)."""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import groupby
from typing import TYPE_CHECKING, Any

import pyoxigraph as ox
import pytest

from tests.browser.support import Server, chromium_path
from tests.support.paths import REPO

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.e2e

SMART_GRID = REPO / "examples" / "smart-grid"
STREAM_FILES = {
    "http://smartgrid.org/mainSource": SMART_GRID / "power.trig",
    "http://smartgrid.org/weather": SMART_GRID / "weather.trig",
    "http://smartgrid.org/storageSource": SMART_GRID / "storage.trig",
}
PROV_GENERATED_AT = ox.NamedNode("http://www.w3.org/ns/prov#generatedAtTime")
PREFIXES = {
    "": "http://smartgrid.org/",
    "prov": "http://www.w3.org/ns/prov#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
}
EXPECTED_BINDINGS = {
    "house": "<http://smartgrid.org/H1>",
    "fr1": "25^^xsd:integer",
    "fr2": "12^^xsd:integer",
    "house2": "<http://smartgrid.org/H4>",
    "city": "<http://smartgrid.org/Lyon>",
    "oname": '"Alice"',
    "sp": "7^^xsd:integer",
}

OpenPage = Callable[[Server], "Page"]


def expect(actual: Any) -> Any:
    """playwright's expect, imported when used (a missing playwright fails in the fixtures, with
    a message that says how to install it)."""
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(actual)


def event_batches() -> list[tuple[str, str, int]]:
    """The example's three event files as the requests a client sends: events in timestamp order
    across the streams (the log accepts nothing older than what it has), consecutive events of a
    stream in one TriG request. (stream, TriG text, number of events)."""
    events: list[tuple[str, str, list[ox.Quad]]] = []
    for stream, path in STREAM_FILES.items():
        quads = list(ox.parse(path=str(path), format=ox.RdfFormat.TRIG))
        times = {q.subject: q for q in quads if q.predicate == PROV_GENERATED_AT}
        for name in dict.fromkeys(
            q.graph_name for q in quads if not isinstance(q.graph_name, ox.DefaultGraph)
        ):
            stamp = times[name]
            body = [q for q in quads if q.graph_name == name] + [stamp]
            events.append((str(stamp.object.value), stream, body))
    events.sort(key=lambda event: event[0])  # xsd:dateTime literals of one zone sort as text
    batches = []
    for stream, group in groupby(events, key=lambda event: event[1]):
        members = list(group)
        quads = [q for _, _, body in members for q in body]
        text = ox.serialize(quads, format=ox.RdfFormat.TRIG, prefixes=PREFIXES).decode()
        batches.append((stream, text, len(members)))
    return batches


def test_chromium_is_installed() -> None:
    """A missing browser is a failure that says how to install it, never a skip."""
    assert chromium_path()


def run_sparql(page: Page, text: str) -> None:
    page.fill("#sparql-text", text)
    page.click("#sparql-run")


def test_sparql_select_ask_and_construct(server: Server, open_page: OpenPage) -> None:
    page = open_page(server)
    expect(page).to_have_title(re.compile("rsep"))
    run_sparql(
        page, 'SELECT ?x ?label WHERE { VALUES (?x ?label) { (<http://example.org/a> "one"@en) (2 "two") } }'
    )
    expect(page.locator("#sparql-status")).to_have_text(re.compile(r"^2 rows in \d+ ms\.$"))
    table = page.locator("#sparql-table")
    expect(table.locator("thead th")).to_have_text(["?x", "?label"])
    expect(table.locator("tbody tr")).to_have_count(2)
    expect(table.locator("tbody tr").nth(0).locator("td")).to_have_text(
        ["<http://example.org/a>", '"one"@en']
    )
    expect(table.locator("tbody tr").nth(1).locator("td")).to_have_text(["2^^xsd:integer", '"two"'])

    # an update (detected from the text), then ASK and CONSTRUCT see its triple
    run_sparql(page, "PREFIX ex: <http://example.org/>\nINSERT DATA { ex:a ex:p ex:b }")
    expect(page.locator("#sparql-status")).to_have_text(re.compile(r"^Update done"))
    run_sparql(page, "ASK { <http://example.org/a> ?p ?o }")
    expect(page.locator("#sparql-boolean")).to_have_text("true")
    run_sparql(page, "CONSTRUCT WHERE { ?s ?p ?o }")
    expect(page.locator("#sparql-graph")).to_contain_text("<http://example.org/b>")

    # Ctrl+Enter in the text area runs it too
    page.fill("#sparql-text", "SELECT (1 AS ?one) WHERE {}")
    page.locator("#sparql-text").press("Control+Enter")
    expect(page.locator("#sparql-status")).to_have_text(re.compile(r"^1 row in"))


def test_errors_show_their_line_and_column(server: Server, open_page: OpenPage) -> None:
    page = open_page(server)
    run_sparql(page, "SELECT * WHERE {\n  ?s ?p\n}")
    error = page.locator("#sparql-result .error-box")
    expect(error.locator(".where")).to_have_text("query:3:1")
    expect(error.locator(".message")).to_contain_text("unexpected '}'")
    expect(error.locator("pre")).to_have_text("3 | }\n    ^")
    error.get_by_role("button", name="Go to line 3, column 1").click()
    expect(page.locator("#sparql-text")).to_be_focused()
    assert page.evaluate("document.getElementById('sparql-text').selectionStart") == len(
        "SELECT * WHERE {\n  ?s ?p\n"
    )

    page.fill(
        "#event-query",
        "PREFIX : <http://example.org/>\nSELECT * WHERE { SEQ (A; B) DEFINE GPM A ON S1 { ?a ?b } }",
    )
    page.click("#register-send")
    expect(page.locator("#register-form .error-box .where")).to_have_text("query:2:56")

    page.fill("#stream", "http://example.org/s")
    page.fill("#events", "@prefix : <http://example.org/> .\n:e1 { :a :b }\n")
    page.click("#ingest-send")
    expect(page.locator("#ingest-form .error-box .where")).to_have_text("body:2:13")
    expect(page.locator("#ingest-status")).to_have_text(re.compile("^Failed: "))


def register_smart_grid(page: Page) -> None:
    """Its background knowledge through the Graph Store Protocol, then SPAseq Query 1 registered
    (the page starts watching the new query)."""
    page.select_option("#data-format", "application/trig")
    page.fill("#data-text", (SMART_GRID / "kb.trig").read_text())
    page.click("#data-send")
    expect(page.locator("#data-status")).to_have_text("Loaded into the store.")
    page.fill("#event-query", (SMART_GRID / "query.rq").read_text())
    page.select_option("#policy", "unrestricted")
    page.click("#register-send")


def test_smart_grid_match_arrives_live(server: Server, open_page: OpenPage) -> None:
    page = open_page(server)
    register_smart_grid(page)
    query_id = page.locator("#register-result .query-id").inner_text()
    assert re.fullmatch(r"[0-9a-f]{16}", query_id)
    expect(page.locator("#register-status")).to_have_text(f"Registered query {query_id}.")
    expect(page.locator("#watch-query")).to_have_value(query_id)
    # watch it explicitly too (the keyboard path: the select and the Watch button)
    page.locator("#watch-start").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#watch-status")).to_have_attribute("data-connected", query_id)

    # the three event files, in timestamp order, through the ingest form
    position = 0
    for stream, trig, count in event_batches():
        page.fill("#stream", stream)
        page.select_option("#events-format", "application/trig")
        page.fill("#events", trig)
        page.click("#ingest-send")
        last = position + count - 1
        where = (
            f"1 event (log position {last})"
            if count == 1
            else f"{count} events (log positions {position}–{last})"
        )
        expected = f"Accepted {where} on {stream}."
        expect(page.locator("#ingest-status")).to_have_text(expected)
        position += count
    assert position == 8

    # the match, pushed by SSE into the live list
    match = page.locator("#matches li.match")
    expect(match).to_have_count(1)
    for name, value in EXPECTED_BINDINGS.items():
        expect(match.locator(f'dd[data-var="{name}"]')).to_have_text(value)
    expect(match.locator(".when")).to_have_text("2026-11-22T10:00:00Z → 2026-11-22T10:15:00Z")
    graph = match.get_attribute("data-graph")
    assert graph is not None and graph.startswith(f"urn:rsep:match:{query_id}:")
    expect(page.locator("#watch-status")).to_have_text(
        f"Watching query {query_id}: connected, 1 match received."
    )

    # the registered queries list counts it
    page.click("#queries-refresh")
    row = page.locator(f'#queries-body tr[data-id="{query_id}"]')
    expect(row.locator("td").nth(1)).to_have_text("running")
    expect(row.locator("td").nth(2)).to_have_text("8")
    expect(row.locator("td").nth(3)).to_have_text("1")
    expect(row.locator("td").nth(4)).to_have_text("0")

    # and the match graph answers through SPARQL
    match.get_by_role("button", name="Query this graph").click()
    expect(page.locator("#sparql-text")).to_be_focused()
    page.click("#sparql-run")
    rows = page.locator("#sparql-table tbody tr")
    expect(rows).to_have_count(7)
    expect(page.locator("#sparql-table")).to_contain_text('"Alice"')


def test_token_is_kept_and_sent(make_server: Callable[..., Server], open_page: OpenPage) -> None:
    server = make_server(token="s3cret")
    page = open_page(server)
    expect(page.locator("#queries-status")).to_contain_text("Cannot list the queries")
    run_sparql(page, "ASK {}")
    expect(page.locator("#sparql-result .error-box")).to_contain_text("Error 401")

    page.fill("#token", "s3cret")
    assert page.evaluate("localStorage.getItem('rsep.token')") == "s3cret"
    page.reload()
    expect(page.locator("#token")).to_have_value("s3cret")
    expect(page.locator("#queries-status")).to_have_text(re.compile(r"^0 queries"))
    run_sparql(page, "ASK { <http://example.org/nothing> ?p ?o }")
    expect(page.locator("#sparql-boolean")).to_have_text("false")

    page.click("#token-clear")
    assert page.evaluate("localStorage.getItem('rsep.token')") is None


def test_live_matches_with_a_token(make_server: Callable[..., Server], open_page: OpenPage) -> None:
    server = make_server(token="s3cret")
    page = open_page(server)
    page.fill("#token", "s3cret")
    page.fill("#event-query", (SMART_GRID / "query.rq").read_text())
    page.click("#register-send")
    query_id = page.locator("#register-result .query-id").inner_text()
    expect(page.locator("#watch-status")).to_have_attribute("data-connected", query_id, timeout=3_000)


WINDOW_QUERY = """REGISTER QUERY onRoad AS
SELECT ?car FROM STREAM <http://example.org/cars> [RANGE 10s STEP 10s]
WHERE { ?car <http://example.org/on> ?road }"""
CARS = """@prefix : <http://example.org/> .
:e0 { :c0 :parkedIn :p1 } :e0 <http://www.w3.org/ns/prov#generatedAtTime> 0 .
:e1 { :c1 :on :r1 } :e1 <http://www.w3.org/ns/prov#generatedAtTime> 1 .
:e2 { :c2 :on :r1 } :e2 <http://www.w3.org/ns/prov#generatedAtTime> 2 ."""
TICK = (
    "<http://example.org/t> <http://www.w3.org/ns/prov#generatedAtTime>"
    ' "30"^^<http://www.w3.org/2001/XMLSchema#integer> .'
)


def test_a_window_evaluation_arrives_live_with_all_its_solutions(server: Server, open_page: OpenPage) -> None:
    page = open_page(server)
    page.fill("#event-query", WINDOW_QUERY)
    page.click("#register-send")
    query_id = page.locator("#register-result .query-id").inner_text()
    expect(page.locator("#watch-status")).to_have_attribute("data-connected", query_id)
    for stream, fmt, text in [
        ("http://example.org/cars", "application/trig", CARS),
        ("http://example.org/clock", "application/n-quads", TICK),  # makes the close at 10 final
    ]:
        page.fill("#stream", stream)
        page.select_option("#events-format", fmt)
        page.fill("#events", text)
        page.click("#ingest-send")
        expect(page.locator("#ingest-status")).to_contain_text("Accepted")
    match = page.locator("#matches li.match")
    # one evaluation (the close at 10, whose window (0, 10] opens at t0, the first event at 0: no
    # car on a road); the one at 20 is empty
    expect(match).to_have_count(1)
    expect(match.locator("dl.bindings")).to_have_count(2)
    expect(match.locator('dd[data-var="car"]')).to_have_text(
        ["<http://example.org/c1>", "<http://example.org/c2>"]
    )
    expect(page.locator("#match-announce")).to_have_text(f"New match of {query_id}: 2 solutions")


def test_files_posted_one_at_a_time_show_the_watermark_and_a_late_event_its_400(
    make_server: Callable[..., Server], open_page: OpenPage
) -> None:
    """Under --max-lateness the smart grid's files go one at a time through the ingest form: each
    202 shows the watermark and the events held, the idle timeout releases them to the query
    (its match arrives live), and an event older than the watermark is refused, named."""
    server = make_server(None, "--max-lateness", "PT1H", "--idle-timeout", "1")
    page = open_page(server)
    register_smart_grid(page)
    expect(page.locator("#register-status")).to_contain_text("Registered query")
    held = {"power.trig": 3, "weather.trig": 6, "storage.trig": 8}
    for stream, path in STREAM_FILES.items():
        page.fill("#stream", stream)
        page.fill("#events", path.read_text())
        page.click("#ingest-send")
        count = 2 if path.name == "storage.trig" else 3
        expect(page.locator("#ingest-status")).to_have_text(
            f"Accepted {count} events on {stream}. Watermark 2026-11-22T09:40:00Z: "
            f"{held[path.name]} events held until it passes them."
        )
    expect(page.locator("#matches li.match")).to_have_count(1, timeout=30_000)  # released when idle

    page.fill("#stream", "http://smartgrid.org/weather")
    page.fill(
        "#events",
        """@prefix prov: <http://www.w3.org/ns/prov#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
<http://smartgrid.org/w0> { <http://smartgrid.org/W0> <http://smartgrid.org/loc> <http://smartgrid.org/L1> }
<http://smartgrid.org/w0> prov:generatedAtTime "2026-11-22T09:00:00Z"^^xsd:dateTime .
""",
    )
    page.click("#ingest-send")
    expect(page.locator("#ingest-status")).to_contain_text(
        "Failed: event <http://smartgrid.org/w0> at 2026-11-22T09:00:00Z is older than the watermark"
    )
    expect(page.locator("#ingest-form .error-box")).to_contain_text("nothing of this request was stored")
