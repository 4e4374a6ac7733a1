"""The Tune stage progress bar: its rate is epochs over the stage's elapsed time."""

from __future__ import annotations

import io
import pickle
import re
import time
from types import SimpleNamespace

from ray.tune.result import SHOULD_CHECKPOINT

from vse_ray.tune.stage_bar import StageEpochsBar, TrialEpochLines


def test_first_rate_counts_from_the_stage_start():
    progress = StageEpochsBar("[demo] train", total=4, plain=False)
    progress.setup()
    progress._bar.fp = io.StringIO()
    time.sleep(0.25)
    trial = SimpleNamespace(config={"run": "bcls-s0"}, trial_id="t0")
    for _ in range(2):  # two trials reporting within a millisecond
        progress.on_trial_result(0, [], trial, {"rsum": 12.5})
    text = str(progress._bar)
    rate = float(re.search(r"([\d.]+)epoch/s", text).group(1))
    assert rate < 10 and "2/4" in text and "bcls-s0 rsum 12.5" in text
    progress.on_experiment_end([])
    assert progress._bar is None


def test_off_a_terminal_each_epoch_is_a_line(capsys):
    progress = StageEpochsBar("[demo] train", total=4, plain=True)
    progress.setup()
    trial = SimpleNamespace(config={"run": "bcls-s0"}, trial_id="t0")
    progress.on_trial_result(0, [], trial, {"rsum": 12.5})
    progress.on_trial_result(0, [], trial, {})
    progress.on_experiment_end([])
    assert capsys.readouterr().out.splitlines() == [
        "[demo] train: 1/4 epochs, bcls-s0 rsum 12.5",
        "[demo] train: 2/4 epochs, bcls-s0",
    ]


def test_an_epoch_with_a_checkpoint_shows_once_tune_has_recorded_it(capsys):
    """A Ctrl-C between Tune's result and its recorded checkpoint retrains that epoch: it is not shown."""
    lines = TrialEpochLines("tiny", epochs=3)
    trial = SimpleNamespace(config={}, trial_id="t0")
    lines.on_trial_result(0, [], trial, {"epoch": 1, "rsum": 12.5, SHOULD_CHECKPOINT: True})
    assert capsys.readouterr().out == ""
    restored = pickle.loads(pickle.dumps(lines))  # what a resumed run starts from: nothing pending
    restored.on_checkpoint(0, [], trial, checkpoint=None)
    assert capsys.readouterr().out == ""
    lines.on_checkpoint(0, [], trial, checkpoint=None)
    lines.on_checkpoint(0, [], trial, checkpoint=None)  # once
    assert capsys.readouterr().out.splitlines() == ["[tiny] trial t0 epoch 1/3: val rsum 12.5"]
