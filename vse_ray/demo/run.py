"""`vse-ray demo`: the study protocol at laptop scale on the embedded dataset (`studies/demo.yaml`).

One shared sum-of-hinges warm-up per seed, then every loss family for its own epochs from that checkpoint,
plus the shuffled-relevance control of a graded loss, each selected on validation rsum and scored on test
(`vse_ray.study.run_study`, through the one Tune driver).
"""

from __future__ import annotations

from typing import Any

from vse_ray.demo.evidence import EVIDENCE_LINE
from vse_ray.metrics.chance import chance_levels
from vse_ray.resources import load_yaml
from vse_ray.study.context import StudyResult
from vse_ray.study.run import run_study
from vse_ray.study.spec import StudySpec, study_from_yaml

DEMO_STUDY = "demo"
# Where each `vse-ray demo` option sits in the study file (`lr_update` N sets lr_milestones [N]).
OPTION_KEYS: dict[str, tuple[str, ...]] = {
    "seeds": ("seeds",),
    "train_images": ("data", "embedded", "train_images"),
    "val_images": ("data", "embedded", "val_images"),
    "test_images": ("data", "embedded", "test_images"),
    "seed": ("data", "embedded", "seed"),
    "epochs": ("epochs",),
    "warmup_epochs": ("warmup_epochs",),
    "lr": ("train", "lr"),
    "lr_update": ("train", "lr_milestones"),
    "batch_size": ("train", "batch_size"),
    "cnn": ("train", "cnn"),
    "embed_dim": ("train", "embed_dim"),
    "word_dim": ("train", "word_dim"),
    "finetune": ("train", "finetune"),
    "concurrent": ("resources", "concurrent"),
}


def demo_study(
    losses: list[str] | None = None, shuffled: list[str] | None = None, **options: Any
) -> StudySpec:
    """The demo study with `vse-ray demo`'s options applied (None keeps the file's value), validated once:
    ``losses`` selects families (with the file's hyper-parameters), ``shuffled`` their controls."""
    found, raw = load_yaml("study", DEMO_STUDY)
    for name, value in options.items():
        if value is None:
            continue
        *parents, key = OPTION_KEYS[name]
        node = raw
        for parent in parents:
            node = node.setdefault(parent, {})
        node[key] = [value] if name == "lr_update" else value
    if losses is not None:
        raw["losses"] = {name: raw["losses"].get(name, {}) for name in losses}
    controls = raw.setdefault("controls", {})
    if shuffled is not None:
        controls["shuffled"] = shuffled
    controls["shuffled"] = [name for name in controls.get("shuffled", []) if name in raw["losses"]]
    return study_from_yaml(raw, f"{found} (with the vse-ray demo options)")


def run_demo(spec: StudySpec, output_dir: str, num_cpus: int = 2, wait: bool = False) -> StudyResult:
    """Run the demo study (checked by `demo_study` before Ray starts) on a local Ray of ``num_cpus`` CPUs
    and print its table and where to look; ``wait`` queues behind another command running it in the same
    output folder."""
    if num_cpus < 1:
        raise ValueError(f"num_cpus: must be >= 1, got {num_cpus}")
    ray_options = {"num_cpus": num_cpus, "include_dashboard": False, "object_store_memory": 400 * 1024**2}
    result = run_study(spec, output_dir, ray_options=ray_options, wait=wait, table_end=EVIDENCE_LINE)
    n_test = (spec.embedded or {})["test_images"]
    chance = chance_levels(n_test, 5 * n_test)
    print(f"Chance level (test, {n_test} images): rsum {chance['rsum']:.1f}")
    return result
