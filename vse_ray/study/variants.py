"""The study's training stage: every (train size, loss or control, seed) run from its seed's warm-up."""

from __future__ import annotations

import dataclasses

from vse_ray.study.context import StudyContext, TrainedRun, run_name
from vse_ray.study.summary import ROW_TAG, SEED_TAG, SIZE_TAG
from vse_ray.tracking.views import RUN_COLOR_TAG, run_color
from vse_ray.tune.trial import NAMED_TRIAL_KEY
from vse_ray.tune.tuner import record_trial


def train_variants(ctx: StudyContext, warmups: dict[tuple[int, int], str]) -> dict[str, TrainedRun]:
    """Every (train_images, variant, seed) from its seed's warm-up; run name -> what the run left."""
    spec = ctx.spec
    configs, rows = {}, {}
    colors = {variant.name: run_color(i) for i, variant in enumerate(spec.variants())}
    for size in spec.train_sizes():
        for variant in spec.variants():
            for seed in range(spec.seeds):
                warm = ctx.warmup_epochs[size]
                cfg = ctx.resolved(spec.run_config(ctx.data_dir, variant, seed, size, warm))
                if warm:
                    cfg = dataclasses.replace(cfg, init_checkpoint=warmups[(size, seed)])
                name = run_name(variant, seed, size)
                configs[name] = dataclasses.replace(cfg, run_name=name)
                rows[name] = variant.name
    run, results = ctx.fit_stage("train", "training", configs, len(configs) * spec.epochs)
    trained = {}
    for result in results:
        name = result.config[NAMED_TRIAL_KEY]
        cfg = configs[name]
        tags = {ROW_TAG: rows[name], SEED_TAG: str(cfg.seed), SIZE_TAG: str(cfg.train_images)}
        tags[RUN_COLOR_TAG] = colors[rows[name]]
        recorded = record_trial(run, result, tags)
        trained[name] = TrainedRun(rows[name], cfg.seed, cfg.train_images, *recorded)
    return trained
