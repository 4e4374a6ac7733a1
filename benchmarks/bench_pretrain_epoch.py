"""`vse-ray pretrain-clip`'s epoch against the same epoch written plainly, as open_clip's training reads
files: images per second of each, and the ratio vse_ray / plain (target ≥ 1.0: no slower).

Both run the same towers (`clip-small.json` unless ``--arch``), batch, optimiser and loss from the same
weights, on the same pool images (rendered by the pool generator, ``--images`` of them):

- vse_ray: :func:`~vse_ray.train.clip_pretrain.epoch_batches` (uint8 images read from memory, each cropped
  by its own box in the batch, alt texts tokenised once before the epoch) and ``train_step`` (AdamW with
  open_clip's weight-decay exclusion, the gradient norm clipped);
- plain: a ``torch.utils.data`` dataset over the pool's images as PNG files held in memory, each decoded
  with PIL and put through open_clip's train transform (``image_transform(is_train=True)``: random resized
  crop, scale (0.9, 1), bicubic; to tensor; normalise), its caption tokenised by open_clip's tokenizer in
  the batch, a ``DataLoader`` (shuffled, ``--loader-workers``), then open_clip's step as
  ``bench_clip_step.py`` writes it (``model(images, texts)`` → ``ClipLoss``, backward, ``clip_grad_norm_``,
  ``optimizer.step()``, the logit scale clamped).

Steps alternate (one of each, ``--steps`` of each after one untimed step), each timed whole: reading the
batch and the step; the time to read a batch is reported apart. With one thread and no loader workers the
clock is this process's CPU time, which other jobs on a shared machine do not inflate.

    python benchmarks/bench_pretrain_epoch.py                  # 1,024 images, B = 128, 6 steps each
    python benchmarks/bench_pretrain_epoch.py --loader-workers 2 --threads 0
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_clip_step import CLIP_NORM, open_clip_adamw, open_clip_step  # noqa: E402

from vse_ray.data.synthetic.pool import build_pool  # noqa: E402
from vse_ray.losses import make_loss  # noqa: E402
from vse_ray.models.clip import ClipModel  # noqa: E402
from vse_ray.models.clip_files import shipped_arch  # noqa: E402
from vse_ray.train.clip_pretrain import (  # noqa: E402
    arch_config,
    caption_tokens,
    epoch_batches,
    optimizer_config,
)
from vse_ray.train.epoch_loop import train_step  # noqa: E402
from vse_ray.train.optim import build_optimizer  # noqa: E402
from vse_ray.train.pretrain_settings import PretrainSettings  # noqa: E402

TARGET = 1.0  # vse_ray's images/s over the plain loop's at least 1.0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--images", type=int, default=1024, help="pool images rendered for the run")
    parser.add_argument("--batch", type=int, default=128, help="images per step")
    parser.add_argument("--steps", type=int, default=6, help="timed steps of each")
    parser.add_argument("--arch", default="clip-small.json", help="open_clip config (shipped name or path)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (0: torch's default)")
    parser.add_argument("--loader-workers", type=int, default=0, help="the plain loop's DataLoader workers")
    return parser.parse_args()


class PngDataset(torch.utils.data.Dataset):
    """The pool as a plain loop reads it: PNG bytes decoded per item, open_clip's train transform."""

    def __init__(self, pngs: list[bytes], captions: list[list[str]], transform, seed: int = 0):
        self.pngs, self.captions, self.transform = pngs, captions, transform
        self.pick = np.random.default_rng(seed).integers(len(captions[0]), size=len(pngs))

    def __len__(self) -> int:
        return len(self.pngs)

    def __getitem__(self, k: int) -> tuple[torch.Tensor, str]:
        from PIL import Image

        image = Image.open(io.BytesIO(self.pngs[k])).convert("RGB")
        return self.transform(image), self.captions[k][self.pick[k]]


def _png(image: np.ndarray) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, format="PNG")
    return buffer.getvalue()


def main() -> None:
    args = parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    import open_clip
    from open_clip.loss import ClipLoss

    settings = PretrainSettings(
        arch=args.arch, pool_images=args.images, batch_size=args.batch, exclude_images=0
    )
    arch = arch_config(args.arch)
    side = int(arch["vision_cfg"]["image_size"])
    pool = build_pool(args.images, settings.pool_seed, side, settings.pool_captions, 0, 0)
    captions = [list(c) for c in pool.captions]

    torch.manual_seed(0)
    ours = ClipModel(arch=shipped_arch(args.arch))
    theirs = copy.deepcopy(ours.towers.model)  # open_clip's own model, the same weights
    theirs.output_dict = True

    setup = time.perf_counter()
    ids = caption_tokens(ours, captions)
    tokenise_s = time.perf_counter() - setup
    pngs = [_png(image) for image in pool.images]
    transform = open_clip.image_transform(side, is_train=True, aug_cfg={"scale": settings.crop_scale})
    tokenizer = ours.towers.tokenizer  # open_clip's tokenizer of these towers

    def collate(items: list[tuple[torch.Tensor, str]]) -> tuple[torch.Tensor, torch.Tensor]:
        images, texts = zip(*items, strict=True)
        return torch.stack(images), tokenizer(list(texts))

    loader = torch.utils.data.DataLoader(
        PngDataset(pngs, captions, transform),
        batch_size=args.batch,
        shuffle=True,
        drop_last=True,
        num_workers=args.loader_workers,
        collate_fn=collate,
        generator=torch.Generator().manual_seed(0),
    )

    cfg = optimizer_config(settings)
    loss_fn = make_loss("infonce", targets="hard")
    loss_fn.start_from(ours.learned_logits)
    optimizer, _ = build_optimizer(cfg, ours, loss_fn, steps_per_epoch=args.images // args.batch)
    their_optimizer = open_clip_adamw(theirs, cfg.lr, cfg.weight_decay)
    their_loss, their_count = ClipLoss(), [0]

    def batches_forever(make):
        while True:
            yield from make()

    our_batches = batches_forever(lambda: epoch_batches(pool.images, ids, settings, 1))
    their_batches = batches_forever(lambda: iter(loader))

    def our_step(batch) -> None:
        train_step(ours, loss_fn, optimizer, batch, CLIP_NORM)

    def their_step(batch) -> None:
        images, texts = batch
        no_autocast = contextlib.nullcontext
        open_clip_step(theirs, their_optimizer, their_loss, images, texts, no_autocast, their_count)

    one_process = torch.get_num_threads() == 1 and args.loader_workers == 0
    clock = time.process_time if one_process else time.perf_counter
    ours.train()
    theirs.train()
    our_step(next(our_batches))  # untimed: first-call costs
    their_step(next(their_batches))
    sides = {"vse_ray": (our_batches, our_step), "plain": (their_batches, their_step)}
    seconds = {name: 0.0 for name in sides}
    reading = {name: 0.0 for name in sides}
    for _ in range(args.steps):
        for name, (batches, step) in sides.items():
            start = clock()
            batch = next(batches)
            read = clock()
            step(batch)
            seconds[name] += clock() - start
            reading[name] += read - start
    rate = {name: args.steps * args.batch / s for name, s in seconds.items()}
    ratio = rate["vse_ray"] / rate["plain"]
    result = {
        "images_per_s": {k: round(v, 1) for k, v in rate.items()},
        "ratio": round(ratio, 3),
        "batch_read_ms": {k: round(1000 * v / args.steps, 1) for k, v in reading.items()},
        "target": TARGET,
        "tokenise_once_s_per_1k_images": round(1000 * tokenise_s / args.images, 2),
        "batch": args.batch,
        "steps": args.steps,
        "arch": args.arch,
        "threads": torch.get_num_threads(),
        "loader_workers": args.loader_workers,
        "clock": "process CPU time" if one_process else "wall",
        "load_average": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result, indent=1))
    print(f"pretraining epoch: vse_ray {ratio:.2f}x the plain loop's images/s (target >= {TARGET})")


if __name__ == "__main__":
    main()
