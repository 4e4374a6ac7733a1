"""The study's data stage: the precompute folder its runs train and are tested on."""

from __future__ import annotations

from pathlib import Path

from vse_ray.data.precompute.config import AUTO, PrecomputeConfig
from vse_ray.data.precompute.run import precompute
from vse_ray.data.store.readers import load_manifest
from vse_ray.study.spec import StudySpec


def prepare_data(spec: StudySpec, out: Path) -> str:
    """The precompute folder: the embedded dataset generated under `<out>/data`, or the spec's data_dir."""
    if spec.embedded is None:
        data_dir = str(Path(spec.data["data_dir"]).expanduser().resolve())
        load_manifest(data_dir)
        return data_dir
    sizes = spec.embedded
    finetune = bool(spec.train.get("finetune", False))
    config = PrecomputeConfig(
        dataset="synthetic",
        n_train=sizes["train_images"],
        n_val=sizes["val_images"],
        n_test=sizes["test_images"],
        seed=sizes["seed"],
        cnn="tiny" if finetune else AUTO,  # fine-tuning runs ignore the stored features
    )
    folder = out / "data"
    if not (folder / "manifest.json").is_file():
        precompute(config, str(folder), verbose=False)
    return str(folder)
