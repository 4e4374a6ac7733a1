"""Readers of a precompute folder (see :mod:`vse_ray.data.schema` for the layout), plain pyarrow and numpy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
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


def load_features(data_dir: str, split: str) -> tuple[np.ndarray, np.ndarray]:
    """``(image_ids (n,) int64, features)`` sorted by ``image_id``, all in memory: (n, D) float32 pooled
    features, or (n, R, D) region features in their stored dtype (Arrow IPC shards)."""
    folder = _table_dir(data_dir, "features", split)
    arrow = sorted(folder.glob("part-*.arrow"))
    if arrow:
        tables = [pa.ipc.open_file(pa.memory_map(str(p))).read_all() for p in arrow]
        table = pa.concat_tables(tables).select(["image_id", "feature"])
        features = region_arrays(table["feature"])
    else:
        table = pq.read_table(folder, columns=["image_id", "feature"])
        features = vectors(table["feature"])
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
