"""Pretraining of a CLIP model on the alt-text pool (:mod:`vse_ray.data.synthetic.pool`), written as an
open_clip ``local-dir:`` checkpoint that ``--model clip`` reads as any published one.

Hard InfoNCE (CLIP, Radford et al. 2021, Fig. 3; the project's ``infonce`` loss, its logit scale learned
from 1/0.07) on random towers of `arch`, one caption per image per epoch (drawn from the image's alt texts),
each image cropped as open_clip's train transform crops (:mod:`vse_ray.train.image_crop`), with the run's
step (`train_step`: AdamW with open_clip's weight-decay exclusion, a cosine schedule with a linear warm-up,
the gradient norm clipped). The pool is rendered once into ``pool/`` of the output folder (uint8 images in
one ``.npy``, the captions tokenised once), so an epoch reads memory: no decoding.

The output folder is named by nothing but holds its settings (``pretrain.json``): a rerun with the same
settings finds the checkpoint and trains nothing; other settings are refused (another folder).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vse_ray.data.synthetic.pool import build_pool
from vse_ray.losses import make_loss
from vse_ray.models.clip import ClipModel
from vse_ray.models.clip_files import LOCAL_DIR_CONFIG, shipped_arch
from vse_ray.models.clip_towers import OpenClipTowers
from vse_ray.train.batches import TrainBatch
from vse_ray.train.config import TrainConfig
from vse_ray.train.epoch_loop import train_step
from vse_ray.train.image_crop import random_resized_crops
from vse_ray.train.optim import build_optimizer
from vse_ray.train.pretrain_settings import PretrainSettings

SETTINGS_FILE = "pretrain.json"
WEIGHTS_FILE = "open_clip_model.safetensors"
POOL_FOLDER = "pool"


def arch_config(arch: str) -> dict[str, Any]:
    """The open_clip model config of `arch` (a shipped name or a JSON path)."""
    path = Path(shipped_arch(arch)).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"arch {arch}: no such config JSON (open_clip's format)")
    return dict(json.loads(path.read_text()))


def finished(out: Path, settings: PretrainSettings) -> bool:
    """Whether `out` holds this pretraining's checkpoint; ValueError when it holds another's."""
    path = out / SETTINGS_FILE
    if not path.is_file():
        return False
    held = json.loads(path.read_text())
    if held.get("key") != settings.key():
        differ = [k for k, v in settings.to_dict().items() if held.get("settings", {}).get(k) != v]
        raise ValueError(
            f"{path}: a checkpoint of other settings ({', '.join(differ)}); choose another --out"
        )
    return (out / WEIGHTS_FILE).is_file() and (out / LOCAL_DIR_CONFIG).is_file()


def load_pool(
    out: Path, settings: PretrainSettings, image_size: int, log: Callable[[str], None]
) -> tuple[np.ndarray, list[list[str]]]:
    """The pool's images and captions, rendered into `out/pool` on first use and read from there after."""
    folder = out / POOL_FOLDER
    pool_settings = {
        "images": settings.pool_images,
        "seed": settings.pool_seed,
        "captions": settings.pool_captions,
        "exclude_seed": settings.exclude_seed,
        "exclude_images": settings.exclude_images,
        "image_size": image_size,
    }
    manifest = folder / "pool.json"
    if manifest.is_file() and json.loads(manifest.read_text()).get("settings") == pool_settings:
        captions = json.loads((folder / "captions.json").read_text())
        return np.load(folder / "images.npy", mmap_mode="r"), captions
    start = time.monotonic()
    pool = build_pool(
        settings.pool_images,
        settings.pool_seed,
        image_size,
        settings.pool_captions,
        settings.exclude_seed,
        settings.exclude_images,
        progress=lambda done: log(f"pool: {done}/{settings.pool_images} images rendered"),
    )
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "images.npy", pool.images)
    np.save(folder / "ids.npy", pool.ids)
    (folder / "captions.json").write_text(json.dumps([list(c) for c in pool.captions]))
    manifest.write_text(json.dumps({"settings": pool_settings}, indent=1))
    log(f"pool: {settings.pool_images} images in {time.monotonic() - start:.0f} s → {folder}")
    return pool.images, [list(c) for c in pool.captions]


def epoch_batches(
    images: np.ndarray, ids: torch.Tensor, settings: PretrainSettings, epoch: int
) -> Iterator[TrainBatch]:
    """Epoch `epoch`'s batches: the pool shuffled, one of each image's alt texts drawn (`ids`: (n, captions,
    context) tokens), each image cropped by its own box (the last partial batch dropped)."""
    order = np.random.default_rng([settings.seed, epoch]).permutation(len(images))
    pick = np.random.default_rng([settings.seed, epoch, 1]).integers(settings.pool_captions, size=len(images))
    crop_seed = np.random.SeedSequence([settings.seed, epoch, 2]).generate_state(1, dtype=np.uint64)[0]
    crops = torch.Generator().manual_seed(int(crop_seed))
    for step in range(len(images) // settings.batch_size):
        rows = np.sort(order[step * settings.batch_size : (step + 1) * settings.batch_size])
        batch_images = random_resized_crops(torch.from_numpy(images[rows]), settings.crop_scale, crops)
        tokens = ids[torch.from_numpy(rows), torch.from_numpy(pick[rows])]
        yield TrainBatch(batch_images, tokens, (tokens != 0).sum(1), torch.from_numpy(rows), None)


def caption_tokens(model: ClipModel, captions: list[list[str]]) -> torch.Tensor:
    """(n, captions, context) token ids of the pool's alt texts, tokenised once."""
    return torch.from_numpy(np.stack([np.stack(model.caption_ids([], row)) for row in captions]))


def optimizer_config(settings: PretrainSettings) -> TrainConfig:
    """The run settings `train_step` and `build_optimizer` read for this pretraining."""
    return TrainConfig(
        model="clip",
        loss="infonce",
        optimizer="adamw",
        lr=settings.lr,
        weight_decay=settings.weight_decay,
        weight_decay_exclude=True,
        lr_schedule="cosine",
        lr_warmup_steps=settings.warmup_steps,
        epochs=settings.epochs,
        batch_size=settings.batch_size,
        seed=settings.seed,
    )


def pretrain_clip(
    out: Path, settings: PretrainSettings, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Pretrain (module docstring) into `out`, or find it done there; returns ``pretrain.json``'s content."""
    settings.check()
    arch = arch_config(settings.arch)
    if finished(out, settings):
        log(f"pretrain-clip: {out} holds this checkpoint already (settings {settings.key()})")
        return dict(json.loads((out / SETTINGS_FILE).read_text()))
    out.mkdir(parents=True, exist_ok=True)
    image_size = int(arch["vision_cfg"]["image_size"])
    wall, cpu, load = time.monotonic(), time.process_time(), os.getloadavg()[0]
    images, captions = load_pool(out, settings, image_size, log)
    pool_seconds = time.monotonic() - wall

    torch.manual_seed(settings.seed)
    model = ClipModel(arch=shipped_arch(settings.arch))
    ids = caption_tokens(model, captions)
    loss_fn = make_loss("infonce", targets="hard")
    loss_fn.start_from(model.learned_logits)
    cfg = optimizer_config(settings)
    steps_per_epoch = len(images) // settings.batch_size
    optimizer, scheduler = build_optimizer(cfg, model, loss_fn, steps_per_epoch)
    total, done, losses = settings.epochs * steps_per_epoch, 0, []
    started = time.monotonic()
    model.train()
    for epoch in range(1, settings.epochs + 1):
        epoch_losses = []
        for step, batch in enumerate(epoch_batches(images, ids, settings, epoch)):
            loss = train_step(model, loss_fn, optimizer, batch, cfg.grad_clip)
            if not torch.isfinite(loss):
                raise FloatingPointError(
                    f"pretrain-clip: loss {loss.item()} at epoch {epoch}, step {step + 1}"
                )
            scheduler.step()
            epoch_losses.append(float(loss))
            done += 1
            if done % 10 == 0 or done == total:
                per_step = (time.monotonic() - started) / done
                log(
                    f"pretrain-clip: epoch {epoch}/{settings.epochs} step {step + 1}/{steps_per_epoch} "
                    f"loss {np.mean(epoch_losses[-10:]):.3f}, {per_step:.1f} s/step, "
                    f"{per_step * (total - done) / 60:.0f} min left (load {os.getloadavg()[0]:.1f})"
                )
        losses.append(float(np.mean(epoch_losses)))
    summary: dict[str, Any] = {
        "key": settings.key(),
        "settings": settings.to_dict(),
        "epoch_loss": losses,
        "steps": total,
        "logit_scale": float(loss_fn.logit_scale.detach()),
        "wall_s": round(time.monotonic() - wall, 1),
        "pool_s": round(pool_seconds, 1),
        "cpu_s": round(time.process_time() - cpu, 1),
        "threads": torch.get_num_threads(),
        "load_average": [round(load, 2), round(os.getloadavg()[0], 2)],
    }
    write_checkpoint(out, model, loss_fn.logit_scale, arch)
    (out / SETTINGS_FILE).write_text(json.dumps(summary, indent=1))
    log(
        f"pretrain-clip: {total} steps in {summary['wall_s'] / 60:.1f} min "
        f"(CPU {summary['cpu_s'] / 60:.1f} min, "
        f"load {summary['load_average'][0]}→{summary['load_average'][1]}) → {out}"
    )
    return summary


def write_checkpoint(out: Path, model: ClipModel, logit_scale: torch.Tensor, arch: dict[str, Any]) -> None:
    """`out` as an open_clip local-dir folder: the config (model and preprocessing) and the weights, with
    the logit scale the loss learned in the model's own ``logit_scale``."""
    from safetensors.torch import save_file

    towers = model.towers
    assert isinstance(towers, OpenClipTowers)  # built from an open_clip config JSON
    inner: Any = towers.model
    with torch.no_grad():
        inner.logit_scale.copy_(logit_scale.detach())
    state = {name: tensor.detach().contiguous() for name, tensor in inner.state_dict().items()}
    save_file(state, str(out / WEIGHTS_FILE))
    preprocess = dict(inner.visual.preprocess_cfg)
    config = {"model_cfg": arch, "preprocess_cfg": preprocess}
    (out / LOCAL_DIR_CONFIG).write_text(json.dumps(config, indent=1))
