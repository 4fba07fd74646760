"""The registry of continuous queries: one JSON file per query, surviving restarts."""

from __future__ import annotations

import json

from rsep.plugin.service.registry import ACTIVE, FAILED, Registry

STREAMS = ("urn:t:s1", "urn:t:s2")


def test_a_registration_survives_a_new_registry_on_the_same_folder(tmp_path):
    query = Registry(tmp_path).create("SELECT ...", "spaseq", STREAMS, 42, {"policy": "unrestricted"})
    assert len(query.id) == 16 and query.iri == f"urn:rsep:query:{query.id}"
    again = Registry(tmp_path).get(query.id)
    assert again == query
    assert (again.text, again.dialect, again.streams, again.start, again.status) == (
        "SELECT ...",
        "spaseq",
        STREAMS,
        42,
        ACTIVE,
    )
    on_disk = json.loads((tmp_path / f"{query.id}.json").read_text())
    assert on_disk["iri"] == query.iri and on_disk["options"] == {"policy": "unrestricted"}
    assert on_disk["created"].endswith("Z")


def test_all_lists_registrations_oldest_first(tmp_path):
    registry = Registry(tmp_path)
    made = [registry.create(f"q{i}", "spaseq", STREAMS, i, {}) for i in range(3)]
    assert [q.id for q in registry.all()] == [q.id for q in sorted(made, key=lambda q: (q.created, q.id))]


def test_status_changes_are_persisted(tmp_path):
    registry = Registry(tmp_path)
    query = registry.create("q", "spaseq", STREAMS, 0, {})
    registry.set_status(query.id, FAILED, "ValueError: boom")
    again = Registry(tmp_path).get(query.id)
    assert (again.status, again.error) == (FAILED, "ValueError: boom")
    assert registry.set_status("ffffffffffffffff", FAILED) is None


def test_remove_forgets_a_query(tmp_path):
    registry = Registry(tmp_path)
    query = registry.create("q", "spaseq", STREAMS, 0, {})
    assert registry.remove(query.id)
    assert registry.get(query.id) is None and registry.all() == []
    assert not registry.remove(query.id)


def test_ids_that_are_not_ours_are_unknown_not_paths(tmp_path):
    registry = Registry(tmp_path)
    (tmp_path.parent / "secret.json").write_text("{}")
    assert registry.get("../secret") is None
    assert not registry.remove("../secret")
    assert (tmp_path.parent / "secret.json").exists()


def test_no_temporary_file_is_left_behind(tmp_path):
    Registry(tmp_path).create("q", "spaseq", STREAMS, 0, {})
    assert [p.suffix for p in tmp_path.iterdir()] == [".json"]


def test_a_registration_keeps_its_time_in_stream_time(tmp_path):
    """`t0`: the log's time at the registration, where a window query's windows start; absent (an
    empty log, or a registration written before it was kept) it is None."""
    registry = Registry(tmp_path)
    query = registry.create("q", "c-sparql", STREAMS, 3, {}, t0=1406880000.5)
    assert Registry(tmp_path).get(query.id) == query and query.t0 == 1406880000.5
    older = registry.create("q", "c-sparql", STREAMS, 0, {})
    on_disk = json.loads((tmp_path / f"{older.id}.json").read_text())
    assert on_disk.pop("t0") is None
    (tmp_path / f"{older.id}.json").write_text(json.dumps(on_disk))
    assert Registry(tmp_path).get(older.id) == older
