"""The one run recorder: how `train`, a sweep trial, a study run, the demo and `evaluate` write an MLflow run.

Every run holds the same things under the same names:

- params (flat, logged once), tags;
- per epoch (step = epoch, each epoch once): the training keys and the headline validation metrics
  (:func:`vse_ray.tracking.metric_keys.epoch_metrics`);
- the selected snapshot: ``config.json``, ``metrics.json`` + ``metrics.csv`` (every validation metric of every
  epoch), the ``checkpoint/model.pt`` artifact that ``vse-ray evaluate --run`` loads, then ``val/best_rsum``
  and ``val/best_epoch``, last, so a run that has them has the rest;
- each evaluation: its headline metrics (``test/…``, ``test_scene/…``) and the full report as
  ``evaluation/<split>_<protocol>.json`` and ``.csv``.
"""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import mlflow
from mlflow import MlflowClient
from mlflow.entities import Metric, Param

from vse_ray.checkpoint_files import CHECKPOINT_FILE
from vse_ray.disk_full import disk_full_value_error, is_disk_full
from vse_ray.tracking import metric_keys
from vse_ray.tracking.runs import CHECKPOINT_ARTIFACT_DIR, get_or_create_run
from vse_ray.tracking.tags import STOP_TAG

_BATCH = 100  # MLflow's log_batch takes at most 1000 metrics and 100 params
METRICS_ARTIFACT = "metrics.json"  # the selected snapshot's metrics and every epoch's, every metric


def _client(tracking_uri: str | None) -> MlflowClient:
    return MlflowClient(tracking_uri or mlflow.get_tracking_uri())


def log_metrics(client: MlflowClient, run_id: str, metrics: Mapping[str, float], step: int = 0) -> None:
    """Log ``metrics`` at ``step`` in batches."""
    now = int(time.time() * 1000)
    rows = [Metric(k, float(v), now, step) for k, v in metrics.items()]
    for start in range(0, len(rows), _BATCH):
        client.log_batch(run_id, metrics=rows[start : start + _BATCH])


def log_params_flat(
    params: dict[str, Any], run_id: str | None = None, tracking_uri: str | None = None
) -> None:
    """Log scalar params (values as strings, ≤ 6000 chars) to `run_id`, or to the active run."""
    items = [Param(str(k), str(v)[:6000]) for k, v in params.items()]
    if run_id is None:
        mlflow.log_params({p.key: p.value for p in items})
        return
    client = _client(tracking_uri)
    for start in range(0, len(items), _BATCH):
        client.log_batch(run_id, params=items[start : start + _BATCH])


def logged_epochs(client: MlflowClient, run_id: str) -> set[int]:
    """Epochs already logged to the run (steps of its training-loss history)."""
    return {m.step for m in client.get_metric_history(run_id, metric_keys.EPOCH_KEYS["train_loss"])}


def log_epoch_metrics(
    history: Iterable[dict[str, Any]], run_id: str, tracking_uri: str | None = None, prefix: str = ""
) -> int:
    """Log each epoch's MLflow metrics with step = epoch, skipping epochs the run already has.

    Retried or resumed trainings re-send epochs; this keeps every epoch exactly once. Returns how many
    epochs were logged. ``prefix`` names a copy of another run's epoch (a sweep's best trial).
    """
    client = _client(tracking_uri)
    done = logged_epochs(client, run_id) if not prefix else set()
    count = 0
    for metrics in history:
        epoch = int(metrics["epoch"])
        if epoch in done:
            continue
        named = metric_keys.epoch_metrics(metrics)
        log_metrics(client, run_id, {f"{prefix}{k}": v for k, v in named.items()}, epoch)
        done.add(epoch)
        count += 1
    return count


def _table_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    """Rows of dicts as CSV, columns in first-seen order."""
    out = io.StringIO()
    columns = list(dict.fromkeys(k for r in rows for k in r))
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


class RunRecorder:
    """Writes one MLflow run (see the module doc); ``open`` finds the run again by its stable name."""

    def __init__(self, run_id: str, tracking_uri: str):
        self.run_id = run_id
        self.tracking_uri = tracking_uri
        self.client = MlflowClient(tracking_uri)

    @classmethod
    def open(
        cls,
        experiment_id: str,
        run_name: str,
        tracking_uri: str,
        params: Mapping[str, Any] | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> RunRecorder:
        """The run called ``run_name`` (created when missing) with ``tags`` set and ``params`` logged once."""
        recorder = cls(get_or_create_run(experiment_id, run_name, tracking_uri), tracking_uri)
        recorder.set_tags(tags or {})
        if params and not recorder.client.get_run(recorder.run_id).data.params:
            log_params_flat(dict(params), recorder.run_id, tracking_uri)
        return recorder

    def set_tags(self, tags: Mapping[str, str]) -> None:
        for tag, value in tags.items():
            self.client.set_tag(self.run_id, tag, value)

    def log_epochs(self, history: Iterable[dict[str, Any]]) -> int:
        """Each epoch of ``history`` once (see :func:`log_epoch_metrics`)."""
        return log_epoch_metrics(history, self.run_id, self.tracking_uri)

    def has_checkpoint(self) -> bool:
        """Whether :meth:`record_checkpoint` has completed on this run."""
        return metric_keys.BEST_RSUM in self.client.get_run(self.run_id).data.metrics

    def record_checkpoint(
        self,
        checkpoint_dir: str | Path,
        best: Mapping[str, Any],
        history: list[dict[str, Any]],
        config: Mapping[str, Any],
    ) -> None:
        """The selected snapshot (``best``: its epoch's metrics) and the run's validation history.

        A full disk is one line naming the artifact being written, whose partial copy is removed.
        """
        with self._writing("config.json"):
            self.client.log_dict(self.run_id, dict(config), "config.json")
        if config.get("deviations"):
            lines = "".join(f"- {d}\n" for d in config["deviations"])
            text = f"# Deviations from the official code\n\n{lines}"
            with self._writing("deviations.md"):
                self.client.log_text(self.run_id, text, "deviations.md")
        with self._writing(METRICS_ARTIFACT):
            self.client.log_dict(self.run_id, {"best": dict(best), "history": history}, METRICS_ARTIFACT)
        with self._writing("metrics.csv"):
            self.client.log_text(self.run_id, _table_csv(history), "metrics.csv")
        checkpoint = Path(checkpoint_dir) / CHECKPOINT_FILE
        with self._writing(f"{CHECKPOINT_ARTIFACT_DIR}/{CHECKPOINT_FILE}"):
            self.client.log_artifact(self.run_id, str(checkpoint), CHECKPOINT_ARTIFACT_DIR)
        summary = {metric_keys.BEST_RSUM: best["rsum"], metric_keys.BEST_EPOCH: best["epoch"]}
        log_metrics(self.client, self.run_id, summary)

    @contextmanager
    def _writing(self, artifact: str) -> Iterator[None]:
        """A full disk while the block writes ``artifact``: its partial copy in a local artifact store is
        removed, and the error names it."""
        try:
            yield
        except Exception as err:
            uri = urlparse(self.client.get_run(self.run_id).info.artifact_uri) if is_disk_full(err) else None
            if uri is None or uri.scheme != "file":
                raise
            partial = Path(unquote(uri.path)) / artifact
            partial.unlink(missing_ok=True)
            raise (disk_full_value_error(err, folder=partial) or err) from err

    def has_evaluation(self, split: str, protocol: str = "full") -> bool:
        """Whether an evaluation of ``split`` is recorded (its headline metrics are written last)."""
        rsum = metric_keys.mlflow_key("rsum", split, protocol)
        return rsum in self.client.get_run(self.run_id).data.metrics

    def record_evaluation(
        self,
        split: str,
        protocol: str,
        report: Mapping[str, Any],
        keys: Iterable[str] = metric_keys.HEADLINE,
    ) -> str:
        """An evaluation: the full ``report`` (``metrics``: every key) as JSON and CSV artifacts, then its
        ``keys`` as metrics (the headline; a study's test runs: `STUDY_KEYS`). Returns the artifact folder's
        file stem (``evaluation/<split>_<protocol>``)."""
        stem = f"evaluation/{split}_{protocol}"
        metrics = report["metrics"]
        self.client.log_dict(self.run_id, dict(report), f"{stem}.json")
        rows = [{"metric": k, "value": v} for k, v in sorted(metrics.items())]
        self.client.log_text(self.run_id, _table_csv(rows), f"{stem}.csv")
        log_metrics(self.client, self.run_id, metric_keys.headline(metrics, split, protocol, keys))
        return stem

    def finish(self, status: str = "FINISHED", reason: str | None = None) -> None:
        """End the run: ``status`` FINISHED, KILLED or FAILED, and why (tag ``vse_ray.stop_reason``)."""
        if reason is not None:
            self.client.set_tag(self.run_id, STOP_TAG, reason)
        self.client.set_terminated(self.run_id, status=status)
