"""A full disk during each write: one line naming the file, and no partial file left behind.

The disk fills at a chosen write (the writer raises ENOSPC, or SQLite's SQLITE_FULL, after writing part of
its file), as on a real full file system; `tests/integration/test_faults.py` runs the commands through it.
"""

from __future__ import annotations

import errno
import logging
import sqlite3
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from mlflow import MlflowClient

from tests.unit.test_checkpoint_files import _state
from vse_ray.checkpoint_files import CHECKPOINT_FILE, remove_partial_checkpoints, save_checkpoint
from vse_ray.data.store.schema import features_table
from vse_ray.data.store.shards import ShardLedger, plan_shards, write_atomic
from vse_ray.disk_full import disk_full_value_error
from vse_ray.json_files import write_json_atomic
from vse_ray.log_file import loggers_restored, route_library_logs
from vse_ray.tracking import get_or_create_experiment
from vse_ray.tracking.lifecycle import prepare_store
from vse_ray.tracking.recorder import RunRecorder

ADVICE = "free space and run the same command again to resume"


def _enospc(path=None) -> OSError:
    return OSError(errno.ENOSPC, "No space left on device", *([str(path)] if path else []))


def _fills_after(written: int):
    """A writer that writes ``written`` bytes of its file, then finds the disk full."""

    def write(_data, path, *args, **kwargs):
        with open(path, "wb") as handle:
            handle.write(b"x" * written)
        raise _enospc()

    return write


def test_a_shard_cut_short_leaves_no_hidden_file(tmp_path, monkeypatch):
    table = features_table(
        {"image_id": np.arange(2), "split": np.array(["train"] * 2), "feature": np.ones((2, 4), np.float32)},
        with_image=False,
    )
    monkeypatch.setattr(pq, "write_table", _fills_after(100))
    with pytest.raises(OSError, match="No space left"):
        write_atomic(table, tmp_path / "split=train" / "part-00000000.parquet")
    assert list((tmp_path / "split=train").iterdir()) == []


def test_a_json_record_cut_short_leaves_no_hidden_file(tmp_path, monkeypatch):
    monkeypatch.setattr("pathlib.Path.write_text", lambda self, text: _fills_after(10)(text, self))
    with pytest.raises(OSError, match="No space left"):
        write_json_atomic({"rows": 4}, tmp_path / "_state" / "marker.json")
    assert list((tmp_path / "_state").iterdir()) == []


def test_the_rerun_removes_the_hidden_file_of_a_killed_shard_write(tmp_path):
    folder = tmp_path / "captions" / "split=train"
    folder.mkdir(parents=True)
    (folder / ".part-00000004.arrow.4242.tmp").write_bytes(b"partial")  # the worker died writing it
    (folder / ".part-00000000.arrow.4242.tmp").write_bytes(b"partial")
    ledger = ShardLedger(tmp_path, "captions")
    shards = plan_shards("train", 8, 4)
    ledger.complete(shards[0], [{"rows": 4, "file": "", "sha256": "", "rejects": "[]"}])
    assert ledger.pending(shards) == [shards[1]]
    assert [p.name for p in folder.iterdir()] == [".part-00000000.arrow.4242.tmp"]  # of a complete shard


def test_a_store_the_full_disk_cut_short_is_one_line_and_removed(tmp_path, monkeypatch):
    db = tmp_path / "mlflow.db"

    def full(self, *args, **kwargs):
        db.write_bytes(b"SQLite format 3\x00")  # the tables half created
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(MlflowClient, "search_experiments", full)
    with pytest.raises(ValueError, match=f"^no space left on device writing {db}: {ADVICE}$"):
        prepare_store(f"sqlite:///{db}", notify=lambda line: None)
    assert not db.exists()


def test_a_full_disk_under_the_log_file_prints_nothing(tmp_path, capsys):
    with loggers_restored():
        path = route_library_logs(tmp_path)
        (handler,) = {h for h in logging.getLogger("ray").handlers if h.get_name() == "vse_ray.log_file"}

        def full(*args):
            raise _enospc()

        handler.stream.write = full  # the file's next write finds the disk full
        logging.getLogger("mlflow").warning("a record the full disk refuses")
    assert capsys.readouterr().err == ""
    assert path.read_text() == ""


def test_a_checkpoint_artifact_cut_short_is_named_and_removed(mlflow_uri, tmp_path, monkeypatch):
    experiment = get_or_create_experiment("full", mlflow_uri, tmp_path)
    recorder = RunRecorder.open(experiment, "r", mlflow_uri)
    save_checkpoint(tmp_path / "ckpt", _state())
    artifact = tmp_path / "mlartifacts" / recorder.run_id / "artifacts" / "checkpoint" / CHECKPOINT_FILE

    log_artifact = MlflowClient.log_artifact

    def full(self, run_id, local_path, artifact_path=None):
        if not local_path.endswith(CHECKPOINT_FILE):  # the small files fit
            return log_artifact(self, run_id, local_path, artifact_path)
        artifact.parent.mkdir(parents=True)
        artifact.write_bytes(b"")  # the copy's first write found the disk full
        raise _enospc()

    monkeypatch.setattr(MlflowClient, "log_artifact", full)
    history = [{"epoch": 1, "rsum": 5.0}]
    with pytest.raises(ValueError, match=f"^no space left on device writing {artifact}: {ADVICE}$"):
        recorder.record_checkpoint(tmp_path / "ckpt", history[0], history, {})
    assert not artifact.exists()


def test_checkpoints_the_full_disk_cut_short_are_removed(tmp_path):
    run = tmp_path / "run"
    good = save_checkpoint(run / "checkpoint_1", _state())
    truncated = run / "checkpoint_2" / CHECKPOINT_FILE
    truncated.parent.mkdir()
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    empty = run / "checkpoint_3" / CHECKPOINT_FILE
    empty.parent.mkdir()
    empty.write_bytes(b"")
    (run / "checkpoint_4").mkdir()
    assert remove_partial_checkpoints(run) == [truncated, empty, run / "checkpoint_4" / CHECKPOINT_FILE]
    assert [p.name for p in run.iterdir()] == ["checkpoint_1"]
    assert torch.load(good, weights_only=True)["epoch"] == 2


def test_the_sqlite_full_error_names_the_store():
    err = RuntimeError("flush failed")
    err.__cause__ = sqlite3.OperationalError("database or disk is full")
    found = disk_full_value_error(err, store=Path("/o/mlflow.db"), folder="/o/ray_results")
    assert str(found) == f"no space left on device writing /o/mlflow.db: {ADVICE}"
    assert str(disk_full_value_error(_enospc(), folder="/o/ray_results")) == (
        f"no space left on device writing /o/ray_results: {ADVICE}"
    )
