"""Reading the train captions into Ray Data, as every training run does: Ray 2.60's default Parquet reader
(DataSourceV2, which starts a pool of footer-reading actors per read) against `read_parquet_dataset` (V1),
both materialised, alternated on the same shards, medians printed with their ratio (target: ≤ 1.0×).

The shards are a split's caption table as precompute writes it (`tokens`, `image_id` and a 384-d `sbert`
column, `--rows` captions in `--shards` files), or `--data DIR` reads `DIR/captions/split=train` of a
precompute output.

    python benchmarks/bench_read_parquet.py
    python benchmarks/bench_read_parquet.py --shards 443 --rows 590000 --cpus 8
    python benchmarks/bench_read_parquet.py --cluster-address 10.0.0.1:6379 --data /mnt/shared/coco
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import ray

from vse_ray.data.ray_parquet import read_parquet_dataset

COLUMNS = ["tokens", "image_id", "sbert"]
TARGET = 1.0


def write_shards(folder: Path, rows: int, shards: int, seed: int = 0) -> None:
    """`rows` caption-like rows in `shards` Parquet files."""
    rng = np.random.default_rng(seed)
    for k, part in enumerate(np.array_split(np.arange(rows), shards)):
        lengths = rng.integers(8, 16, len(part))
        tokens = pa.ListArray.from_arrays(
            np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32),
            pa.array(rng.integers(4, 8000, int(lengths.sum())), pa.int32()),
        )
        sbert = rng.standard_normal((len(part), 384), dtype=np.float32)
        table = pa.table(
            {
                "tokens": tokens,
                "image_id": pa.array(part // 5, pa.int64()),
                "sbert": pa.FixedSizeListArray.from_arrays(pa.array(sbert.ravel()), 384),
            }
        )
        pq.write_table(table, folder / f"part-{k:05d}.parquet")


def default_reader(path: str) -> ray.data.Dataset:
    return ray.data.read_parquet(path, partitioning=None).select_columns(COLUMNS).materialize()


def ours(path: str) -> ray.data.Dataset:
    return read_parquet_dataset(path, COLUMNS)


def timed_read(read: Callable[[str], ray.data.Dataset], path: str, rows: int) -> float:
    start = time.perf_counter()
    dataset = read(path)
    seconds = time.perf_counter() - start
    assert dataset.count() == rows, (dataset.count(), rows)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=20_000, help="captions written (without --data)")
    parser.add_argument("--shards", type=int, default=16, help="Parquet files written (without --data)")
    parser.add_argument("--data", help="a precompute output: read its captions/split=train instead")
    parser.add_argument("--repeats", type=int, default=5, help="reads per reader (alternated)")
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of the local one-node Ray")
    parser.add_argument("--cluster-address", help="read on this running cluster instead (e.g. 10.0.0.1:6379)")
    args = parser.parse_args()
    if args.cluster_address:
        ray.init(address=args.cluster_address, log_to_driver=False, configure_logging=False)
    else:
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    with tempfile.TemporaryDirectory() as tmp:
        if args.data:
            path = str(Path(args.data) / "captions" / "split=train")
        else:
            path = tmp
            write_shards(Path(tmp), args.rows, args.shards)
        rows = pq.ParquetDataset(path).read(columns=["image_id"]).num_rows
        files = len(list(Path(path).glob("*.parquet")))
        readers = {"Ray default (V2)": default_reader, "read_parquet_dataset (V1)": ours}
        times: dict[str, list[float]] = {name: [] for name in readers}
        for _ in range(args.repeats):
            for name, read in readers.items():
                times[name].append(timed_read(read, path, rows))
    nodes = len([n for n in ray.nodes() if n["Alive"]])
    print(
        f"{rows} captions in {files} files; {nodes} node(s), {ray.cluster_resources().get('CPU', 0):.0f} CPUs"
    )
    for name, values in times.items():
        print(f"{name:<28} first {values[0]:6.2f} s   median {statistics.median(values):6.2f} s")
    (default, *_), (v1, *_) = times.values()
    ratio = statistics.median(times["read_parquet_dataset (V1)"]) / statistics.median(
        times["Ray default (V2)"]
    )
    print(f"read_parquet_dataset / default, medians: {ratio:.2f}x (first read {v1 / default:.2f}x)")
    print(f"target <= {TARGET:.1f}x: {'met' if ratio <= TARGET else 'NOT met'}")
    ray.shutdown()


if __name__ == "__main__":
    main()
