"""One epoch of training batches as a Ray Train worker draws them: the seeded global permutation of the
whole split that `vse_ray.train.batches.TableBatches` deals out (the train captions read once per worker),
against a Ray Data stream of the same shards with a 20,000-row local shuffle buffer (a common streaming
alternative, which draws each batch from a window of the split only). Alternated, medians and their ratio
printed (target: ≤ 1.05×). Each round counts the first epoch with its read and a second epoch without.

The shards are a split's caption table as precompute writes it (`tokens`, `image_id` and a 384-d `sbert`
column, `--rows` captions in `--shards` Parquet files), or `--data DIR` reads `DIR/captions/split=train` of a
precompute output of schema version 2 (Parquet captions; version 3 writes Arrow IPC files).

    python benchmarks/bench_train_shuffle.py
    python benchmarks/bench_train_shuffle.py --rows 590000 --shards 443 --cpus 8
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import ray

from vse_ray.train.batches import TableBatches

COLUMNS = ["tokens", "image_id", "sbert"]
TARGET = 1.05
BUFFER = 20_000


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


def global_permutation(path: str, batch_size: int) -> tuple[float, float]:
    """Seconds of epoch 1 (read included) and epoch 2 through `TableBatches`."""
    start = time.perf_counter()
    batches = TableBatches(pq.ParquetDataset(path).read(columns=COLUMNS), batch_size, seed=0)
    times = []
    for epoch in (1, 2):
        for rows in batches.epoch_batches(epoch):
            np.stack(list(rows["sbert"]))
        times.append(time.perf_counter() - start)
        start = time.perf_counter()
    return times[0], times[1]


def shuffle_buffer(path: str, batch_size: int) -> tuple[float, float]:
    """Seconds of epoch 1 (read included) and epoch 2 of a Ray Data stream with a local shuffle buffer."""
    start = time.perf_counter()
    dataset = ray.data.read_parquet(path, columns=COLUMNS, partitioning=None).materialize()
    times = []
    for epoch in (1, 2):
        for rows in dataset.iter_batches(
            batch_size=batch_size,
            batch_format="numpy",
            drop_last=True,
            local_shuffle_buffer_size=BUFFER,
            local_shuffle_seed=epoch,
        ):
            np.stack(list(rows["sbert"]))
        times.append(time.perf_counter() - start)
        start = time.perf_counter()
    return times[0], times[1]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100_000, help="captions written (without --data)")
    parser.add_argument("--shards", type=int, default=16, help="Parquet files written (without --data)")
    parser.add_argument("--data", help="a precompute output: read its captions/split=train instead")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3, help="rounds per source (alternated)")
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of the local one-node Ray")
    args = parser.parse_args()
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    sources = {"global permutation": global_permutation, "Ray Data + shuffle buffer": shuffle_buffer}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in sources}
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(args.data) / "captions" / "split=train") if args.data else tmp
        if not args.data:
            write_shards(Path(tmp), args.rows, args.shards)
        rows = pq.ParquetDataset(path).read(columns=["image_id"]).num_rows
        for _ in range(args.repeats):
            for name, source in sources.items():
                times[name].append(source(path, args.batch_size))
    print(f"{rows} captions, batch {args.batch_size}, {args.cpus} CPUs, {args.repeats} rounds (medians)")
    for name, values in times.items():
        first = statistics.median(v[0] for v in values)
        second = statistics.median(v[1] for v in values)
        print(f"{name:<28} epoch 1 (with read) {first:6.2f} s   epoch 2 {second:6.2f} s")
    (ours, ref) = ([statistics.median(v[i] for v in values) for i in (0, 1)] for values in times.values())
    for i, label in enumerate(("epoch 1", "epoch 2")):
        print(f"global / buffer, {label}: {ours[i] / ref[i]:.2f}x")
    worst = max(ours[i] / ref[i] for i in (0, 1))
    print(f"target <= {TARGET:.2f}x: {'met' if worst <= TARGET else 'NOT met'}")
    ray.shutdown()


if __name__ == "__main__":
    main()
