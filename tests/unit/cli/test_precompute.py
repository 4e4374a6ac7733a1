"""`vse-ray precompute` parses its options and fails early, before Ray starts, on bad ones."""

from __future__ import annotations

import errno

import pytest
from typer.testing import CliRunner

from vse_ray.cli.main import app
from vse_ray.disk_full import is_disk_full


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dataset", "karpathy"], "needs karpathy_json and image_root"),
        (["--crop", "big"], "--crop 'big'"),
        (["--keep-images", "maybe"], "--keep-images 'maybe'"),
        (["--relevance", "sbert,bleu"], "unknown source 'bleu'"),
        (["--vocab", "missing.json"], "vocab missing.json: no such file"),
        (["--n-train", "0"], "n_train (--n-train) must be >= 1: the synthetic 'train' split is requested"),
        (["--n-val", "-1"], "n_val (--n-val) must be >= 1: the synthetic 'val' split is requested"),
        (["--no-restval"], "restval: False needs the karpathy dataset"),
        (
            ["--resize", "32", "--crop", "64"],
            "crop (--crop) 64 is larger than the resized side (--resize 32)",
        ),
    ],
)
def test_bad_options_fail_before_ray(tmp_path, args, message):
    result = CliRunner().invoke(app, ["precompute", "--out", str(tmp_path / "o"), *args])
    assert result.exit_code != 0
    assert message in str(result.exception) + result.output
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("resize", "crop"), [("auto", 224), (256, 224), (224, 224), (32, 32), (None, 224)])
def test_the_auto_crop_fits_the_resized_side(resize, crop):
    """`--resize 32` with the default `--crop auto` died inside Ray Data (a 224 crop of a 32 px image)."""
    from vse_ray.data.precompute.config import PrecomputeConfig

    config = PrecomputeConfig(dataset="karpathy", karpathy_json="k.json", image_root="i", resize=resize)
    assert config.resolved().crop == crop


def test_overwrite_refuses_a_folder_named_like_vse_ray_and_keeps_it(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.js").write_text("console.log(1)")
    (tmp_path / "manifest.json").write_text('{"name": "my web app"}')
    args = ["precompute", "--out", str(tmp_path), "--overwrite", "--n-train", "8", "--n-val", "4"]
    result = CliRunner().invoke(app, [*args, "--n-test", "4", "--cnn", "small", "--weights", "none"])
    assert result.exit_code == 2
    assert "holds no vse_ray precompute" in result.output
    assert (tmp_path / "src" / "app.js").is_file() and (tmp_path / "manifest.json").is_file()


class _WorkerError(Exception):
    """Stands for a Ray task error: the worker's exception travels as ``cause``."""

    def __init__(self, cause: BaseException):
        super().__init__("task failed")
        self.cause = cause


def test_a_full_disk_is_one_line_naming_the_file(tmp_path, monkeypatch):
    def full(*args, **kwargs):
        enospc = OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "o" / "features"))
        raise RuntimeError("Ray Data stage failed") from _WorkerError(enospc)

    monkeypatch.setattr("vse_ray.data.precompute.run.ensure_ray", lambda address: None)
    monkeypatch.setattr("vse_ray.data.precompute.run.run_image_stage", full)
    args = ["precompute", "--out", str(tmp_path / "o"), "--n-train", "8", "--n-val", "4", "--n-test", "4"]
    result = CliRunner().invoke(app, [*args, "--cnn", "small", "--weights", "none"])
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    folder = tmp_path / "o"
    assert lines[0] == f"Ray and MLflow logs: {folder.resolve() / 'logs' / 'vse_ray.log'}"  # once claimed
    assert (
        lines[1]
        == f"error: no space left on device writing {folder / 'features'}: free space and rerun: finished "
        "shards are kept"
    )
    assert len(lines) == 3


def test_other_errors_are_not_taken_for_a_full_disk():
    assert is_disk_full(RuntimeError("wrapped")) is False
    assert is_disk_full(_WorkerError(OSError(errno.ENOSPC, "full"))) is True
    assert is_disk_full(_WorkerError(OSError(errno.EACCES, "denied"))) is False
