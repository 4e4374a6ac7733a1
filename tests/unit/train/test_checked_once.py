"""A training is checked once, between the command line and its first step."""

from __future__ import annotations

from collections import Counter

import pytest
from typer.testing import CliRunner

from tests.support.local_reporter import LocalReporter
from tests.support.no_epoch_lines import NoEpochLines
from vse_ray.cli.main import app
from vse_ray.train import preflight
from vse_ray.train.config import CheckedConfig, TrainConfig
from vse_ray.train.epoch_loop import run_training


class _Stop(Exception):
    """Raised where Ray Train would start: the test ends there."""


class _FakeTrainer:
    """Stands in for TorchTrainer: keeps the config the workers would receive."""

    seen: dict = {}

    def __init__(self, loop, train_loop_config, **_):
        _FakeTrainer.seen = train_loop_config

    def fit(self):
        raise _Stop


@pytest.fixture()
def counted(monkeypatch) -> Counter:
    calls: Counter = Counter()
    validate, verify = TrainConfig.validate, preflight.verify_data_dir

    def counting_validate(self):
        calls["validate"] += 1
        return validate(self)

    def counting_verify(*args, **kwargs):
        calls["verify_data_dir"] += 1
        return verify(*args, **kwargs)

    monkeypatch.setattr(TrainConfig, "validate", counting_validate)
    monkeypatch.setattr(preflight, "verify_data_dir", counting_verify)
    return calls


def test_cli_to_first_step_validates_once(counted, monkeypatch, tiny_data_dir, tmp_path):
    monkeypatch.setattr("ray.train.torch.TorchTrainer", _FakeTrainer)  # imported where it is used
    monkeypatch.setattr("vse_ray.train.epoch_lines.RunEpochLines", NoEpochLines)
    monkeypatch.setattr("vse_ray.ray_session.ensure_ray", lambda address=None: None)
    args = ["train", "--data", str(tiny_data_dir), "--output-dir", str(tmp_path), "--epochs", "1"]
    args += ["--batch-size", "16", "--word-dim", "16", "--embed-dim", "32", "--set", "cs_ks=[5, 10]"]
    args += ["--num-workers", "1"]  # on Ray Train: the workers receive the config
    result = CliRunner().invoke(app, [*args, "--set", "ncs_ks=[1, 5]"])
    assert isinstance(result.exception, _Stop), result.output
    assert counted == {"validate": 1, "verify_data_dir": 1}
    # a worker trusts the config the driver checked
    reporter = LocalReporter(tmp_path / "worker")
    run_training(CheckedConfig.from_dict(_FakeTrainer.seen["cfg"]), reporter)
    assert [m["epoch"] for m in reporter.history] == [1]
    assert counted == {"validate": 1, "verify_data_dir": 1}


def test_the_engine_takes_a_config_checked_once_where_it_was_made(counted, tiny_cfg, tmp_path):
    with pytest.raises(ValueError, match="epochs: must be a positive integer"):
        TrainConfig(**{**tiny_cfg.__dict__, "epochs": 0}).checked()
    run_training(TrainConfig(**{**tiny_cfg.__dict__, "epochs": 1}).checked(), LocalReporter(tmp_path))
    assert counted["validate"] == 2  # one check per config made, none in the engine


def test_checked_copies_and_renaming_keeps_it_checked(counted, tiny_cfg):
    checked = tiny_cfg.checked()
    tiny_cfg.epochs = 0  # the checked value is a copy
    assert checked.config.epochs == 3 and checked.renamed("other").config.run_name == "other"
    assert CheckedConfig.from_dict(checked.to_dict()) == checked and counted["validate"] == 1
