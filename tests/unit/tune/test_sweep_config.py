"""SweepConfig checks and the `vse-ray sweep` option parsing (no Ray started)."""

from __future__ import annotations

import dataclasses

import pytest
from typer.testing import CliRunner

from vse_ray.cli.main import app
from vse_ray.resources import resource_dir
from vse_ray.tune.sweep_config import SweepConfig

SPACE = str(resource_dir("space") / "vsepp.yaml")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"space": "missing.yaml"}, "space 'missing.yaml': no such file or shipped space"),
        ({"data_dir": ""}, "data_dir: required"),
        ({"num_samples": 0}, "num_samples"),
        ({"reduction_factor": 1}, "reduction_factor: must be >= 2"),
        ({"max_concurrent": -1}, "max_concurrent"),
        ({"scheduler": "pbt"}, "scheduler: must be one of"),
        ({"trial_mode": "threads"}, "trial_mode: must be one of"),
        ({"gpus_per_trial": -0.5}, "gpus_per_trial"),
        ({"cpus_per_trial": 0}, "cpus_per_trial: must be > 0"),
        ({"train": {"loss": "sam"}}, r"train: set \['loss'\]"),
        ({"name": "../../x"}, "name: expected letters, digits, '-' or '_'"),
        ({"name": "a/b"}, "name: expected letters, digits"),
    ],
)
def test_invalid_fields_are_named(change, message):
    cfg = dataclasses.replace(SweepConfig(space=SPACE, data_dir="/data"), **change)
    with pytest.raises(ValueError, match=message):
        cfg.validate()


def test_default_name_is_dataset_and_space():
    assert SweepConfig(space=SPACE, data_dir="/data/coco_precomp").sweep_name() == "coco_precomp-vsepp"
    assert SweepConfig(space=SPACE, data_dir="/d", name="mine").sweep_name() == "mine"


def test_cli_rejects_malformed_set_and_config(tmp_path):
    runner = CliRunner()
    bad_set = runner.invoke(app, ["sweep", "--space", SPACE, "--data-dir", str(tmp_path), "--set", "lr"])
    assert bad_set.exit_code == 2 and "KEY=VALUE" in bad_set.output
    bad_cfg = runner.invoke(
        app, ["sweep", "--space", SPACE, "--data-dir", str(tmp_path), "--scheduler", "pbt"]
    )
    assert bad_cfg.exit_code == 2 and "scheduler" in bad_cfg.output


def test_existing_sweep_is_not_overwritten_without_resume(tmp_path):
    from vse_ray.tune.sweep import check_sweep

    cfg = SweepConfig(
        space=SPACE, data_dir=str(tmp_path / "d"), name="s", output_dir=str(tmp_path), resume=False
    )
    (tmp_path / "ray_results" / "s").mkdir(parents=True)
    (tmp_path / "ray_results" / "s" / "tuner.pkl").write_bytes(b"")  # what Tuner.can_restore looks for
    with pytest.raises(ValueError, match="sweep 's' already exists"):
        check_sweep(cfg)
    assert not (tmp_path / "mlflow.db").exists()  # refused before touching MLflow


def test_bad_space_fails_before_any_run(tmp_path):
    from vse_ray.tune.sweep import check_sweep

    space = tmp_path / "space.yaml"
    space.write_text("loss: lseh\nparams: {loss_params: {lambda: {uniform: [0, 1]}}}\n")
    with pytest.raises(ValueError, match="loss_params.lambda is not a parameter of loss 'lseh'"):
        check_sweep(SweepConfig(space=str(space), data_dir=str(tmp_path / "d"), output_dir=str(tmp_path)))
    assert not (tmp_path / "mlflow.db").exists()
