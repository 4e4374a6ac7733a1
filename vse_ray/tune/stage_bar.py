"""Console progress of Tune runs, from Tune's result stream: a bar per study stage, a line per sweep epoch."""

from __future__ import annotations

import sys
from typing import Any

from ray import tune
from ray.tune.result import SHOULD_CHECKPOINT
from tqdm import tqdm

from vse_ray.train.epoch_text import epoch_summary


class SavedResults(tune.Callback):
    """Hands each trial result to :meth:`on_saved_result` once Tune has recorded its checkpoint, so that an
    epoch shown on the console is one a resumed run continues after.

    Tune calls ``on_trial_result`` first, then asks the trial for the checkpoint in a second round trip and
    records it (``on_checkpoint``). A Ctrl-C between the two saves the experiment state without that
    checkpoint, and the rerun trains that epoch again. A result without a checkpoint is handed on at once.
    """

    def __init__(self) -> None:
        self._pending: dict[str, dict] = {}  # trial id -> its result waiting for its checkpoint

    def __getstate__(self) -> dict[str, Any]:  # a restored run waits for nothing of the first
        return {**self.__dict__, "_pending": {}}

    def on_saved_result(self, trial: Any, result: dict) -> None:
        """One result of ``trial``, its checkpoint (if it has one) recorded by Tune."""
        raise NotImplementedError

    def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info: Any) -> None:
        if result.get(SHOULD_CHECKPOINT):
            self._pending[trial.trial_id] = result
        else:
            self.on_saved_result(trial, result)

    def on_checkpoint(self, iteration: int, trials: list, trial: Any, checkpoint: Any, **info: Any) -> None:
        result = self._pending.pop(trial.trial_id, None)
        if result is not None:
            self.on_saved_result(trial, result)


class StageEpochsBar(SavedResults):
    """Counts the epochs every trial reports; the bar's text names the last trial and its validation rsum.

    On a console that is not a terminal (a pipe, a file) a redrawn bar would arrive as a stream of frames:
    there each epoch is a plain line instead, ``[demo] train: 3/8 epochs, bcls-s0 rsum 301.2``.

    Args:
        label: Stage name shown at the left of the bar.
        total: Epochs planned over all trials of the stage.
        plain: Lines instead of a bar (default: when stderr is not a terminal).
    """

    def __init__(self, label: str, total: int, plain: bool | None = None):
        super().__init__()
        self.label, self.total, self.plain = label, total, plain
        self._lines = bool(plain)
        self._bar: tqdm | None = None
        self._done = 0

    def __getstate__(self) -> dict[str, Any]:  # a restored run opens a new bar
        return {**super().__getstate__(), "_bar": None, "_done": 0}

    def setup(
        self,
        stop: Any = None,
        num_samples: int | None = None,
        total_num_samples: int | None = None,
        **info: Any,
    ) -> None:
        """Open the bar when the stage starts (its clock includes the first epoch), or choose lines: each
        run decides for its own console (a restored run unpickles the callback of the first)."""
        self._lines = not sys.stderr.isatty() if self.plain is None else self.plain
        if not self._lines:
            self._ensure_bar()

    def _ensure_bar(self) -> tqdm:
        # smoothing=0: the rate is epochs over the stage's elapsed time; tqdm's default moving average of
        # the gaps between updates reads thousands of epochs/s when trials report within a millisecond.
        if self._bar is None:
            self._bar = tqdm(
                total=self.total, desc=self.label, unit="epoch", leave=True, dynamic_ncols=True, smoothing=0
            )
        return self._bar

    def on_saved_result(self, trial: Any, result: dict) -> None:
        name = trial.config.get("run", trial.trial_id)
        rsum = f"{name} rsum {result['rsum']:.1f}" if "rsum" in result else name
        if self._lines:
            self._done += 1
            print(f"{self.label}: {self._done}/{self.total} epochs, {rsum}", flush=True)
            return
        bar = self._ensure_bar()
        bar.update(1)
        bar.set_postfix_str(rsum)

    def on_experiment_end(self, trials: list, **info: Any) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class TrialEpochLines(SavedResults):
    """One console line per epoch a trial reports, taken from Tune's result stream once its checkpoint is
    recorded (nothing is read back from MLflow):
    ``[sweep] trial 9fbc6_00000 epoch 2/3: val rsum 419.0, train loss 6.7158``; and one line per failed trial
    naming its error file.

    Args:
        label: Shown in brackets at the start of each line (the sweep's name).
        epochs: A trial's planned epochs.
    """

    def __init__(self, label: str, epochs: int):
        super().__init__()
        self.label, self.epochs = label, epochs

    def on_saved_result(self, trial: Any, result: dict) -> None:
        if "epoch" not in result:
            return
        head = f"[{self.label}] trial {trial.trial_id} epoch {result['epoch']}/{self.epochs}"
        print(f"{head}: {epoch_summary(result)}", flush=True)

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        print(
            f"[{self.label}] trial {trial.trial_id} failed: its traceback is in {trial.error_file}",
            flush=True,
        )
