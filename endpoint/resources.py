"""What the application shares between requests: the data directory and the
one Oxigraph store of the process (the background knowledge base and the
match graphs), opened once in `init_app`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flask import Flask, current_app

from rsep.plugin import KnowledgeBase, allow_remote, open_store, set_service_timeout


@dataclass
class Resources:
    data_dir: Path
    kb: KnowledgeBase


def init_app(app: Flask) -> None:
    data_dir = Path(app.config["RSEP_DATA_DIR"])
    allow_remote(app.config.get("RSEP_ALLOW_REMOTE") or ())  # SERVICE and LOAD: off by default
    set_service_timeout(float(app.config["RSEP_SERVICE_TIMEOUT"]))  # and within a deadline when on
    app.extensions["rsep"] = Resources(data_dir, KnowledgeBase(open_store(data_dir / "store")))


def resources() -> Resources:
    found: Resources = current_app.extensions["rsep"]
    return found
