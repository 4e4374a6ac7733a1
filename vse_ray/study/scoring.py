"""The study's test stage: each run's selected snapshot scored on the test split, recorded on its run."""

from __future__ import annotations

import functools

from vse_ray.checkpoint_files import load_checkpoint
from vse_ray.data.store.split_data import load_split
from vse_ray.evaluation.evaluate import score_checkpoint
from vse_ray.metrics.registry import STUDY_KEYS
from vse_ray.study.context import StudyContext, TrainedRun
from vse_ray.tracking import metric_keys as keys
from vse_ray.tracking.recorder import RunRecorder


def score_on_test(ctx: StudyContext, trained: dict[str, TrainedRun]) -> dict[str, dict[str, float]]:
    """Score each run's selected (best validation rsum) snapshot on the test split and record the evaluation
    on its run (`test/...` metrics: `STUDY_KEYS`, the full report as artifacts); run name -> those metrics
    (evaluation keys: ``rsum``, ``CS_at_100_i2t_scene``, ``tau_i2t_scene``, ...), what the summary tables.

    A run that already has it (a resumed study: its trials had all ended before) is not scored again: its
    metrics are those the earlier command recorded. The split is loaded once per feature layout (raw pixels
    or features) and shared by the runs."""
    load = functools.cache(functools.partial(load_split, ctx.data_dir, keys.TEST))
    tested = {}
    for name, item in trained.items():
        recorder = RunRecorder(item.run_id, ctx.tracking_uri)
        if recorder.has_evaluation(keys.TEST):
            tested[name] = keys.of_split(recorder.client.get_run(item.run_id).data.metrics, keys.TEST)
            continue
        with item.checkpoint.as_directory() as folder:
            state = load_checkpoint(folder)
        _, _, metrics = score_checkpoint(state, load)
        report = {"run_id": recorder.run_id, "split": keys.TEST, "protocol": "full", "metrics": metrics}
        recorder.record_evaluation(keys.TEST, "full", report, STUDY_KEYS)
        tested[name] = keys.of_split(keys.headline(metrics, keys.TEST, keys=STUDY_KEYS), keys.TEST)
    return tested
