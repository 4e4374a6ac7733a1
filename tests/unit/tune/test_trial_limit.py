"""TrialLimitStopper: interrupts the run (SIGUSR1, handled by Tune like Ctrl-C) after N finished trials."""

from __future__ import annotations

import pickle
import signal

import pytest

from vse_ray.tune.trial_limit import TrialLimitStopper


@pytest.fixture()
def interrupts():
    received: list[int] = []
    previous = signal.signal(signal.SIGUSR1, lambda sig, frame: received.append(sig))
    yield received
    signal.signal(signal.SIGUSR1, previous)


def test_interrupts_once_after_limit_trials_finish(tmp_path, interrupts):
    limit_file = tmp_path / "limit.json"
    TrialLimitStopper.write_limit(limit_file, 2)
    stopper = TrialLimitStopper(limit_file, epochs=3)
    assert stopper("a", {"epoch": 3}) is False
    stopper("b", {"epoch": 2})  # not its last epoch
    stopper("a", {"epoch": 3})  # the same trial again
    assert interrupts == []
    stopper("b", {"epoch": 3})
    assert interrupts == [signal.SIGUSR1]
    stopper("c", {"epoch": 3})
    assert interrupts == [signal.SIGUSR1] and not stopper.stop_all()  # never stops trials itself


def test_zero_or_missing_limit_never_interrupts(tmp_path, interrupts):
    stopper = TrialLimitStopper(tmp_path / "absent.json", epochs=1)
    stopper("a", {"epoch": 1})
    TrialLimitStopper.write_limit(tmp_path / "zero.json", 0)
    stopper = TrialLimitStopper(tmp_path / "zero.json", epochs=1)
    stopper("a", {"epoch": 1})
    assert interrupts == []


def test_restored_copy_reads_the_new_limit(tmp_path, interrupts):
    limit_file = tmp_path / "limit.json"
    TrialLimitStopper.write_limit(limit_file, 1)
    pickled = pickle.dumps(TrialLimitStopper(limit_file, epochs=1))  # as Tuner.__init__ stores it
    pickle.loads(pickled)("a", {"epoch": 1})
    assert interrupts == [signal.SIGUSR1]
    TrialLimitStopper.write_limit(limit_file, 0)  # the resumed run has no limit
    pickle.loads(pickled)("b", {"epoch": 1})
    assert interrupts == [signal.SIGUSR1]


def test_without_a_handler_it_only_warns(tmp_path, caplog):
    previous = signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    try:
        TrialLimitStopper.write_limit(tmp_path / "limit.json", 1)
        TrialLimitStopper(tmp_path / "limit.json", epochs=1)("a", {"epoch": 1})
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert "no SIGUSR1 handler" in caplog.text
