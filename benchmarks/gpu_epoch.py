"""One store-fed VSE∞ training epoch at Flickr30K's size, with the GPU's utilisation sampled throughout.

Writes a training split of `--images` images (Flickr30K: 29,000) × 36 regions × 2,048 as the store writes it
(uncompressed Arrow IPC shards, float16 by default), with 5 captions per image whose lengths follow the
Flickr30K captions when `--captions` exists. Then it runs vse_ray's own epoch loop (`train_one_epoch`: the
seeded caption permutation, `RegionRows` reads of each batch's rows, the region drop, collate, copy to the
device, the step; the next batch is built on a thread while a step runs) with the VSE++ loss, and samples
`nvidia-smi`'s utilisation every 100 ms. Last, the data path alone (the same batches, read, collated and
copied, no model) against the step's time: target ≥ 3× the rate the step consumes, and ≥ 90 % GPU utilisation
through the epoch. Ray is not involved: on a cluster the same loop runs inside each Ray Train worker.

    python benchmarks/gpu_epoch.py                       # Flickr30K size, on the GPU
    python benchmarks/gpu_epoch.py --images 2900 --max-steps 100
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch
from step_vs_official import DEFAULT_CAPTIONS, REPO_ROOT, caption_lengths

from vse_ray.data.store.region_rows import RegionRows
from vse_ray.data.store.schema import features_table
from vse_ray.data.store.shards import write_atomic
from vse_ray.data.store.split_data import ImageStore
from vse_ray.losses import make_loss
from vse_ray.models import build_model
from vse_ray.train.batches import BatchBuilder, TableBatches
from vse_ray.train.config import TrainConfig
from vse_ray.train.epoch_loop import WorkerContext, host_batch, train_one_epoch
from vse_ray.train.streams import region_rng

UTILISATION_TARGET = 90.0
LOADER_TARGET = 3.0
SHARD_IMAGES = 1_000


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--images", type=int, default=29_000, help="training images (Flickr30K: 29,000)")
    parser.add_argument("--regions", type=int, default=36)
    parser.add_argument("--feature-dim", type=int, default=2048)
    parser.add_argument("--dtype", choices=("float16", "float32"), default="float16", help="stored features")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--embed", type=int, default=1024)
    parser.add_argument("--word-dim", type=int, default=300)
    parser.add_argument("--vocab", type=int, default=8_481)
    parser.add_argument(
        "--max-steps", type=int, default=0, help="stop the epoch after this many steps (0: all)"
    )
    parser.add_argument(
        "--captions", default=DEFAULT_CAPTIONS, help="caption file whose lengths the data takes"
    )
    parser.add_argument("--folder", type=Path, help="where to write the data (default: a temporary folder)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--json", type=Path, help="also write the results here as JSON")
    return parser.parse_args()


def write_regions(folder: Path, args: argparse.Namespace) -> Path:
    """The training split's region shards, `SHARD_IMAGES` images each; the folder `RegionRows` reads."""
    split = folder / "features" / "split=train"
    block = np.random.default_rng(0).standard_normal(
        (SHARD_IMAGES, args.regions, args.feature_dim), np.float32
    )
    for start in range(0, args.images, SHARD_IMAGES):  # every shard holds the same values: quicker to write
        n = min(SHARD_IMAGES, args.images - start)
        feature = block[:n]
        batch = {"image_id": np.arange(start, start + n), "split": np.full(n, "train"), "feature": feature}
        write_atomic(
            features_table(batch, with_image=False, dtype=args.dtype), split / f"part-{start:08d}.arrow"
        )
    return split


def caption_table(args: argparse.Namespace) -> pa.Table:
    """5 captions per image: random word ids, lengths as the Flickr30K captions (or 10-20)."""
    rng = np.random.default_rng(1)
    n = 5 * args.images
    lengths = caption_lengths((REPO_ROOT / args.captions).resolve(), n, rng)
    tokens = [rng.integers(4, args.vocab, k).tolist() for k in lengths]
    return pa.table(
        {
            "caption_id": np.arange(n),
            "image_id": np.arange(n) // 5,
            "tokens": pa.array(tokens, pa.list_(pa.int64())),
            "text": pa.array([""] * n),
        }
    )


class Utilisation:
    """`nvidia-smi`'s GPU utilisation (%), sampled every 100 ms while in use."""

    def __enter__(self) -> Utilisation:
        query = ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", "-lms", "100"]
        self.samples: list[float] = []
        self.process = (
            subprocess.Popen(query, stdout=subprocess.PIPE, text=True) if shutil.which(query[0]) else None
        )
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            out, _ = self.process.communicate()
            self.samples = [float(line) for line in out.split() if line.strip()]


def main() -> None:
    args = parse_args()
    device = torch.device(args.device)
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    with tempfile.TemporaryDirectory(prefix="gpu_epoch_") as scratch:
        folder = args.folder or Path(scratch)
        start = time.perf_counter()
        rows = RegionRows(write_regions(folder, args))
        table = caption_table(args)
        written = time.perf_counter() - start
        size = sum(p.stat().st_size for p in rows.paths) / 2**30
        print(
            f"wrote {args.images:,} images × {args.regions} × {args.feature_dim} {args.dtype} "
            f"({size:.1f} GiB) "
            f"and {table.num_rows:,} captions in {written:.0f} s"
        )
        cfg = TrainConfig(
            data_dir=str(folder),
            model="vse_inf",
            batch_size=args.batch,
            embed_dim=args.embed,
            word_dim=args.word_dim,
        )
        batches = TableBatches(table, args.batch, cfg.seed)
        if args.max_steps:
            full = batches.epoch_batches
            batches.epoch_batches = lambda epoch: itertools.islice(full(epoch), args.max_steps)  # type: ignore[method-assign]
        ctx = WorkerContext(batches, device)
        builder = BatchBuilder(ImageStore(rows.image_ids, rows), None, region_drop=0.2)
        torch.manual_seed(0)
        model = build_model(
            "vse_inf",
            vocab_size=args.vocab,
            feature_dim=args.feature_dim,
            word_dim=args.word_dim,
            embed_dim=args.embed,
        ).to(device)
        loss_fn = make_loss("vsepp").to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4)
        steps = args.max_steps or table.num_rows // args.batch
        with Utilisation() as gpu:
            start = time.perf_counter()
            train_one_epoch(cfg, 1, model, loss_fn, optimizer, builder, ctx, None)
            sync()
            epoch_s = time.perf_counter() - start
        busy = (
            gpu.samples[2:-2] or gpu.samples or [float("nan")]
        )  # the first and last samples straddle the start and the end
        step_ms = 1e3 * epoch_s / steps
        start = time.perf_counter()
        regions = region_rng(cfg.seed, 0, 2)
        for rows_ in itertools.islice(batches.epoch_batches(2), steps):
            host_batch(builder, rows_, None, None, regions, device).to(device, non_blocking=True)
        sync()
        loader_ms = 1e3 * (time.perf_counter() - start) / steps
    result = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "images": args.images,
        "steps": steps,
        "epoch_s": epoch_s,
        "step_ms": step_ms,
        "utilisation_mean": float(np.mean(busy)),
        "utilisation_median": float(np.median(busy)),
        "loader_ms": loader_ms,
        "loader_ratio": step_ms / loader_ms,
    }
    print(
        f"epoch: {steps} steps in {epoch_s:.1f} s ({step_ms:.1f} ms/step, {1e3 * args.batch / step_ms:,.0f} "
        f"samples/s); GPU utilisation mean {result['utilisation_mean']:.0f} %, median "
        f"{result['utilisation_median']:.0f} % (target ≥ {UTILISATION_TARGET:.0f} %)"
    )
    print(
        f"data path alone: {loader_ms:.1f} ms/batch, {result['loader_ratio']:.1f}× the rate the step "
        "consumes "
        f"(target ≥ {LOADER_TARGET:.0f}×)"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
