"""A tracking server that stops answering during a training: the training goes on, its epochs wait.

Each epoch is handed to the run's record as it ends (:class:`LiveEpochs`). When the server stops answering,
one line says so and the training goes on: the epochs wait in memory (and in the checkpoints, which hold
every epoch's metrics) and are logged, each once, when the server answers again. A server still gone when
the training ends stops the command in one line (:class:`TrackingUnavailable`): the checkpoints are kept,
and the same command run again, the server back, resumes and completes the run's record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from vse_ray.tracking.lifecycle import server_silence

if TYPE_CHECKING:  # the CLI's error handler imports this module: no MLflow at start-up
    from vse_ray.tracking.recorder import RunRecorder


class TrackingUnavailable(RuntimeError):
    """The tracking server does not answer: one line, the run's checkpoints kept, a rerun completes it."""


def unavailable(uri: str, folder: object) -> TrackingUnavailable | None:
    """The error to stop a training with when the tracking server ``uri`` does not answer now (its
    checkpoints are in ``folder``), or None when it answers."""
    silence = server_silence(uri)
    if silence is None:
        return None
    return TrackingUnavailable(
        f"{silence}: the run's checkpoints are kept in {folder}; run the same command again when the "
        "server answers: it resumes and completes the run's record"
    )


class LiveEpochs:
    """``on_epoch`` of a training: logs each epoch to ``recorder`` as it ends; while the tracking server
    does not answer, keeps the epochs (one line the first time) and logs them once it answers again."""

    def __init__(self, recorder: RunRecorder, notify: Callable[[str], None] = print):
        self.recorder, self.notify = recorder, notify
        self.waiting: list[dict[str, Any]] = []
        self.lost: str | None = None  # why the server did not answer the last time

    def __call__(self, metrics: dict[str, Any]) -> None:
        self.waiting.append(metrics)
        uri = self.recorder.tracking_uri
        if self.lost is not None and server_silence(uri) is not None:
            return  # still gone: no request to wait on
        try:
            self.recorder.log_epochs(self.waiting)
        except Exception:
            silence = server_silence(uri)
            if silence is None:
                raise
            if self.lost is None:
                self.notify(
                    f"warning: epoch {metrics['epoch']}: {silence}; training goes on, its epochs are "
                    "logged when the server answers again"
                )
            self.lost = silence
            return
        if self.lost is not None:
            self.notify(f"tracking server {uri} answers again: {len(self.waiting)} epochs logged")
        self.waiting.clear()
        self.lost = None
