"""Fixtures of the browser tests: a real `rsep serve` subprocess on a free port and a fresh data
folder, and Debian's Chromium driven headless by Playwright.

Chromium is the system one (`/usr/bin/chromium`, or RSEP_CHROMIUM): Playwright's own browser
download does not work on machines without internet. `scripts/setup.sh --test` installs it. A
missing Chromium fails the tests (it never skips them), so CI cannot pass without running them.
Playwright and the browser live for one module: Playwright's sync API keeps an event loop, which is
gone before the other test modules run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.support import Server, chromium_path

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page, Playwright

CHROMIUM_ARGS = [
    "--no-sandbox",  # root in a container
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",  # the machine has no internet: no update or sync checks
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def make_server(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def make(token: str | None = None, *options: str) -> Server:
        index = len(servers)
        server = Server(tmp_path / f"data{index}", tmp_path / f"server{index}.log", token, options)
        servers.append(server)
        return server.start()

    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def server(make_server: Callable[..., Server]) -> Server:
    return make_server()


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    path = chromium_path()  # fail before importing playwright if the browser is missing
    del path
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the browser tests need playwright: run `scripts/setup.sh --test`", pytrace=False)
    from playwright.sync_api import expect

    expect.set_options(timeout=15_000)
    with sync_playwright() as running:
        yield running


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    launched = playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
    yield launched
    launched.close()


@dataclass
class Watched:
    """What a page did that it should not: requests to other hosts, script errors."""

    foreign_requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    """A fresh profile (empty localStorage) per test."""
    made = browser.new_context()
    made.set_default_timeout(15_000)
    yield made
    made.close()


@pytest.fixture
def open_page(context: BrowserContext) -> Iterator[Callable[[Server], Page]]:
    """Open the endpoint's page; at the end, check that it loaded nothing from another host and
    raised no script error (a Content-Security-Policy violation is a console error too)."""
    watched = Watched()

    def open_(server: Server) -> Page:
        def route(request_route: Any) -> None:
            url = request_route.request.url
            if url.startswith(server.base + "/"):
                request_route.continue_()
            else:
                watched.foreign_requests.append(url)
                request_route.abort()

        context.route("**/*", route)
        page = context.new_page()
        page.on("pageerror", lambda error: watched.errors.append(f"page error: {error}"))
        page.on("console", lambda message: _console(watched, message))
        page.goto(server.base + "/")
        return page

    yield open_
    assert watched.foreign_requests == [], "the page must work offline"
    assert watched.errors == []


def _console(watched: Watched, message: Any) -> None:
    # Chromium logs a 4xx answer to fetch() ("Failed to load resource") or to an EventSource; the
    # tests provoke those on purpose. Anything else at error level is a defect of the page.
    expected = ("Failed to load resource", "EventSource's response")
    if message.type == "error" and not message.text.startswith(expected):
        watched.errors.append(f"console: {message.text}")
