"""A CLIP fine-tuning step of vse_ray against the same step written as open_clip's training loop does it,
same model, batch and precision, in the same run: the speed ratio open_clip's time / vse_ray's (target ≥ 1.0:
vse_ray no slower). Steps are timed round-robin, medians reported; with one thread on the CPU in this
process's CPU time, which other jobs on a shared machine do not inflate.

vse_ray: `train_step` with the `infonce` loss (hard targets), AdamW with open_clip's weight-decay exclusion
and the cosine schedule, gradient clipping, the logit scale clamped; its model reads the stored uint8
images and preprocesses them in the step. open_clip: its loop's step (``train_one_epoch`` of
open_clip_train, written from its description): the scheduler sets the rate, zero_grad, autocast forward
of ``model(images, texts)`` to ``ClipLoss``, backward, ``clip_grad_norm_``, ``optimizer.step()``, the
logit scale clamped to [0, ln 100]; its images arrive preprocessed from the data loader. Both start from
the same weights (a tiny open_clip config: width 64, 2 layers, image 32, context 16, embed 32, unless
``--width`` / ``--layers`` say otherwise).

``--locked``: instead, vse_ray's locked-image (LiT) step (``lock_image``, the image tower frozen whole) from
the stored pixels against the same step from the tower's cached embeddings (``image_cache``: the batch's
images are the (B, E) rows the cache holds, so the image tower does not run), same model, batch, optimiser
and precision: the ratio pixels / cache is the step's speed-up from the cache.

    python benchmarks/bench_clip_step.py                      # B = 64, one thread, fp32 (CPU)
    python benchmarks/bench_clip_step.py --precision bf16
    python benchmarks/bench_clip_step.py --device cuda --batch 256 --precision bf16 --threads 0
    python benchmarks/bench_clip_step.py --locked --width 256 --layers 4
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import functools
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_losses import round_robin_median_ms, synchronised  # noqa: E402

from vse_ray.losses import make_loss  # noqa: E402
from vse_ray.models.clip import ClipModel  # noqa: E402
from vse_ray.train.batches import TrainBatch  # noqa: E402
from vse_ray.train.config import TrainConfig  # noqa: E402
from vse_ray.train.epoch_loop import train_step  # noqa: E402
from vse_ray.train.optim import build_optimizer, cosine_factor, excluded_from_decay  # noqa: E402
from vse_ray.train.precision import DTYPES, Precision  # noqa: E402

TARGET = 1.0  # open_clip's time / vse_ray's at least 1.0
LR, WEIGHT_DECAY, CLIP_NORM, WARMUP, STEPS = 1e-4, 0.2, 1.0, 10, 10_000


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batch", type=int, default=64, help="pairs per step")
    parser.add_argument("--width", type=int, default=64, help="towers' width")
    parser.add_argument("--layers", type=int, default=2, help="towers' blocks")
    parser.add_argument("--precision", choices=("fp32", "bf16", "fp16"), default="fp32")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (0: torch's default)")
    parser.add_argument("--repeats", type=int, default=20, help="timed steps of each")
    parser.add_argument(
        "--locked", action="store_true", help="a LiT step from the pixels against one from cached embeddings"
    )
    return parser.parse_args()


def write_model(folder: Path, width: int, layers: int, side: int = 32) -> Path:
    """An open_clip local-dir folder of random towers of the given size (images of `side` px, patch 8)."""
    import open_clip
    from safetensors.torch import save_file

    vision = {"image_size": side, "layers": layers, "width": width, "patch_size": 8, "head_width": 32}
    cfg = {
        "embed_dim": 32,
        "vision_cfg": vision,
        "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": width, "heads": 2, "layers": layers},
    }
    (folder / "open_clip_config.json").write_text(json.dumps({"model_cfg": cfg}))
    torch.manual_seed(0)
    model = open_clip.create_model(f"local-dir:{folder}", load_weights=False)
    save_file(
        {k: v.contiguous() for k, v in model.state_dict().items()},
        str(folder / "open_clip_model.safetensors"),
    )
    return folder


def open_clip_adamw(model: torch.nn.Module, lr: float, weight_decay: float) -> torch.optim.AdamW:
    """open_clip's optimiser: AdamW, no weight decay on gains, biases and 1-D parameters."""
    named = list(model.named_parameters())
    return torch.optim.AdamW(
        [
            {"params": [p for n, p in named if excluded_from_decay(n, p)], "weight_decay": 0.0},
            {"params": [p for n, p in named if not excluded_from_decay(n, p)], "weight_decay": weight_decay},
        ],
        lr=lr,
    )


def open_clip_step(model, optimizer, loss, images, texts, autocast, step: list[int]):
    """One step of open_clip's training loop."""
    factor = cosine_factor(step[0], WARMUP, STEPS)  # its `cosine_lr`: the same formula
    for group in optimizer.param_groups:
        group["lr"] = LR * factor
    step[0] += 1
    optimizer.zero_grad()
    with autocast():
        out = model(images, texts)
        total = sum(loss(**out, output_dict=True).values())
    total.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP_NORM, norm_type=2.0)
    optimizer.step()
    with torch.no_grad():
        model.logit_scale.clamp_(0, math.log(100))


def main() -> None:
    args = parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    from open_clip.loss import ClipLoss

    with tempfile.TemporaryDirectory() as tmp:
        ours = ClipModel(pretrained=str(write_model(Path(tmp), args.width, args.layers))).to(device)
    theirs = copy.deepcopy(ours.towers.model)
    theirs.output_dict = True
    rng = np.random.default_rng(0)
    pixels = torch.from_numpy(rng.integers(0, 256, (args.batch, 32, 32, 3), dtype=np.uint8)).to(device)
    ids = ours.caption_ids([], [f"a photo of thing number {i}" for i in range(args.batch)])
    tokens = torch.nn.utils.rnn.pad_sequence([torch.as_tensor(i) for i in ids], batch_first=True).to(device)
    batch = TrainBatch(
        pixels,
        tokens,
        torch.tensor([len(i) for i in ids], device=device),
        torch.arange(args.batch, device=device),
        None,
    )
    with torch.no_grad():
        images = ours.preprocess(pixels)  # open_clip's data loader hands its loop preprocessed images
    texts = torch.from_numpy(
        np.stack(ours.towers.tokenize([f"a photo of thing number {i}" for i in range(args.batch)]))
    ).to(device)

    cfg = TrainConfig(
        data_dir="d",
        model="clip",
        optimizer="adamw",
        lr=LR,
        weight_decay=WEIGHT_DECAY,
        weight_decay_exclude=True,
        lr_schedule="cosine",
        lr_warmup_steps=WARMUP,
        epochs=1,
        grad_clip=CLIP_NORM,
        precision=args.precision,
        use_gpu=device.type == "cuda",
    ).validate()
    if args.locked:
        locked_steps(ours, batch, dataclasses.replace(cfg, lock_image=True), args, device)
        return
    infonce = make_loss("infonce").to(device)
    infonce.start_from(ours.learned_logits)
    optimizer, scheduler = build_optimizer(cfg, ours, infonce, steps_per_epoch=STEPS)
    precision = Precision(args.precision, device)

    def vse_ray_step() -> None:
        train_step(ours, infonce, optimizer, batch, CLIP_NORM, precision=precision)
        scheduler.step()

    their_optimizer = open_clip_adamw(theirs, LR, WEIGHT_DECAY)
    dtype = DTYPES.get(args.precision)

    def autocast() -> torch.autocast:
        return torch.autocast(device.type, dtype=dtype, enabled=dtype is not None)

    step = [0]
    their_loss = ClipLoss()

    def their_step() -> None:
        open_clip_step(theirs, their_optimizer, their_loss, images, texts, autocast, step)

    ours.train()
    theirs.train()
    vse_ray_step()  # the same step: one of each from the same weights updates them alike
    their_step()
    mine = dict(ours.towers.model.named_parameters())
    differ = max(float((mine[n] - p).abs().max()) for n, p in theirs.named_parameters() if n != "logit_scale")
    print(f"after one step, largest parameter difference {differ:.1e}")
    clock = time.process_time if torch.get_num_threads() == 1 and device.type == "cpu" else time.perf_counter
    ms = round_robin_median_ms(
        {"vse_ray": synchronised(vse_ray_step, device), "open_clip": synchronised(their_step, device)},
        args.repeats,
        clock=clock,
    )
    ratio = ms["open_clip"] / ms["vse_ray"]
    load = os.getloadavg()[0]
    print(
        f"B = {args.batch}, width {args.width}, {args.layers} layers, {args.precision}, {device}, "
        f"torch threads = {torch.get_num_threads()}, load average {load:.1f}"
    )
    print(f"vse_ray step {ms['vse_ray']:.2f} ms, open_clip step {ms['open_clip']:.2f} ms")
    print(f"speed ratio open_clip / vse_ray = {ratio:.3f} (target >= {TARGET})")


def locked_steps(
    ours: ClipModel, batch: TrainBatch, cfg: TrainConfig, args: argparse.Namespace, device: torch.device
) -> None:
    """--locked: vse_ray's LiT step from the pixels against the same step from the cached embeddings."""
    models = {"pixels": ours, "cache": copy.deepcopy(ours)}
    with torch.no_grad():
        cached = ours.eval().encode_images(batch.images)  # the rows `compute_image_cache` stores
    batches = {"pixels": batch, "cache": dataclasses.replace(batch, images=cached)}
    precision = Precision(args.precision, device)
    steps = {}
    for name, model in models.items():
        loss = make_loss("infonce").to(device)
        loss.start_from(model.learned_logits)
        optimizer, _ = build_optimizer(cfg, model, loss, steps_per_epoch=STEPS)
        model.train()
        step = functools.partial(
            train_step, model, loss, optimizer, batches[name], CLIP_NORM, precision=precision
        )
        steps[name] = synchronised(step, device)
    for step in steps.values():  # one of each from the same weights updates them alike
        step()
    weights = dict(models["cache"].named_parameters())
    differ = max(float((weights[n] - p).detach().abs().max()) for n, p in models["pixels"].named_parameters())
    print(f"after one step, largest parameter difference {differ:.1e}")
    clock = time.process_time if torch.get_num_threads() == 1 and device.type == "cpu" else time.perf_counter
    ms = round_robin_median_ms(steps, args.repeats, clock=clock)
    print(
        f"LiT step, B = {args.batch}, width {args.width}, {args.layers} layers, {args.precision}, {device}, "
        f"torch threads = {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}"
    )
    print(f"from pixels {ms['pixels']:.2f} ms, from cached embeddings {ms['cache']:.2f} ms")
    print(f"speed-up pixels / cache = {ms['pixels'] / ms['cache']:.2f}")


if __name__ == "__main__":
    main()
