"""`evaluate` names what is wrong with a checkpoint: a run's artifact by run and artifact (not the temporary
download folder), and a file holding a type a checkpoint may not by that type (never loaded)."""

from __future__ import annotations

import os

import pytest
import torch
from mlflow import MlflowClient

from tests.support.cli import one_error_line, run_cli
from vse_ray.tracking import resolve_tracking_uri
from vse_ray.tracking.runs import CHECKPOINT_ARTIFACT_DIR, get_or_create_experiment


class _Hostile:
    """Unpickling it would run a shell command."""

    def __reduce__(self):
        return (os.system, ("touch hacked",))


@pytest.fixture(autouse=True)
def _no_progress_bar(monkeypatch):
    monkeypatch.setenv(
        "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false"
    )  # the error is the output's first line


def _truncated(path):
    torch.save({"model": torch.zeros(1000)}, path)
    path.write_bytes(path.read_bytes()[:2000])


def _hostile(path):
    torch.save({"format": "vse_ray.checkpoint/1", "model": _Hostile()}, path)


def _logged_run(tmp_path, write) -> tuple[str, str]:
    out = tmp_path / "out"
    uri = resolve_tracking_uri(None, out)
    client = MlflowClient(uri)
    run_id = client.create_run(get_or_create_experiment("tiny", uri, out)).info.run_id
    (tmp_path / "ckpt").mkdir()
    write(tmp_path / "ckpt" / "model.pt")
    client.log_artifact(run_id, str(tmp_path / "ckpt" / "model.pt"), CHECKPOINT_ARTIFACT_DIR)
    return run_id, str(out)


def test_a_truncated_artifact_is_named_by_run_and_artifact(tmp_path):
    run_id, out = _logged_run(tmp_path, _truncated)
    line = one_error_line(
        run_cli(["evaluate", "--run", run_id, "--output-dir", out]),
        f"error: run {run_id}: artifact checkpoint/model.pt: expected a torch.save file, found a truncated",
    )
    assert "/tmp" not in line


def test_a_hostile_checkpoint_names_the_refused_type_and_is_not_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _hostile(tmp_path / "model.pt")
    result = run_cli(["evaluate", "--run", str(tmp_path / "model.pt"), "--output-dir", str(tmp_path / "out")])
    one_error_line(
        result,
        f"error: checkpoint {tmp_path / 'model.pt'}: holds the type posix.system, outside what a vse_ray "
        "checkpoint may hold (tensors, plain values); not loaded",
    )
    assert "weights_only" not in result.output and "truncated" not in result.output
    assert not (tmp_path / "hacked").exists()
    run_id, out = _logged_run(tmp_path, _hostile)
    one_error_line(
        run_cli(["evaluate", "--run", run_id, "--output-dir", out]),
        f"error: run {run_id}: artifact checkpoint/model.pt: holds the type posix.system",
    )
