"""What a study checks before Ray starts, beyond its file (`StudySpec.validate`): the folder and weights it
names."""

from __future__ import annotations

from pathlib import Path

from vse_ray.data.store.readers import load_manifest
from vse_ray.losses import make_loss
from vse_ray.study.spec import StudySpec
from vse_ray.train.batches import check_train_columns
from vse_ray.train.preflight import check_model_files


def check_study_inputs(spec: StudySpec) -> None:
    """The model's weights (``train.model_params``) are there and fit it; a ``data.data_dir`` holds a
    finished precompute whose train captions carry the relevance every row trains on (the oracle control's
    scene vectors only the embedded data has). ValueError or FileNotFoundError in one line."""
    data_dir = None if spec.embedded is not None else str(Path(spec.data["data_dir"]).expanduser())
    variants = spec.variants()
    check_model_files(spec.run_config(data_dir or "<data_dir>", variants[0], 0, max(spec.train_sizes())))
    if data_dir is None:
        return
    load_manifest(data_dir)
    for variant in variants:
        check_train_columns(data_dir, make_loss(variant.loss, **variant.params).relevance_source)
