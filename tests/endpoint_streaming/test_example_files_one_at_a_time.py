"""The query page posts an example's event files one at a time (issue 18, item 5): GET
/ui/examples says which `--max-lateness` that needs and the endpoint's event-time policy, and the
need is exact against the real endpoint: with it no file is refused, with a second less one is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsep.endpoint.app import create_app
from tests.support.paths import REPO
from tests.support.streaming_endpoint import config, shut_down

EXAMPLES = sorted(path for path in (REPO / "examples").iterdir() if (path / "manifest.json").is_file())


def files(folder: Path) -> list[tuple[str, str]]:
    manifest = json.loads((folder / "manifest.json").read_text())
    return list({**manifest["streams"], **manifest.get("then", {})}.items())


def statuses(data: Path, folder: Path, lateness: float) -> list[int]:
    """Each file of the example in its own POST /streams, in the manifest's order."""
    app = create_app(config(data, RSEP_MAX_LATENESS=lateness))
    try:
        client = app.test_client()
        found = []
        for stream, name in files(folder):
            media = "application/n-quads" if name.endswith(".nq") else "application/trig"
            body = (folder / name).read_bytes()
            found.append(client.post(f"/streams?stream={stream}", data=body, content_type=media).status_code)
        return found
    finally:
        shut_down(app)


@pytest.mark.parametrize("folder", EXAMPLES, ids=lambda folder: folder.name)
def test_the_lateness_an_example_needs_is_exactly_enough(folder: Path, tmp_path: Path) -> None:
    app = create_app(config(tmp_path / "page"))
    try:
        listed = app.test_client().get("/ui/examples").json
    finally:
        shut_down(app)
    need = next(e for e in listed["examples"] if e["name"] == folder.name)["lateness_needed"]
    assert statuses(tmp_path / "enough", folder, need) == [202] * len(files(folder))
    if need:
        assert 400 in statuses(tmp_path / "short", folder, need - 1)


def test_the_smart_grid_needs_35_minutes(tmp_path: Path) -> None:
    """power.trig ends at 10:40, weather.trig starts at 10:05."""
    app = create_app(config(tmp_path, RSEP_MAX_LATENESS=60.0, RSEP_IDLE_TIMEOUT=2.0))
    try:
        listed = app.test_client().get("/ui/examples").json
    finally:
        shut_down(app)
    smart_grid = next(e for e in listed["examples"] if e["name"] == "smart-grid")
    assert smart_grid["lateness_needed"] == 35 * 60
    assert listed["event_time"] == {"max_lateness": 60.0, "idle_timeout": 2.0, "late": "refuse"}
