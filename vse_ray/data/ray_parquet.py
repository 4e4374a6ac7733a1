"""A folder of Parquet shards as a Ray Dataset, read by Ray Data's file-based Parquet reader (V1)."""

from __future__ import annotations

import ray


def read_parquet_dataset(path: str, columns: list[str]) -> ray.data.Dataset:
    """`ray.data.read_parquet(path, columns)` through Ray Data's V1 Parquet datasource, materialised.

    Ray 2.60's default reader (DataSourceV2) lists the files through a pool of 32 footer-reading actors
    that it starts for every read. For a split's few dozen to few hundred shards that start-up is the whole
    cost (`benchmarks/bench_read_parquet.py`, README "Measured performance"). V1 reads the footers in the
    driver and the rows in read tasks.
    """
    context = ray.data.DataContext.get_current()
    previous, context.use_datasource_v2 = context.use_datasource_v2, False
    try:
        dataset = ray.data.read_parquet(path, columns=columns, partitioning=None)
    finally:
        context.use_datasource_v2 = previous
    return dataset.materialize()
