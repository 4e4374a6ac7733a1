"""`vse-ray pretrain-clip`: a CLIP checkpoint pretrained on the alt-text pool of rendered scenes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from vse_ray.config_fields import default_of
from vse_ray.train.pretrain_settings import PretrainSettings


def _d(name: str) -> Any:
    return default_of(PretrainSettings, name)


def pretrain_clip(
    out: Annotated[str, typer.Option(help="Output folder: the open_clip local-dir checkpoint and its pool.")],
    arch: Annotated[str, typer.Option(help="open_clip model config JSON (shipped name or path).")] = _d(
        "arch"
    ),
    pool_images: Annotated[int, typer.Option(help="Rendered scenes in the pool.")] = _d("pool_images"),
    pool_seed: Annotated[int, typer.Option(help="Seed of the pool's streams.")] = _d("pool_seed"),
    pool_captions: Annotated[int, typer.Option(help="Alt-text captions per pool image.")] = _d(
        "pool_captions"
    ),
    exclude_seed: Annotated[int, typer.Option(help="Seed of the embedded dataset kept out.")] = _d(
        "exclude_seed"
    ),
    exclude_images: Annotated[
        int, typer.Option(help="Its first N scenes are kept out of the pool (every split of up to N images).")
    ] = _d("exclude_images"),
    epochs: Annotated[int, typer.Option(help="Epochs over the pool.")] = _d("epochs"),
    batch_size: Annotated[int, typer.Option(help="Pairs per step.")] = _d("batch_size"),
    lr: Annotated[float, typer.Option(help="AdamW rate (cosine after the warm-up).")] = _d("lr"),
    weight_decay: Annotated[float, typer.Option(help="AdamW decoupled weight decay.")] = _d("weight_decay"),
    warmup_steps: Annotated[int, typer.Option(help="Linear warm-up steps.")] = _d("warmup_steps"),
    seed: Annotated[int, typer.Option(help="Seed of the towers, the order and the crops.")] = _d("seed"),
    threads: Annotated[int, typer.Option(help="torch threads (0: torch's default).")] = 0,
) -> None:
    """Pretrain CLIP towers with hard InfoNCE on rendered scenes with terse, noisy alt-text captions, kept
    apart from the embedded dataset's scenes, into an open_clip local-dir folder for
    `--set model_params.pretrained=OUT` (docs/clip.md). Rerun: the same settings reuse the checkpoint."""
    settings = PretrainSettings(
        arch=arch,
        pool_images=pool_images,
        pool_seed=pool_seed,
        pool_captions=pool_captions,
        exclude_seed=exclude_seed,
        exclude_images=exclude_images,
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        weight_decay=weight_decay,
        warmup_steps=warmup_steps,
        seed=seed,
    )
    settings.check()  # bad input: one line, nothing written
    import torch

    from vse_ray.train.clip_pretrain import pretrain_clip as run

    if threads:
        torch.set_num_threads(threads)
    run(Path(out).expanduser(), settings, log=typer.echo)
