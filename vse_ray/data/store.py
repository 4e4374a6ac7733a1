"""Readers of a precompute folder (see :mod:`vse_ray.data.schema` for the layout), plain pyarrow and numpy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from vse_ray.data.schema import region_arrays, vectors


def _table_dir(data_dir: str, table: str, split: str) -> Path:
    root = Path(data_dir) / table
    path = root / f"split={split}"
    if not path.is_dir():
        have = sorted(p.name.removeprefix("split=") for p in root.glob("split=*")) if root.is_dir() else []
        raise ValueError(f"split {split!r} does not exist in {root}; it has {have}")
    return path


def load_manifest(data_dir: str) -> dict:
    """The parsed ``manifest.json``; ValueError when the folder holds no finished precompute."""
    path = Path(data_dir) / "manifest.json"
    if not path.is_file():
        raise ValueError(f"{path} does not exist: run `vse-ray precompute --out {data_dir}` first")
    return json.loads(path.read_text())


def read_features_table(data_dir: str, split: str, columns: list[str]) -> pa.Table:
    """Columns of a split's ``features`` table from its Parquet or Arrow IPC (region) shards;
    ValueError naming the folder when a column is missing."""
    folder = _table_dir(data_dir, "features", split)
    file_format = "arrow" if any(folder.glob("part-*.arrow")) else "parquet"
    dataset = pads.dataset(folder, format=file_format)
    missing = [c for c in columns if c not in dataset.schema.names]
    if missing:
        raise ValueError(f"{folder}: no column(s) {missing}; it has {dataset.schema.names}")
    return dataset.to_table(columns=columns)


def load_features(data_dir: str, split: str) -> tuple[np.ndarray, np.ndarray]:
    """``(image_ids (n,) int64, features)`` sorted by ``image_id``, all in memory: (n, D) float32 pooled
    features, or (n, R, D) region features in their stored dtype (Arrow IPC shards)."""
    table = read_features_table(data_dir, split, ["image_id", "feature"])
    nested = pa.types.is_fixed_size_list(table.schema.field("feature").type.value_type)
    features = region_arrays(table["feature"]) if nested else vectors(table["feature"])
    order = np.argsort(table["image_id"].to_numpy(), kind="stable")
    return table["image_id"].to_numpy().astype(np.int64)[order], features[order]


def load_captions(data_dir: str, split: str) -> pa.Table:
    """The ``captions`` table of a split, sorted by ``caption_id``."""
    table = pq.read_table(_table_dir(data_dir, "captions", split))
    return table.sort_by("caption_id")


def load_relevance(data_dir: str, split: str, source: str) -> np.ndarray:
    """(n_images, n_captions) float32 matrix (rows: ascending image_id, columns: ascending caption_id)."""
    path = Path(data_dir) / "relevance" / split / f"{source}.npy"
    if not path.is_file():
        have = sorted(p.stem for p in path.parent.glob("*.npy")) if path.parent.is_dir() else []
        raise ValueError(f"{path} does not exist; {split!r} has relevance sources {have}")
    return np.load(path)


def load_vocab(data_dir: str) -> dict:
    """``{word: id}`` of ``vocab.json`` (0=<pad>, 1=<unk>, 2=<start>, 3=<end>)."""
    path = Path(data_dir) / "vocab.json"
    if not path.is_file():
        raise ValueError(f"{path} does not exist: run `vse-ray precompute --out {data_dir}` first")
    return json.loads(path.read_text())
