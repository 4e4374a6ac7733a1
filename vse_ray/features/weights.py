"""The early check of a torchvision weights name: known to torchvision, and already in the local cache."""

from __future__ import annotations

from pathlib import Path

import torch

from vse_ray.features.cnn import CNN_NAMES


def check_weights(cnn: str, weights: str | None) -> None:
    """Early ValueError when ``weights`` is not a torchvision weights name of ``cnn`` (no download)."""
    if cnn not in CNN_NAMES:
        raise ValueError(f"cnn must be one of {CNN_NAMES}, got {cnn!r}")
    if weights is None:
        return
    if cnn == "small":
        raise ValueError("weights must be None for cnn='small' (it has no pretrained weights)")
    import torchvision  # here: importing it costs a second; a config that names no weights needs none of it

    enum = torchvision.models.get_model_weights(cnn)
    names = ["DEFAULT", *enum.__members__]
    if weights not in names:
        raise ValueError(f"weights {weights!r} is not one of {names} for cnn={cnn!r}")
    cached = Path(torch.hub.get_dir()) / "checkpoints" / Path(enum[weights].url).name
    if not cached.is_file():  # offline by default: torchvision would download them here
        raise ValueError(
            f"{cnn} weights {weights} are not in the torch cache ({cached}); put the file there (or set "
            f"TORCH_HOME to a folder whose hub/checkpoints/ holds it), fetch them once with "
            f"`python -c \"import torchvision; torchvision.models.{cnn}(weights='{weights}')\"`, "
            "or use weights none"
        )
