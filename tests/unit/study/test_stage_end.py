"""A study stage that Tune ended early reads as an interruption (resume hint), a failed trial as an error."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from vse_ray.study.context import check_stage
from vse_ray.tune.trial import NAMED_TRIAL_KEY


def _result(name, checkpoint="ckpt", error=None):
    return SimpleNamespace(config={NAMED_TRIAL_KEY: name}, checkpoint=checkpoint, error=error)


def test_a_stage_stopped_by_ctrl_c_is_an_interruption():
    check_stage([_result("a"), _result("b")], "warm-up")
    with pytest.raises(KeyboardInterrupt, match="warm-up: stopped before every trial had a checkpoint"):
        check_stage([_result("a"), _result("b", checkpoint=None)], "warm-up")
    with pytest.raises(RuntimeError, match="training: trial"):
        check_stage([_result("a", error=ValueError("x"))], "training")
