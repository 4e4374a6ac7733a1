"""Throughput of the frozen-tower embedding cache (Ray Data actor pool) against a plain PyTorch loop.

Writes a split of N synthetic scenes rendered at the tower's input size as precompute keeps them, then, in one
run: `compute_image_cache` (read the PNG column with Ray Data, decode and run the tower in an actor pool, one
actor per GPU when there is one, write the cache) against a loop in this process over the same PNG bytes
(decode, `encode_images` in batches of the same size, on the same device). Both in images/s, with the same-run
ratio cache / loop; the cache's time includes the start of its actors (each builds the model).

The tower is a random open_clip ViT of --width and --layers (both towers; patch 8, image --side: the tiny
tower of the tests by default) unless --pretrained names a local-dir folder (or a weights file with --arch):

    python benchmarks/bench_image_cache.py --n 2000
    python benchmarks/bench_image_cache.py --n 2000 --side 64 --width 256 --layers 6
    python benchmarks/bench_image_cache.py --n 5000 --side 224 --pretrained weights/vit_b_32_openai
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_clip_step import write_model  # noqa: E402

from vse_ray.data.sources.image_io import png_bytes
from vse_ray.data.store.split_data import decode_png_column
from vse_ray.data.synthetic.dataset import synthetic_image
from vse_ray.evaluation.embed import scoring_device
from vse_ray.evaluation.image_cache import compute_image_cache
from vse_ray.models import build_model
from vse_ray.ray_session import ensure_ray


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=2000, help="stored images")
    parser.add_argument("--side", type=int, default=32, help="their side (the tiny tower's input: 32)")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--pretrained", default="", help="open_clip local-dir folder or weights file")
    parser.add_argument("--arch", default="", help="open_clip architecture of a weights file")
    parser.add_argument("--width", type=int, default=64, help="random towers' width")
    parser.add_argument("--layers", type=int, default=2, help="random towers' blocks")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        params = {"arch": args.arch, "pretrained": args.pretrained}
        if not args.pretrained:
            (Path(tmp) / "tower").mkdir()
            tower = write_model(Path(tmp) / "tower", args.width, args.layers, args.side)
            params = {"pretrained": str(tower)}
        images = [png_bytes(synthetic_image(0, i, args.side)) for i in range(args.n)]
        folder = Path(tmp) / "data" / "features" / "split=test"
        folder.mkdir(parents=True)
        table = pa.table({"image_id": np.arange(args.n, dtype=np.int64), "image": images})
        pq.write_table(table, folder / "part-0.parquet")

        device = scoring_device()
        start = time.perf_counter()
        model = build_model("clip", **params).to(device).eval()
        with torch.no_grad():
            for s in range(0, args.n, args.batch):
                pixels = decode_png_column(table["image"].slice(s, args.batch))
                model.encode_images(torch.from_numpy(pixels).to(device)).cpu()
        loop_s = time.perf_counter() - start

        ensure_ray()
        start = time.perf_counter()
        compute_image_cache(str(Path(tmp) / "data"), "test", "clip", params, "bench", args.batch)
        cache_s = time.perf_counter() - start
    tower = args.pretrained or f"random ViT, width {args.width}, {args.layers} layers, patch 8"
    print(f"{args.n} images of {args.side} px, batch {args.batch}, device {device}, {tower}")
    print(f"plain PyTorch loop: {args.n / loop_s:8.1f} images/s ({loop_s:.1f} s)")
    print(
        f"embedding cache:    {args.n / cache_s:8.1f} images/s ({cache_s:.1f} s)   "
        f"ratio cache/loop {loop_s / cache_s:.2f}"
    )


if __name__ == "__main__":
    main()
