"""A study stage that Tune ended early reads as an interruption (resume hint), a failed trial as an error."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from vse_ray.study.context import check_stage
from vse_ray.tune.trial import NAMED_TRIAL_KEY


def _result(name, checkpoint="ckpt", error=None):
    return SimpleNamespace(config={NAMED_TRIAL_KEY: name}, checkpoint=checkpoint, error=error)


def test_a_stage_stopped_by_ctrl_c_is_an_interruption():
    ended = {"t0": "TERMINATED", "t1": "TERMINATED"}
    check_stage([_result("a"), _result("b")], "warm-up", ended, planned=2)
    with pytest.raises(KeyboardInterrupt, match="warm-up: stopped after 1 of 2 trials"):
        check_stage([_result("a"), _result("b", checkpoint=None)], "warm-up", {**ended, "t1": "RUNNING"}, 2)
    # stopped while its one trial had a checkpoint, before the second trial was created
    with pytest.raises(KeyboardInterrupt, match="warm-up: stopped after 0 of 2 trials"):
        check_stage([_result("a")], "warm-up", {"t0": "RUNNING"}, planned=2)
    with pytest.raises(RuntimeError, match="training: trial"):
        check_stage([_result("a", error=ValueError("x"))], "training", ended, planned=2)
