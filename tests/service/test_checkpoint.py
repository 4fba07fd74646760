"""Checkpoints: atomic files, verified on load, the previous one as fallback."""

from __future__ import annotations

import pytest

from rsep.plugin.service.checkpoints import CheckpointStore

QID = "0123456789abcdef"


def test_the_newest_checkpoint_is_loaded_and_two_are_kept(tmp_path):
    store = CheckpointStore(tmp_path)
    assert store.load(QID) is None
    for payload in (b"one", b"two", b"three"):
        store.save(QID, payload)
    assert store.load(QID) == b"three"
    assert [p.name for p in store.paths(QID)] == ["000000000001.ckpt", "000000000002.ckpt"]
    assert CheckpointStore(tmp_path).load(QID) == b"three"  # a new process reads the same


def test_a_truncated_latest_checkpoint_falls_back_to_the_previous(tmp_path):
    store = CheckpointStore(tmp_path)
    store.save(QID, b"older state")
    latest = store.save(QID, b"newer state")
    latest.write_bytes(latest.read_bytes()[:-3])  # a torn write
    assert store.load(QID) == b"older state"


def test_a_corrupt_or_missing_latest_checkpoint_falls_back_to_the_previous(tmp_path):
    store = CheckpointStore(tmp_path)
    store.save(QID, b"older state")
    latest = store.save(QID, b"newer state")
    data = bytearray(latest.read_bytes())
    data[-1] ^= 0xFF
    latest.write_bytes(bytes(data))
    assert store.load(QID) == b"older state"
    latest.unlink()
    assert store.load(QID) == b"older state"
    store.save(QID, b"next")  # numbering goes on after the files that exist
    assert store.load(QID) == b"next"


def test_nothing_usable_means_no_checkpoint(tmp_path):
    store = CheckpointStore(tmp_path)
    store.save(QID, b"state").write_bytes(b"garbage")
    assert store.load(QID) is None


def test_a_leftover_temporary_file_is_ignored(tmp_path):
    store = CheckpointStore(tmp_path)
    store.save(QID, b"state")
    (tmp_path / QID / ".000000000001.ckpt.tmp").write_bytes(b"half a checkpoint")
    assert store.load(QID) == b"state"
    assert store.save(QID, b"later").name == "000000000001.ckpt"


def test_remove_deletes_every_checkpoint_of_a_query(tmp_path):
    store = CheckpointStore(tmp_path)
    store.save(QID, b"state")
    store.save("fedcba9876543210", b"other")
    store.remove(QID)
    assert store.load(QID) is None and not (tmp_path / QID).exists()
    assert store.load("fedcba9876543210") == b"other"
    store.remove(QID)  # twice is fine


def test_keep_must_be_positive(tmp_path):
    with pytest.raises(ValueError):
        CheckpointStore(tmp_path, keep=0)
