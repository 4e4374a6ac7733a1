"""The console's epoch lines: the collapse warning (VSE++'s loss at 2·B·margin means every similarity
ties), and each reported epoch printed, then handed on (to MLflow in `vse-ray train`)."""

from __future__ import annotations

import torch

from vse_ray.losses import make_loss
from vse_ray.train.epoch_text import epoch_lines


def test_collapse_value_is_the_loss_of_equal_similarities():
    loss = make_loss("vsepp", margin=0.2)
    assert loss.collapse_value(8) == 2 * 8 * 0.2
    assert float(loss.from_similarity(torch.zeros(8, 8, dtype=torch.float64))) == loss.collapse_value(8)
    assert not hasattr(make_loss("vse0"), "collapse_value")


def test_engine_flags_a_collapsed_epoch(tiny_cfg, tmp_path):
    from tests.support.local_reporter import LocalReporter
    from vse_ray.train.epoch_loop import run_training

    reporter = LocalReporter(tmp_path / "r")
    run_training(tiny_cfg.__class__(**{**tiny_cfg.__dict__, "epochs": 1, "lr": 1e-12}).checked(), reporter)
    assert reporter.history[0]["collapsed"] == 1.0  # no step moves the weights: it sits at the start


def test_progress_prints_one_warning_line():
    reported = {"epoch": 1, "rsum": 10.0, "train_loss": 51.2, "collapsed": 1.0, "lr": 2e-4}
    lines = epoch_lines(reported, 3, seconds=4.25)
    assert lines[0] == "epoch 1/3: val rsum 10.0, train loss 51.2000, 4.2 s" and len(lines) == 2
    assert "collapse value" in lines[1] and "--warmup-epochs" in lines[1]
    assert len(epoch_lines({**reported, "collapsed": 0.0}, 3, seconds=1.0)) == 1


def test_each_reported_epoch_is_printed_then_handed_on(ray_session):
    import io

    from vse_ray.train.epoch_lines import RunEpochLines

    out, handed = io.StringIO(), []
    lines = RunEpochLines(2, stream=out, on_epoch=lambda metrics: handed.append((out.getvalue(), metrics)))
    with lines:
        lines.queue.put({"epoch": 1, "rsum": 10.0, "train_loss": 1.5})
    assert out.getvalue().startswith("epoch 1/2: val rsum 10.0, train loss 1.5000")
    assert handed == [(out.getvalue(), {"epoch": 1, "rsum": 10.0, "train_loss": 1.5})]  # after its line
