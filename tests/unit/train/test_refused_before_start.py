"""A train that cannot run is refused in one line before MLflow or Ray start, and leaves nothing behind: no
store, no run, no recorded config that a corrected rerun would be refused by."""

from __future__ import annotations

import pytest

from tests.support.cli import one_error_line, run_cli
from vse_ray.train.config import TrainConfig
from vse_ray.train.rerun import claim_run, plan_run, record_path


def _train(data, out, *args: str) -> list[str]:
    return ["train", "--data", str(data), "--output-dir", str(out), "--epochs", "1", *args]


def _nothing_started(out) -> None:
    assert not (out / "mlflow.db").exists() and not (out / "ray_results").exists(), sorted(out.rglob("*"))


def test_clip_on_a_folder_without_images_names_the_image_tower(tiny_region_dir, tmp_path):
    out = tmp_path / "out"
    result = run_cli(_train(tiny_region_dir, out, "--model", "clip"))
    line = one_error_line(
        result, f"{tiny_region_dir / 'features' / 'split=train'}: no stored images", "model 'clip'"
    )
    assert "--keep-images yes" in line and "CNN" not in line
    _nothing_started(out)


def test_a_batch_larger_than_the_train_split_is_refused(tiny_data_dir, tmp_path):
    out = tmp_path / "out"
    result = run_cli(_train(tiny_data_dir, out, "--batch-size", "481", "--num-workers", "0"))
    one_error_line(result, "batch_size 481 exceeds the 480 train captions of")
    _nothing_started(out)
    result = run_cli(_train(tiny_data_dir, out, "--batch-size", "241", "--num-workers", "2"))
    one_error_line(result, "exceeds the 240 train captions", "each of 2 workers")
    _nothing_started(out)


def test_a_tracking_scheme_mlflow_cannot_open_is_refused_and_not_recorded(tiny_data_dir, tmp_path):
    out = tmp_path / "out"
    result = run_cli(_train(tiny_data_dir, out, "--tracking-uri", "ftp://u:secret@host/x"))
    line = one_error_line(result, "tracking URI ftp://host/x: MLflow has no store for ftp://")
    assert "secret" not in result.output and "u:" not in line
    _nothing_started(out)


def test_a_start_that_fails_records_no_config(tmp_path):
    cfg = TrainConfig(data_dir=str(tmp_path / "coco"), output_dir=str(tmp_path / "o")).checked().config

    def ray_fails() -> None:
        raise RuntimeError("Ray did not start")

    with pytest.raises(RuntimeError, match="Ray did not start"):
        claim_run(cfg, notify=lambda line: None, beside=ray_fails)
    assert not record_path(cfg.resolved()).exists()
    plan_run(TrainConfig(data_dir=str(tmp_path / "coco"), output_dir=str(tmp_path / "o"), lr=1e-3))


def test_another_num_workers_is_not_offered_a_resume_that_refuses(tmp_path):
    def cfg(**change) -> TrainConfig:
        return TrainConfig(data_dir=str(tmp_path / "coco"), output_dir=str(tmp_path / "o"), **change)

    plan_run(cfg())
    with pytest.raises(ValueError) as refused:
        plan_run(cfg(num_workers=2))
    assert "num_workers cannot change on resume: pass --new-run" in str(refused.value)
    assert "pass --resume" not in str(refused.value)
    with pytest.raises(ValueError, match="cannot continue with another num_workers"):
        plan_run(cfg(num_workers=2), resume=True)  # what the advice no longer offers
    with pytest.raises(ValueError, match=r"pass --resume to continue it"):
        plan_run(cfg(epochs=40))  # a safe change: --resume is offered, and works
    assert plan_run(cfg(epochs=40), resume=True).epochs == 40
