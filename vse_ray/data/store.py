"""Readers of a precompute folder (see :mod:`vse_ray.data.schema` for the layout), plain pyarrow and numpy."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from vse_ray.data.schema import vectors


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
    """``(image_ids (n,) int64, features (n, D) float32)`` sorted by ``image_id``.

    Region features of precomp folders (stored flattened) come back as (n, R, D), per the manifest.
    """
    table = pq.read_table(_table_dir(data_dir, "features", split), columns=["image_id", "feature"])
    order = np.argsort(table["image_id"].to_numpy(), kind="stable")
    features = vectors(table["feature"])[order]
    manifest = Path(data_dir) / "manifest.json"
    shape = json.loads(manifest.read_text())["dims"]["feature_shape"] if manifest.is_file() else None
    if shape and len(shape) > 1:
        features = features.reshape(len(features), *shape)
    return table["image_id"].to_numpy().astype(np.int64)[order], features


def load_captions(data_dir: str, split: str) -> pa.Table:
    """The ``captions`` table of a split, sorted by ``caption_id``."""
    table = pq.read_table(_table_dir(data_dir, "captions", split))
    return table.sort_by("caption_id")


def relevance_folder(data_dir: str, split: str, source: str) -> Path:
    """``relevance/<split>/<source>``; ValueError naming the sources the split has when it is missing."""
    path = Path(data_dir) / "relevance" / split / source
    if not path.is_dir():
        have = relevance_sources(data_dir, split)
        raise ValueError(f"{path} does not exist; {split!r} has relevance sources {have}")
    return path


def relevance_sources(data_dir: str, split: str) -> list[str]:
    """Relevance sources stored for ``split`` (sorted)."""
    folder = Path(data_dir) / "relevance" / split
    return (
        sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
        if (folder.is_dir())
        else []
    )


def iter_relevance(
    data_dir: str, split: str, source: str, chunk_rows: int = 256
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(image_ids (k,), rows (k, n_captions) float32)`` chunks of a relevance matrix, in row order."""
    for path in sorted(relevance_folder(data_dir, split, source).glob("part-*.parquet")):
        for batch in pq.ParquetFile(path).iter_batches(batch_size=chunk_rows):
            yield batch["image_id"].to_numpy(), vectors(batch["relevance"])


def load_relevance(data_dir: str, split: str, source: str, chunk_rows: int = 256) -> np.ndarray:
    """(n_images, n_captions) float32 matrix (rows: ascending image_id, columns: ascending caption_id),
    filled chunk by chunk (peak memory: the matrix plus one chunk)."""
    files = sorted(relevance_folder(data_dir, split, source).glob("part-*.parquet"))
    n_rows = sum(pq.read_metadata(f).num_rows for f in files)
    width = pq.read_schema(files[0]).field("relevance").type.list_size if files else 0
    out = np.empty((n_rows, width), dtype=np.float32)
    start = 0
    for _, rows in iter_relevance(data_dir, split, source, chunk_rows):
        out[start : start + len(rows)] = rows
        start += len(rows)
    return out


def load_vocab(data_dir: str) -> dict:
    """``{word: id}`` of ``vocab.json`` (0=<pad>, 1=<unk>, 2=<start>, 3=<end>)."""
    path = Path(data_dir) / "vocab.json"
    if not path.is_file():
        raise ValueError(f"{path} does not exist: run `vse-ray precompute --out {data_dir}` first")
    return json.loads(path.read_text())
