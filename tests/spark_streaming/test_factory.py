"""`RSEP_ENGINE=spark` in the application: the Spark engine (event patterns; window queries go to
an in-process engine beside it), which starts no JVM until it starts, and the in-process fallback
only where Spark cannot run."""

from __future__ import annotations

import logging

from rsep.endpoint.app import create_app
from rsep.plugin.service.engine import WAITING
from rsep.plugin.service.inprocess import InProcessEngine
from tests.support.events import QUERIES


def make_app(tmp_path, **config):
    settings = {"RSEP_DATA_DIR": str(tmp_path / "data"), "RSEP_ENGINE": "spark",
                "RSEP_START_STREAMING": False, "TESTING": True, **config}  # fmt: skip
    return create_app(settings)


def test_the_spark_engine_is_built_without_starting_spark(tmp_path):
    from rsep.plugin.service.split import SplitEngine
    from rsep.plugin.spark.streaming_engine import SparkStreamingEngine

    app = make_app(tmp_path, RSEP_MASTER="local[1]")
    split = app.extensions["rsep.streaming"].engine
    assert isinstance(split, SplitEngine) and isinstance(split.windows, InProcessEngine)
    engine = split.events
    assert isinstance(engine, SparkStreamingEngine)
    assert engine.master == "local[1]" and engine._session is None
    client = app.test_client()
    response = client.post("/queries", data=QUERIES["any"], content_type="application/sparql-query")
    assert response.status_code == 201
    read = client.get(response.headers["Location"]).get_json()
    assert (read["status"], read["position"]) == (WAITING, 0)
    for hook in app.extensions["rsep.shutdown"]:
        hook()
    assert engine._session is None


def test_without_java_continuous_queries_run_in_process_with_a_warning(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-java-here"))
    with caplog.at_level(logging.WARNING):
        app = make_app(tmp_path)
    assert isinstance(app.extensions["rsep.streaming"].engine, InProcessEngine)
    assert "continuous queries run in-process" in caplog.text and "has no bin/java" in caplog.text
