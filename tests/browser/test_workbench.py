"""The query page at /yasgui in headless Chromium against a real `rsep serve`: YASGUI runs SPARQL
on /sparql and shows a results table; the event editor loads and runs each dialect's example
(background knowledge, the query registered, its event files merged by time in one request); the
timeline shows the matches as bars in one lane per query, with the bindings on hover; "Query this
match" opens the match graph in YASGUI. Screenshots of the table and the timeline are taken and
checked (their pixels hold the match bars' colour)."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.support import Server
from tests.support.smart_grid import SMART_GRID_STREAMS

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = pytest.mark.e2e

OpenPage = Callable[[Server], "Page"]
MATCH_BLUE = (0x2B, 0x6C, 0xB0)
"""The match bars' colour (endpoint/static/workbench.css)."""


def expect(actual: Any) -> Any:
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(actual)


def workbench(open_page: OpenPage, server: Server) -> Page:
    page = open_page(server)
    page.goto(server.base + "/yasgui")
    expect(page.locator("#yasgui .yasqe .CodeMirror")).to_be_visible()
    return page


def pixels(png: bytes) -> list[tuple[int, int, int]]:
    """The RGB pixels of an 8-bit RGB or RGBA PNG (Chromium's screenshots), without a library."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    offset, chunks, header = 8, [], b""
    while offset < len(png):
        (length,) = struct.unpack(">I", png[offset : offset + 4])
        kind, data = png[offset + 4 : offset + 8], png[offset + 8 : offset + 8 + length]
        if kind == b"IHDR":
            header = data
        elif kind == b"IDAT":
            chunks.append(data)
        offset += 12 + length
    width, height, depth, color = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and color in (2, 6)
    size = 3 if color == 2 else 4
    raw, stride = zlib.decompress(b"".join(chunks)), width * size
    rows: list[bytearray] = []
    previous = bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - size] if x >= size else 0
            up, corner = previous[x], previous[x - size] if x >= size else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[x] = (line[x] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        rows.append(line)
        previous = line
    return [tuple(row[x : x + 3]) for row in rows for x in range(0, stride, size)]  # type: ignore[misc]


def test_yasgui_runs_sparql_and_shows_a_table(open_page: OpenPage, server: Server, tmp_path: Path) -> None:
    page = workbench(open_page, server)
    page.evaluate("""() => { window.rsepWorkbench.yasgui.getTab().setQuery(
        'SELECT ?x ?y WHERE { VALUES (?x ?y) { (1 "one") (2 "two") } }'); }""")
    page.locator("#yasgui .yasqe_queryButton").click()
    table = page.locator("#yasgui .yasr table.dataTable")
    expect(table).to_contain_text("two")
    expect(table.locator("tbody tr")).to_have_count(2)
    expect(page.locator("#yasgui .yasr_downloadIcon")).to_be_visible()  # the download button
    shot = table.screenshot(path=str(tmp_path / "table.png"))
    assert len(set(pixels(shot))) > 2  # text drawn on the table


@pytest.mark.parametrize("dialect", ["spaseq", "ep-sparql", "c-sparql", "cqels"])
def test_each_dialects_example_runs_and_its_matches_are_on_the_timeline(
    open_page: OpenPage, server: Server, dialect: str, tmp_path: Path
) -> None:
    page = workbench(open_page, server)
    page.select_option("#dialect", dialect)
    page.click("#example-load")
    expect(page.locator("#event-status")).not_to_be_empty()
    assert "SELECT" in page.evaluate("() => window.rsepWorkbench.events.getValue()").upper()
    page.click("#example-run")
    expect(page.locator("#event-status")).to_contain_text("events posted")
    bars = page.locator("#timeline .vis-item.rsep-match")
    expect(bars.first).to_be_attached(timeout=30_000)
    lanes = page.locator("#timeline .vis-label")
    expect(lanes).to_have_count(1)
    expect(lanes.first).to_contain_text(dialect)
    shot = page.locator("#timeline").screenshot(path=str(tmp_path / f"timeline-{dialect}.png"))
    assert MATCH_BLUE in set(pixels(shot)), "no match bar drawn"


def test_hover_shows_the_bindings_and_a_match_opens_in_yasgui(open_page: OpenPage, server: Server) -> None:
    page = workbench(open_page, server)
    page.select_option("#dialect", "spaseq")
    page.click("#example-run")
    bar = page.locator("#timeline .vis-item.rsep-match").first
    expect(bar).to_be_attached(timeout=30_000)
    bar.hover()
    expect(page.locator(".vis-tooltip")).to_contain_text("?city = http://smartgrid.org/Lyon")
    bar.click()
    expect(page.locator("#match-query")).to_be_enabled()
    page.click("#match-query")
    expect(page.locator("#yasgui .yasr table.dataTable")).to_contain_text("http://smartgrid.org/Lyon")


def test_files_of_several_streams_are_posted_merged_by_time(open_page: OpenPage, server: Server) -> None:
    """The smart grid's three files interleave in time: posted one after the other they would be
    refused; chosen together they go in one request, merged."""
    page = workbench(open_page, server)
    page.set_input_files("#files", [str(path) for path in SMART_GRID_STREAMS.values()])
    for index, stream in enumerate(SMART_GRID_STREAMS):
        page.fill(f"#file-stream-{index}", stream)
    page.click("#files-send")
    expect(page.locator("#files-status")).to_have_text("8 events accepted, merged by time.")
    page.click("#files-send")  # again: older than what the log holds, refused whole
    expect(page.locator("#files-status")).to_contain_text("is older than the newest accepted event")
    page.fill("#file-stream-0", "")
    page.click("#files-send")
    expect(page.locator("#files-status")).to_have_text("Give the stream IRI of power.trig.")


def test_the_example_is_posted_one_file_at_a_time_under_a_lateness(
    open_page: OpenPage, make_server: Callable[..., Server]
) -> None:
    """The smart grid's files interleave by 35 minutes: with --max-lateness PT1H each goes in its
    own POST /streams, the 202s show the watermark and the events held, and the idle timeout
    releases them to the query, whose match reaches the timeline."""
    server = make_server(None, "--max-lateness", "PT1H", "--idle-timeout", "1")
    page = workbench(open_page, server)
    page.select_option("#dialect", "spaseq")
    page.click("#example-run-files")
    posts = page.locator("#example-posts li")
    expect(posts).to_have_count(3)
    expect(posts.nth(0)).to_have_text(
        "power.trig \u2192 <http://smartgrid.org/mainSource>: 202, 3 accepted, watermark "
        "2026-11-22T09:40:00Z, 3 held"  # 10:40, its newest, less an hour
    )
    expect(posts.nth(1)).to_contain_text("weather.trig")
    expect(posts.nth(1)).to_contain_text("202, 3 accepted, watermark 2026-11-22T09:40:00Z, 6 held")
    expect(posts.nth(2)).to_contain_text("202, 2 accepted")
    expect(page.locator("#example-posts li.error")).to_have_count(0)
    expect(page.locator("#event-status")).to_contain_text("8 events accepted")
    expect(page.locator("#example-lateness")).to_have_text(
        "Posted one at a time, its files need --max-lateness 2100 (seconds): this endpoint allows 3600."
    )
    expect(page.locator("#event-status")).to_contain_text("All released", timeout=30_000)
    bar = page.locator("#timeline .vis-item.rsep-match")
    expect(bar).to_have_count(1, timeout=30_000)


def test_events_older_than_the_watermark_are_shown_refused(
    open_page: OpenPage, make_server: Callable[..., Server]
) -> None:
    """A lateness of 60 s is less than the 35 minutes the smart grid's files need: the weather
    file's 400 names the watermark, the page says which lateness the example needs, and the
    files that were on time are accepted."""
    server = make_server(None, "--max-lateness", "60")
    page = workbench(open_page, server)
    page.select_option("#dialect", "spaseq")
    page.click("#example-run-files")
    posts = page.locator("#example-posts li")
    expect(posts).to_have_count(3)
    refused = page.locator("#example-posts li.error")
    expect(refused).to_have_count(2)
    expect(refused.first).to_contain_text("weather.trig \u2192 <http://smartgrid.org/weather>: 400")
    expect(refused.first).to_contain_text("is older than the watermark 2026-11-22T10:39:00Z")
    expect(posts.nth(0)).to_have_class("ok")
    expect(page.locator("#example-lateness")).to_contain_text(
        "need --max-lateness 2100 (seconds): this endpoint allows 60, so the events older than the "
        "watermark are refused."
    )
    expect(page.locator("#event-status")).to_contain_text(
        "3 events accepted. 1 event held, watermark 2026-11-22T10:39:00Z: they wait until later events"
    )


def test_without_a_lateness_the_page_says_files_must_come_in_time_order(
    open_page: OpenPage, server: Server
) -> None:
    page = workbench(open_page, server)
    page.select_option("#dialect", "spaseq")
    page.click("#example-run-files")
    expect(page.locator("#example-posts li")).to_have_count(3)
    expect(page.locator("#example-posts li.error").first).to_contain_text(
        "400 \u2014 body: event <http://smartgrid.org/w1> at 2026-11-22T10:05:00Z is older than"
    )
    expect(page.locator("#example-lateness")).to_contain_text("takes events in time order only")
