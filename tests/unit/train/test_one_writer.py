"""One writer per run, and what a rerun with another config does (no Ray started)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest
from mlflow import MlflowClient

from tests.support.cli import one_error_line, run_cli
from tests.support.no_epoch_lines import NoEpochLines
from tests.support.tiny_store import write_tiny_store
from vse_ray.data.store.verify import verify_data_dir
from vse_ray.file_lock import LOCK_NAME, FolderLock, release_all
from vse_ray.train.config import TrainConfig
from vse_ray.train.rerun import CHANGES_TAG, claim_run, plan_run, record_path


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return write_tiny_store(tmp_path_factory.mktemp("writer") / "tiny")


def test_a_held_folder_is_refused_naming_the_holder(tmp_path):
    with FolderLock(tmp_path):
        with pytest.raises(ValueError, match=f"in use by PID {os.getpid()} on .*--wait"):
            FolderLock(tmp_path).acquire()
    FolderLock(tmp_path).acquire().release()  # free again once released


def test_the_lock_of_a_dead_process_is_taken_over(tmp_path):
    holder = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    dead = int(holder.stdout)
    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": dead, "host": "h", "started": time.time()}))
    lock = FolderLock(tmp_path).acquire()
    assert json.loads((tmp_path / LOCK_NAME).read_text())["pid"] == os.getpid()
    lock.release()


def test_wait_queues_behind_the_holder(tmp_path):
    first = FolderLock(tmp_path).acquire()
    threading.Timer(0.5, first.release).start()
    said: list[str] = []
    start = time.perf_counter()
    FolderLock(tmp_path).acquire(wait=True, notify=said.append).release()
    assert time.perf_counter() - start >= 0.4
    assert said and said[0].startswith(f"waiting for PID {os.getpid()}")


def test_a_second_train_of_a_held_run_is_one_line(store, tmp_path):
    out = tmp_path / "out"
    run = out / "ray_results" / "tiny-vsepp-s0"
    with FolderLock(run):
        start = time.perf_counter()
        result = run_cli(["train", "--data", str(store), "--output-dir", str(out), "--epochs", "1"])
        seconds = time.perf_counter() - start
    one_error_line(result, f"run 'tiny-vsepp-s0' ({run}) is in use by PID {os.getpid()}", "--run-name")
    assert seconds < 30


def test_a_train_of_a_data_folder_being_precomputed_is_one_line(store, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(store, data)
    with FolderLock(data):  # a precompute writing it (`precompute --overwrite`)
        result = run_cli(
            ["train", "--data", str(data), "--output-dir", str(tmp_path / "out"), "--epochs", "1"]
        )
    one_error_line(
        result, f"data folder {data} is being written by PID {os.getpid()}", "wait for it to finish"
    )
    assert not (tmp_path / "out").exists()


def test_another_run_in_the_same_output_folder_is_not_held(tmp_path):
    with FolderLock(tmp_path / "o" / "ray_results" / "coco-vsepp-s0"):
        claim_run(_cfg(tmp_path, loss="sam"))  # coco-sam-s0: its own lock
    release_all()
    claim_run(_cfg(tmp_path))
    release_all()


def _cfg(tmp_path, **change) -> TrainConfig:
    return TrainConfig(data_dir=str(tmp_path / "coco"), output_dir=str(tmp_path / "o"), **change)


def test_a_rerun_with_another_config_is_refused_listing_the_keys(tmp_path):
    first = plan_run(_cfg(tmp_path))
    assert plan_run(_cfg(tmp_path)) == first  # the same config resumes
    with pytest.raises(
        ValueError,
        match=r"another config \(epochs 30 -> 40, lr 0.0002 -> 0.002\): lr cannot change on resume: pass",
    ):
        plan_run(_cfg(tmp_path, lr=2e-3, epochs=40))
    with pytest.raises(
        ValueError, match=r"--resume: .* cannot continue with another lr \(lr 0.0002 -> 0.002\)"
    ):
        plan_run(_cfg(tmp_path, lr=2e-3, epochs=40), resume=True)


def test_restating_a_default_is_no_change(tmp_path):
    first = plan_run(_cfg(tmp_path))
    restated = _cfg(
        tmp_path, loss_params={"margin": 0.2}, warmup_params={"reduction": "sum"}, model_params={"crop": 0}
    )
    assert plan_run(restated).run_name == first.run_name  # the same run resumes
    with pytest.raises(
        ValueError, match=r"another config \(loss_params .*'margin': 0.2.* -> .*'margin': 0.3"
    ):
        plan_run(_cfg(tmp_path, loss_params={"margin": 0.3}))


def test_a_data_folder_precomputed_again_at_the_same_path_is_refused(tmp_path):
    data = write_tiny_store(tmp_path / "coco")
    before = verify_data_dir(data)
    first = plan_run(_cfg(tmp_path), data=before)
    assert plan_run(_cfg(tmp_path), data=verify_data_dir(data)).run_name == first.run_name  # same data
    (data / "manifest.json").write_text((data / "manifest.json").read_text() + "\n")  # only the bytes differ
    assert plan_run(_cfg(tmp_path), data=verify_data_dir(data)).run_name == first.run_name
    shutil.rmtree(data)
    write_tiny_store(data, seed=1)  # the same path, other data
    after = verify_data_dir(data)
    with pytest.raises(ValueError) as err:
        plan_run(_cfg(tmp_path), resume=True, data=after)
    assert str(err.value) == (
        f"run 'coco-vsepp-s0' in {first.storage_path} was trained on {data} with manifest sha256 "
        f"{before.manifest_sha256}; that folder now holds other data (manifest sha256 "
        f"{after.manifest_sha256}: precomputed again?); its checkpoints do not fit that data: pass --new-run "
        "to start a fresh run beside it, or choose another --run-name"
    )
    assert plan_run(_cfg(tmp_path), new_run=True, data=after).run_name == "coco-vsepp-s0-2"


def test_a_field_added_by_a_later_version_is_no_change(tmp_path):
    cfg = plan_run(_cfg(tmp_path))
    record = json.loads(record_path(cfg).read_text())
    del record["config"]["eval_batch_size"]
    record["config"]["retired_field"] = 1
    record_path(cfg).write_text(json.dumps(record))
    assert plan_run(_cfg(tmp_path)) == cfg


def test_resume_records_a_safe_change(tmp_path):
    uri = f"sqlite:///{tmp_path / 'o' / 'mlflow.db'}"
    client = MlflowClient(uri)
    run = client.create_run(client.create_experiment("coco"), tags={"vse_ray.run_name": "coco-vsepp-s0"})
    plan_run(_cfg(tmp_path))
    said: list[str] = []
    cfg = plan_run(_cfg(tmp_path, epochs=40), resume=True, notify=said.append)
    assert cfg.run_name == "coco-vsepp-s0" and said == ["resuming coco-vsepp-s0 with epochs 30 -> 40"]
    record = json.loads(record_path(cfg).read_text())
    assert record["config"]["epochs"] == 40 and record["changes"][0]["changes"] == {"epochs": [30, 40]}
    tag = json.loads(client.get_run(run.info.run_id).data.tags[CHANGES_TAG])
    assert tag[0]["changes"] == {"epochs": [30, 40]}
    assert plan_run(_cfg(tmp_path, epochs=40)).epochs == 40  # the recorded config is the new one


def test_new_run_starts_beside_the_old_one(tmp_path):
    plan_run(_cfg(tmp_path))
    fresh = plan_run(_cfg(tmp_path, lr=2e-3), new_run=True, notify=lambda line: None)
    assert fresh.run_name == "coco-vsepp-s0-2" and fresh.lr == 2e-3
    assert plan_run(_cfg(tmp_path, lr=2e-3, run_name="coco-vsepp-s0-2")).run_name == "coco-vsepp-s0-2"
    with pytest.raises(ValueError, match="exclude each other"):
        plan_run(_cfg(tmp_path), resume=True, new_run=True)


@pytest.mark.parametrize(
    ("stop", "code", "by"),
    [
        (KeyboardInterrupt, 130, "Ctrl-C"),
        (SystemExit, 130, "Ctrl-C"),  # Ray Train's SIGINT handler
        (SystemExit(signal.SIGTERM), 143, "SIGTERM"),  # the SIGTERM handler `ray.init` installs
    ],
)
def test_ctrl_c_on_train_is_one_line_and_marks_the_run_killed(store, tmp_path, monkeypatch, stop, code, by):
    class Interrupted:
        def fit(self):
            raise stop

    monkeypatch.setattr("vse_ray.ray_session.ensure_ray", lambda address=None: None)
    monkeypatch.setattr("vse_ray.train.trainer.build_trainer", lambda *args, **kwargs: Interrupted())
    monkeypatch.setattr("vse_ray.train.epoch_lines.RunEpochLines", NoEpochLines)
    out = tmp_path / "out"
    args = ["train", "--data", str(store), "--output-dir", str(out), "--epochs", "1", "--num-workers", "1"]
    result = run_cli(args)  # on Ray Train, whose fit the stand-in stops
    assert result.exit_code == code, result.output
    assert result.output.splitlines()[-1:] == [  # after MLflow's own store-creation lines
        f"stopped by {by}: run the same command again to resume from the last checkpoint (the MLflow run "
        "is KILLED)"
    ]
    client = MlflowClient(f"sqlite:///{out / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name(store.name).experiment_id])
    assert run.info.status == "KILLED"
    FolderLock(out).acquire().release()  # the command's lock ended with it


STUDY = """
name: tiny
baseline: vsepp
seeds: 1
warmup_epochs: 1
epochs: 1
data: {{data_dir: {data_dir}}}
train: {{batch_size: 16, word_dim: 16, embed_dim: 32}}
losses:
  vsepp: {{}}
  ladder: {{thresholds: [0.5]}}
"""


def test_ctrl_c_on_study_is_one_line_and_marks_its_run_killed(store, tmp_path, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("vse_ray.ray_session.ensure_ray", lambda **options: None)
    monkeypatch.setattr("vse_ray.study.run.prepare_data", lambda spec, out: str(store))
    monkeypatch.setattr("vse_ray.study.run.train_warmups", interrupted)
    path = tmp_path / "tiny.yaml"
    path.write_text(STUDY.format(data_dir=store))
    out = tmp_path / "out"
    result = run_cli(["study", str(path), "--output-dir", str(out)])
    assert result.exit_code == 130, result.output
    assert result.output.splitlines()[-1] == (
        "stopped by Ctrl-C: run the same command again to resume: finished runs are kept"
    )
    client = MlflowClient(f"sqlite:///{out / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name("study-tiny").experiment_id])
    assert run.info.status == "KILLED"


def test_a_full_disk_during_training_is_one_line_naming_the_file(store, tmp_path, monkeypatch):
    checkpoint = tmp_path / "out" / "ray_results" / "checkpoint_000001" / "model.pt"

    class Full:
        def fit(self):
            raise RuntimeError("worker failed") from OSError(
                errno.ENOSPC, "No space left on device", str(checkpoint)
            )

    monkeypatch.setattr("vse_ray.ray_session.ensure_ray", lambda address=None: None)
    monkeypatch.setattr("vse_ray.train.trainer.build_trainer", lambda *args, **kwargs: Full())
    monkeypatch.setattr("vse_ray.train.epoch_lines.RunEpochLines", NoEpochLines)
    args = ["train", "--data", str(store), "--output-dir", str(tmp_path / "out"), "--epochs", "1"]
    result = run_cli([*args, "--num-workers", "1"])  # on Ray Train
    assert result.exit_code == 2, result.output
    assert (
        f"error: no space left on device writing {checkpoint}: free space and run the same command"
        in result.output
    )
