"""The Flask application factory (Flask's tutorial layout, datasette's smallness).

One Oxigraph store per process, shared by the request threads (pyoxigraph
releases the GIL), kept in `app.extensions["rsep"]` with the event log, the
query registry and the streaming service. Views are short: validate, call
the core, render; errors are raised as `ApiError`s and rendered in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flask import Flask

from rsep.endpoint import (
    access,
    content_coding,
    cors,
    http_errors,
    limits,
    merged_ingest,
    monitoring,
    queries,
    resources,
    results,
    sparql_protocol,
    store_protocol,
    streams,
    ui,
    workbench,
    workers,
)
from rsep.plugin import InvalidInput

DEFAULTS: dict[str, Any] = {
    "RSEP_DATA_DIR": "rsep-data",
    "RSEP_MASTER": "local[*]",
    "RSEP_ENGINE": "spark",
    "RSEP_TOKEN": None,
    "RSEP_START_STREAMING": True,
    "RSEP_CHECKPOINT_INTERVAL": 1.0,
    "RSEP_SSE_HEARTBEAT": 15.0,
    "RSEP_SPARK_TRIGGER_INTERVAL": 0.1,
    "RSEP_CHECKPOINT_LOCATION": None,
    "RSEP_CORS": False,
    "RSEP_UNION_DEFAULT_GRAPH": False,
    "RSEP_ACCESS": "same-origin",
    "RSEP_ALLOWED_HOSTS": (),
    "RSEP_BIND_HOST": None,
    "RSEP_ALLOW_REMOTE": (),
    "RSEP_SERVICE_TIMEOUT": 10.0,
    "RSEP_MAX_BODY": 64 * 2**20,
    "RSEP_MAX_QUERY_SIZE": 2**20,
    "RSEP_MAX_LITERAL": 4 * 2**20,
    "RSEP_MAX_QUERIES": 1000,
    "RSEP_MAX_LISTENERS": 256,
    "RSEP_MAX_RUNNING_QUERIES": 4,
    "RSEP_QUERY_TIMEOUT": 30.0,
    "RSEP_QUERY_ISOLATION": "process",
    "RSEP_MAX_LATENESS": None,
    "RSEP_IDLE_TIMEOUT": None,
    "RSEP_LATE": "refuse",
}
"""The configuration keys and their defaults (docs/endpoint.md, "Configuration"); `rsep serve`
sets them from the environment and its flags (`rsep.endpoint.settings`)."""


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    app = Flask(__name__)
    app.config.update(DEFAULTS)
    if config:
        app.config.update(config)
    if app.config["RSEP_ACCESS"] == "writes-token" and not app.config["RSEP_TOKEN"]:
        raise InvalidInput("rsep: --access writes-token needs a token (--token or RSEP_TOKEN)")
    Path(app.config["RSEP_DATA_DIR"]).mkdir(parents=True, exist_ok=True)
    resources.init_app(app)
    cors.init_app(app)  # before the token check: a preflight carries no token
    http_errors.init_app(app)
    access.init_app(app)
    content_coding.init_app(app)
    limits.init_app(app)
    workers.init_app(app)
    sparql_protocol.init_app(app)
    store_protocol.init_app(app)
    streams.init_app(app)
    merged_ingest.init_app(app)
    queries.init_app(app)
    results.init_app(app)
    monitoring.init_app(app)
    ui.init_app(app)
    workbench.init_app(app)
    return app
