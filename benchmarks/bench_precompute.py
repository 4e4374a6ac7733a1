"""Precompute throughput: the Ray Data pipeline vs a plain single-process loop doing the same work.

Both render the synthetic scenes, encode PNGs, run the CNN, fit vocabulary / CIDEr df / TF-IDF+SVD on train,
embed every caption with Sentence-BERT and write the same Parquet tables. Each measurement runs in a fresh
process; peak memory is the sum of RSS over that process and all its descendants (Ray's raylet, workers and
object store pages included, so shared pages count more than once: an upper bound).

    python benchmarks/bench_precompute.py          # loop vs Ray at 1 and 2 CPUs, memory at two sizes
    python benchmarks/bench_precompute.py --sizes 400 1600 --cpus 1 2 4

    python benchmarks/bench_precompute.py --grid   # grid features: the CNN's last conv map as regions

    # a running cluster against one local node with max(--cpus) CPUs, each size
    python benchmarks/bench_precompute.py --sizes 800 --cpus 2 --cluster-address 10.0.0.1:6379

Target: Ray no slower than 1.3x the loop on 2 cores, faster as cores grow (pooled and grid features); a
cluster no slower than 1.2x one node of as many CPUs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _tree_rss(root: int) -> int:
    """Sum of RSS bytes of ``root`` and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            rss[int(entry.name)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
            children.setdefault(int(fields[1]), []).append(int(entry.name))
        except (OSError, IndexError, ValueError):
            continue
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack += children.get(pid, [])
    return total


class PeakMemory:
    """Samples the RSS of this process tree every 0.2 s in a thread."""

    def __init__(self) -> None:
        self.peak, self._stop = 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.peak = max(self.peak, _tree_rss(os.getpid()))

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def run_loop(n: int, out: Path, config) -> dict:
    """The same work in one process: no Ray, torch using every core."""
    import numpy as np

    from vse_ray.data.precompute.caption_stage import caption_columns, fit_train_models
    from vse_ray.data.precompute.caption_vectors import CaptionVectorizer
    from vse_ray.data.precompute.run import load_source
    from vse_ray.data.sources.image_io import png_bytes
    from vse_ray.data.store.schema import captions_table, features_table
    from vse_ray.data.store.shards import plan_shards, write_atomic
    from vse_ray.data.synthetic.dataset import synthetic_image
    from vse_ray.features import CNNFeatureExtractor

    source = load_source(config)
    start = time.perf_counter()
    cnn = CNNFeatureExtractor(
        config.cnn, config.weights, config.crop, init_seed=config.init_seed, grid=config.grid
    )
    suffix = "arrow" if config.grid else "parquet"
    for split, data in source.splits.items():
        for shard in plan_shards(split, len(data.image_ids), config.shard_size):
            ids = data.image_ids[shard.start : shard.stop]
            pixels = np.stack([synthetic_image(config.seed, int(i), config.image_size) for i in ids])
            batch = {"image_id": ids, "split": np.full(len(ids), split), "pixels": pixels}
            batch["image"] = np.array([png_bytes(p) for p in pixels], dtype=object)
            batch = cnn(batch)
            write_atomic(
                features_table(batch, True), out / "features" / f"split={split}" / f"{shard.start}.{suffix}"
            )
    images_s = time.perf_counter() - start
    start = time.perf_counter()
    columns = {s: caption_columns(d, d.image_ids) for s, d in source.splits.items()}
    vocab, fitted = fit_train_models(columns["train"], config, out)
    vectorizer = CaptionVectorizer(vocab, fitted)
    for split, cols in columns.items():
        for shard in plan_shards(split, len(cols["caption_id"]), config.shard_size * 5):
            batch = {k: v[shard.start : shard.stop] for k, v in cols.items()}
            batch = vectorizer({**batch, "split": np.full(shard.size, split)})
            write_atomic(
                captions_table(batch), out / "captions" / f"split={split}" / f"{shard.start}.parquet"
            )
    captions_s = time.perf_counter() - start
    n_caps = sum(len(c["caption_id"]) for c in columns.values())
    return {
        "images_per_s": n / images_s,
        "captions_per_s": n_caps / captions_s,
        "seconds": images_s + captions_s,
    }


def run_ray(n: int, out: Path, config, cpus: int, cluster_address: str | None = None) -> dict:
    """Precompute on a local Ray of `cpus` CPUs, or on the running cluster at `cluster_address`."""
    import ray

    from vse_ray.data.precompute.config import ExecutionOptions
    from vse_ray.data.precompute.run import precompute

    local = {"num_cpus": cpus, "include_dashboard": False} if cluster_address is None else {}
    ray.init(address=cluster_address or "local", log_to_driver=False, configure_logging=False, **local)
    ray.data.DataContext.get_current().enable_progress_bars = False
    start = time.perf_counter()
    summary = precompute(config, str(out), ExecutionOptions(), verbose=False)
    seconds = time.perf_counter() - start
    ray.shutdown()
    return {
        "images_per_s": summary.throughput("images"),
        "captions_per_s": summary.throughput("captions"),
        "seconds": seconds,
    }


def measure(args: argparse.Namespace) -> None:
    """One measurement in this process; prints a JSON line."""
    from vse_ray.data.precompute.config import PrecomputeConfig

    n_val = max(1, args.n // 10)
    config = PrecomputeConfig(
        n_train=args.n - 2 * n_val,
        n_val=n_val,
        n_test=n_val,
        cnn=args.cnn,
        relevance_sources=(),
        shard_size=128,
        grid=args.grid,
    )
    with tempfile.TemporaryDirectory() as tmp, PeakMemory() as memory:
        if args.mode == "loop":
            result = run_loop(args.n, Path(tmp), config.resolved())
        else:
            result = run_ray(args.n, Path(tmp), config, args.cpus, args.cluster_address)
    print(json.dumps({**result, "peak_rss_mb": memory.peak / 2**20}))


def _child(mode: str, n: int, cpus: int, cnn: str, grid: bool, cluster_address: str | None = None) -> dict:
    cmd = [sys.executable, __file__, "--one", mode, "--n", str(n), "--cpus", str(cpus), "--cnn", cnn]
    cmd += ["--grid"] if grid else []
    cmd += ["--cluster-address", cluster_address] if cluster_address and mode == "ray" else []
    env = {**os.environ, "OMP_NUM_THREADS": str(cpus)} if mode == "loop" else dict(os.environ)
    lines = (
        subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout.strip().splitlines()
    )
    return json.loads(lines[-1])


def _row(name: str, result: dict, extra: str = "") -> None:
    print(
        f"{name:<22}{result['images_per_s']:>10.1f}{result['captions_per_s']:>12.1f}"
        f"{result['seconds']:>9.1f}{result['peak_rss_mb']:>13.0f}{extra}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=(400, 1600), help="Dataset sizes (images).")
    parser.add_argument("--cpus", type=int, nargs="+", default=(1, 2), help="CPU counts of the scaling runs.")
    parser.add_argument("--cnn", default="resnet18")
    parser.add_argument("--grid", action="store_true", help="Grid features (last conv map as regions).")
    parser.add_argument(
        "--cluster-address",
        help="Also run Ray on this running cluster (e.g. 10.0.0.1:6379), against one local node of "
        "max(--cpus) CPUs; its temp output then must be on storage every node sees (TMPDIR).",
    )
    parser.add_argument("--one", choices=("loop", "ray"), dest="mode", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, default=400, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mode:
        args.cpus = args.cpus[0]
        measure(args)
        return
    large = max(args.sizes)
    kind = "grid regions" if args.grid else "pooled features"
    print(f"{os.cpu_count()} cores; cnn={args.cnn} ({kind}); synthetic 64x64 images, 5 captions each")
    print(f"{'run':<22}{'images/s':>10}{'captions/s':>12}{'seconds':>9}{'peak RSS MB':>13}")
    for n in args.sizes:
        loop = _child("loop", n, max(args.cpus), args.cnn, args.grid)
        _row(f"loop n={n}", loop)
        seconds = {}
        for cpus in args.cpus if n == large else (max(args.cpus),):
            ray_run = _child("ray", n, cpus, args.cnn, args.grid)
            seconds[cpus] = ray_run["seconds"]
            _row(f"ray n={n} cpus={cpus}", ray_run, f"   ray/loop time {seconds[cpus] / loop['seconds']:.2f}")
        if args.cluster_address:
            cluster = _child("ray", n, max(args.cpus), args.cnn, args.grid, args.cluster_address)
            ratio = cluster["seconds"] / seconds[max(args.cpus)]
            _row(f"ray n={n} cluster", cluster, f"   cluster/1-node time {ratio:.2f}")


if __name__ == "__main__":
    main()
