"""Peak memory of a training worker reading region features, as the dataset grows.

Generates N images × R regions × D float16 features once per size under a folder you name (written shard by
shard in the precompute layout, never whole in memory; 100k × 36 × 2048 is about 15 GB), then measures, each
in a fresh process, the peak RSS (VmHWM) of a worker that opens the split and builds `--steps` random
training batches of `--batch` images the way the training loop does (ImageStore → tensor). The target: flat
in N. With `--in-memory`, the same for the former path that loads the whole split into the worker (float32),
for sizes that fit in RAM.

    python benchmarks/bench_region_memory.py --dir /tmp/vse_ray_regions --sizes 10000 100000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from vse_ray.data.store.schema import features_table
from vse_ray.data.store.shards import part_name, write_atomic

SHARD_ROWS = 1024


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dir", required=True, help="folder for the generated features (kept for reruns)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--regions", type=int, default=36)
    parser.add_argument("--dim", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--in-memory", action="store_true", help="also measure loading the whole split")
    parser.add_argument("--worker", nargs=3, metavar=("FOLDER", "MODE", "STEPS"), help=argparse.SUPPRESS)
    return parser.parse_args()


def generate(folder: Path, n: int, regions: int, dim: int) -> float:
    """Write n rows of float16 regions in shards of SHARD_ROWS (skipped when already complete); GB on disk.

    One random block of SHARD_ROWS rows is drawn once and written shard after shard, its first value set
    from the row's image id (drawing 15 GB of fresh random numbers costs minutes, changes nothing measured).
    """
    split = folder / "features" / "split=train"
    done = folder / "complete.json"
    if not done.is_file():
        block = np.random.default_rng(0).standard_normal((SHARD_ROWS, regions, dim), dtype=np.float32)
        block = block.astype(np.float16)
        for start in range(0, n, SHARD_ROWS):
            rows = min(SHARD_ROWS, n - start)
            feats = block[:rows]
            feats[:, 0, 0] = np.arange(start, start + rows) % 2048
            batch = {
                "image_id": np.arange(start, start + rows),
                "split": np.full(rows, "train"),
                "feature": feats,
            }
            write_atomic(features_table(batch, False, "float16"), split / part_name(start, "arrow"))
        done.write_text(json.dumps({"rows": n, "regions": regions, "dim": dim}))
    return sum(p.stat().st_size for p in split.glob("part-*.arrow")) / 1e9


def _vm_kb() -> dict[str, int]:
    """VmRSS, VmHWM (peak RSS) ... of this process in kB."""
    status = Path("/proc/self/status").read_text()
    return {line.split(":")[0]: int(line.split()[1]) for line in status.splitlines() if line.startswith("Vm")}


def worker(folder: str, mode: str, steps: int) -> None:  # runs in its own process
    import torch

    from vse_ray.data.store.region_rows import RegionRows
    from vse_ray.data.store.split_data import ImageStore

    base = _vm_kb()["VmRSS"]  # interpreter, torch and pyarrow loaded, nothing read yet
    rows = RegionRows(Path(folder) / "features" / "split=train")
    store = ImageStore(rows.image_ids, rows if mode == "rows" else rows[slice(None)])
    rng = np.random.default_rng(0)
    start, total = time.perf_counter(), 0.0
    for _ in range(steps):
        batch = store.tensor(rng.choice(store.image_ids, 128, replace=False))
        total += float(torch.as_tensor(batch).float().sum())
    kb = _vm_kb()
    print(
        json.dumps(
            {
                "peak_gb": kb["VmHWM"] / 1e6,
                "rss_gb": kb["VmRSS"] / 1e6,
                "base_gb": base / 1e6,
                "ms_per_batch": 1e3 * (time.perf_counter() - start) / steps,
            }
        )
    )


def measure(folder: Path, mode: str, steps: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--dir", "-", "--worker", str(folder), mode, str(steps)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    args = parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], int(args.worker[2]))
        return
    root = Path(args.dir).expanduser().resolve()
    print(
        f"R={args.regions} D={args.dim} float16, batch {args.batch}, {args.steps} random batches per worker"
    )
    print(
        f"{'images':>8} {'disk GB':>8} {'mode':>9} {'peak RSS GB':>11} {'before reading':>14} {'ms/batch':>8}"
    )
    for n in args.sizes:
        folder = root / f"regions_{n}_{args.regions}x{args.dim}"
        gen = time.perf_counter()
        disk = generate(folder, n, args.regions, args.dim)
        print(f"  (generated or found {folder} in {time.perf_counter() - gen:.0f} s)")
        modes = (
            ["rows", "in-memory"] if args.in_memory and n * args.regions * args.dim * 4 < 8e9 else ["rows"]
        )
        for mode in modes:
            m = measure(folder, mode, args.steps)
            base = m.get("base_gb", float("nan"))
            print(f"{n:>8} {disk:8.2f} {mode:>9} {m['peak_gb']:11.3f} {base:14.3f} {m['ms_per_batch']:8.1f}")


if __name__ == "__main__":
    main()
