"""Read speed of the stored images a pixel tower (CLIP, a fine-tuned CNN) reads, in images per second.

Writes N synthetic scenes rendered at `--side` pixels as precompute keeps them (PNG bytes in the ``image``
column of a ``features`` Parquet shard), then measures, in one run:

- ``decode``: `load_image_store(raw=True)`, the split decoded once into (N, side, side, 3) uint8 (what a
  training or evaluation process does at start), against a plain loop of ``torchvision.io.decode_png`` over
  the same bytes (same-run ratio: ours / plain);
- ``batch``: a batch of `--batch` random rows gathered from the decoded split (`ImageStore.tensor`) and
  turned into a CLIP tower's input by the model's preprocessing (`PixelPreprocess`, stored at the tower's
  size: scaling and normalisation only), per step, on the CPU.

    python benchmarks/bench_pixel_read.py --n 2000 --side 224 --batch 256
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

from vse_ray.data.sources.image_io import png_bytes
from vse_ray.data.store.split_data import load_image_store
from vse_ray.data.synthetic.dataset import synthetic_image
from vse_ray.models.clip_preprocess import PixelPreprocess, PixelSpec

OPENAI_MEAN, OPENAI_STD = (0.481, 0.458, 0.408), (0.269, 0.261, 0.276)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=2000, help="stored images")
    parser.add_argument("--side", type=int, default=224, help="their side (a CLIP tower's input: 224)")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=20)
    return parser.parse_args()


def write_split(root: Path, n: int, side: int) -> list[bytes]:
    """``features/split=test/part-0.parquet`` with N rendered scenes as PNG; returns their bytes."""
    images = [png_bytes(synthetic_image(0, i, side)) for i in range(n)]
    folder = root / "features" / "split=test"
    folder.mkdir(parents=True)
    pq.write_table(
        pa.table({"image_id": np.arange(n, dtype=np.int64), "image": images}), folder / "part-0.parquet"
    )
    return images


def main() -> None:
    args = parse_args()
    torch.set_num_threads(max(torch.get_num_threads(), 1))
    with tempfile.TemporaryDirectory() as tmp:
        images = write_split(Path(tmp), args.n, args.side)
        mb = sum(len(b) for b in images) / 2**20
        start = time.perf_counter()
        store = load_image_store(tmp, "test", raw=True)
        ours = args.n / (time.perf_counter() - start)
    from torchvision.io import decode_png

    start = time.perf_counter()
    for data in images:
        decode_png(torch.frombuffer(bytearray(data), dtype=torch.uint8))
    plain = args.n / (time.perf_counter() - start)

    size = (args.side, args.side)
    spec = PixelSpec(size, size, "shortest", "bicubic", OPENAI_MEAN, OPENAI_STD, "benchmark")
    preprocess = PixelPreprocess(spec)
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for _ in range(args.steps):
        ids = rng.choice(store.image_ids, args.batch, replace=False)
        preprocess(store.tensor(ids))
    batch = args.steps * args.batch / (time.perf_counter() - start)
    print(f"{args.n} PNG images of {args.side} px ({mb:.1f} MiB stored), {torch.get_num_threads()} threads")
    print(f"decode (load_image_store):      {ours:9.0f} images/s")
    print(f"decode (torchvision decode_png): {plain:8.0f} images/s   ratio ours/plain {ours / plain:.2f}")
    print(f"batch gather + preprocess:      {batch:9.0f} images/s   (batch {args.batch})")


if __name__ == "__main__":
    main()
