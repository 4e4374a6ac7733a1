"""Readers of a precompute folder (layout: :mod:`vse_ray.data.store.schema`), plain pyarrow and numpy."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from vse_ray.arrow_columns import vectors
from vse_ray.data.store.schema import region_arrays

VOCAB_FILE = "vocab.json"


def _table_dir(data_dir: str, table: str, split: str) -> Path:
    root = Path(data_dir) / table
    path = root / f"split={split}"
    if not path.is_dir():
        have = sorted(p.name.removeprefix("split=") for p in root.glob("split=*")) if root.is_dir() else []
        raise ValueError(f"split {split!r} does not exist in {root}; it has {have}")
    return path


def shard_format(folder: Path) -> str:
    """The file format of a table folder's shards: "arrow" for Arrow IPC (region features; captions since
    schema version 3), else "parquet"."""
    return "arrow" if any(folder.glob("part-*.arrow")) else "parquet"


def table_schema(data_dir: str, table: str, split: str) -> pa.Schema:
    """The schema of a split's ``features`` or ``captions`` table, from its shards' metadata."""
    folder = _table_dir(data_dir, table, split)
    return pads.dataset(folder, format=shard_format(folder)).schema


def _dataset_with(folder: Path, columns: Sequence[str]) -> pads.Dataset:
    """The dataset of a table folder's shards; ValueError naming the folder when a column is missing."""
    dataset = pads.dataset(folder, format=shard_format(folder))
    missing = [c for c in columns if c not in dataset.schema.names]
    if missing:
        raise ValueError(f"{folder}: no column(s) {missing}; it has {dataset.schema.names}")
    return dataset


def load_manifest(data_dir: str) -> dict:
    """The parsed ``manifest.json``; ValueError when the folder holds no finished precompute."""
    path = Path(data_dir) / "manifest.json"
    if not path.is_file():
        raise ValueError(f"{path} does not exist: run `vse-ray precompute --out {data_dir}` first")
    return json.loads(path.read_text())


def vocab_mismatch(rows: int, data_dir: str, mask_row: bool = False) -> str | None:
    """Why a word embedding of `rows` rows cannot read the token ids of `data_dir`, or None when it can:
    one row per id of the folder's vocabulary (`mask_row`: or one more, VSE∞'s ``<mask>``)."""
    ids = max(load_vocab(data_dir).values()) + 1
    if rows == ids or (mask_row and rows == ids + 1):
        return None
    expected = f"{ids} or {ids + 1} (with <mask>)" if mask_row else str(ids)
    return (
        f"word embedding of {rows} rows, but {Path(data_dir) / VOCAB_FILE} holds {ids} ids (expected "
        f"{expected}); precompute the data with the model's vocabulary (`precompute --vocab FILE`)"
    )


def read_features_table(data_dir: str, split: str, columns: list[str]) -> pa.Table:
    """Columns of a split's ``features`` table from its Parquet or Arrow IPC (region) shards;
    ValueError naming the folder when a column is missing."""
    return _dataset_with(_table_dir(data_dir, "features", split), columns).to_table(columns=columns)


def load_features(data_dir: str, split: str) -> tuple[np.ndarray, np.ndarray]:
    """``(image_ids (n,) int64, features)`` sorted by ``image_id``, all in memory: (n, D) float32 pooled
    features, or (n, R, D) region features in their stored dtype (Arrow IPC shards)."""
    table = read_features_table(data_dir, split, ["image_id", "feature"])
    nested = pa.types.is_fixed_size_list(table.schema.field("feature").type.value_type)
    features = region_arrays(table["feature"]) if nested else vectors(table["feature"])
    order = np.argsort(table["image_id"].to_numpy(), kind="stable")
    return table["image_id"].to_numpy().astype(np.int64)[order], features[order]


def load_captions(data_dir: str, split: str, columns: Sequence[str] | None = None) -> pa.Table:
    """The ``captions`` table of a split (only ``columns``, in that order, when given), sorted by
    ``caption_id``; ValueError naming the folder when a column is missing.

    Arrow IPC shards are memory-mapped, not read: the table's columns are views of the files, so a
    training process holds none of the split's vectors (3-4 KB a caption, 566k captions in COCO) in its
    own memory, and the page cache serves every process of a node. Parquet shards (folders of schema
    version 2) are read, only the columns asked for, one chunk a column."""
    folder = _table_dir(data_dir, "captions", split)
    read = None
    if columns is not None:
        _dataset_with(folder, columns)
        read = list(dict.fromkeys(["caption_id", *columns]))
    if shard_format(folder) == "arrow":
        shards = [
            pa.ipc.open_file(pa.memory_map(str(p))).read_all() for p in sorted(folder.glob("part-*.arrow"))
        ]
        table = pa.concat_tables(shards).select(read) if read else pa.concat_tables(shards)
    else:
        table = pq.read_table(folder, columns=read)
        # one contiguous chunk a column (batches index rows without copies), one column at a time
        for index, name in enumerate(table.column_names):
            table = table.set_column(index, name, table[name].combine_chunks())
    ids = table["caption_id"].to_numpy()
    if not bool((ids[1:] > ids[:-1]).all()):  # precompute writes them in order: a sort copies every column
        table = table.sort_by("caption_id")
    return table if columns is None else table.select(list(columns))


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


def load_relevance(
    data_dir: str,
    split: str,
    source: str,
    chunk_rows: int = 256,
    rows: int | None = None,
    columns: np.ndarray | None = None,
) -> np.ndarray:
    """(n_images, n_captions) float32 matrix (rows: ascending image_id, columns: ascending caption_id),
    filled chunk by chunk (peak memory: the matrix plus one chunk); only its first `rows` rows and the
    `columns` (caption positions) when given."""
    files = sorted(relevance_folder(data_dir, split, source).glob("part-*.parquet"))
    n_rows = sum(pq.read_metadata(f).num_rows for f in files)
    n_rows = n_rows if rows is None else min(rows, n_rows)
    width = pq.read_schema(files[0]).field("relevance").type.list_size if files else 0
    out = np.empty((n_rows, width if columns is None else len(columns)), dtype=np.float32)
    start = 0
    for _, block in iter_relevance(data_dir, split, source, chunk_rows):
        if start >= n_rows:
            break
        block = block[: n_rows - start]
        out[start : start + len(block)] = block if columns is None else block[:, columns]
        start += len(block)
    return out


def load_vocab(data_dir: str) -> dict:
    """``{word: id}`` of ``vocab.json`` (vse_ray's own: 0=<pad>, 1=<unk>, 2=<start>, 3=<end>; a released
    vocabulary given to precompute keeps its ids: 0=<pad>, 1=<start>, 2=<end>, 3=<unk>)."""
    path = Path(data_dir) / VOCAB_FILE
    if not path.is_file():
        raise ValueError(f"{path} does not exist: run `vse-ray precompute --out {data_dir}` first")
    return json.loads(path.read_text())
