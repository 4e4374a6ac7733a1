"""A one-line console progress bar per Tune stage (epochs reported over epochs planned)."""

from __future__ import annotations

from typing import Any

from ray import tune
from tqdm import tqdm


class StageEpochsBar(tune.Callback):
    """Counts the epochs every trial reports; the bar's text names the last trial and its validation rsum.

    Args:
        label: Stage name shown at the left of the bar.
        total: Epochs planned over all trials of the stage.
    """

    def __init__(self, label: str, total: int):
        self.label, self.total = label, total
        self._bar: tqdm | None = None

    def __getstate__(self) -> dict[str, Any]:  # a restored run opens a new bar
        return {**self.__dict__, "_bar": None}

    def setup(
        self,
        stop: Any = None,
        num_samples: int | None = None,
        total_num_samples: int | None = None,
        **info: Any,
    ) -> None:
        """Open the bar when the stage starts, so its clock includes the first epoch."""
        self._ensure_bar()

    def _ensure_bar(self) -> tqdm:
        # smoothing=0: the rate is epochs over the stage's elapsed time; tqdm's default moving average of
        # the gaps between updates reads thousands of epochs/s when trials report within a millisecond.
        if self._bar is None:
            self._bar = tqdm(
                total=self.total, desc=self.label, unit="epoch", leave=True, dynamic_ncols=True, smoothing=0
            )
        return self._bar

    def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info: Any) -> None:
        bar = self._ensure_bar()
        bar.update(1)
        if "rsum" in result:
            bar.set_postfix_str(f"{trial.config.get('run', trial.trial_id)} rsum {result['rsum']:.1f}")

    def on_experiment_end(self, trials: list, **info: Any) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
