"""The study's warm-up stage: one shared warm-up run per (train size, seed) that every loss starts from."""

from __future__ import annotations

import dataclasses
from typing import Any

from vse_ray.data.store.readers import load_captions
from vse_ray.study.context import StudyContext, run_name
from vse_ray.study.spec import StudySpec, Variant
from vse_ray.train.train_captions import first_images
from vse_ray.tune.trial import NAMED_TRIAL_KEY


def train_warmups(ctx: StudyContext) -> dict[tuple[int, int], str]:
    """One shared warm-up (`warmup_loss`) per (train_images, seed); returns its last checkpoint folder."""
    spec = ctx.spec
    baseline = spec.variants()[0]
    configs = {}
    for size, epochs in ctx.warmup_epochs.items():
        for seed in range(spec.seeds):
            cfg = spec.run_config(ctx.data_dir, baseline, seed, size, epochs)
            warm = dataclasses.replace(
                cfg, loss=cfg.warmup_loss, loss_params=dict(cfg.warmup_params), epochs=epochs
            )
            configs[run_name(Variant("warmup", {}), seed, size)] = ctx.resolved(warm)
    epochs = sum(cfg.epochs for cfg in configs.values())
    cpus = warmup_cpus(spec.resources, len(configs))
    _, results = ctx.fit_stage("warmup", "warm-up", configs, epochs, cpus=cpus)
    found = {}
    for result in results:
        cfg = configs[result.config[NAMED_TRIAL_KEY]]
        found[(cfg.train_images, cfg.seed)] = result.checkpoint.path
    return found


def warmup_schedule(spec: StudySpec, data_dir: str) -> dict[int, int]:
    """Warm-up epochs per train size (`StudySpec.warmup_epochs_at` of its number of train captions)."""
    if not spec.warmup_steps:
        return {size: spec.warmup_epochs for size in spec.train_sizes()}
    table = load_captions(data_dir, "train", ["image_id"])
    return {size: spec.warmup_epochs_at(first_images(table, size).num_rows) for size in spec.train_sizes()}


def warmup_cpus(resources: dict[str, Any], n_warmups: int) -> float:
    """CPUs of each warm-up trial: its share of the CPUs when there are fewer warm-ups than trial slots.

    The warm-ups (one per seed) run before anything else, so with one seed on a 2-CPU machine a 1-CPU
    warm-up would leave a CPU idle; a trial's CPUs are its torch threads. Capped at the largest node's CPUs
    (a trial runs on one node); GPU trials keep their ``cpus_per_trial``.
    """
    import ray

    per_trial = float(resources.get("cpus_per_trial", 1))
    if float(resources.get("gpus_per_trial", 0)) > 0:
        return per_trial
    node_cpus = max(float(node["Resources"].get("CPU", 0)) for node in ray.nodes() if node["Alive"])
    share = float(int(float(ray.cluster_resources().get("CPU", 0)) // max(n_warmups, 1)))
    return max(per_trial, min(share, node_cpus))
