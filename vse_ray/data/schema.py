"""Arrow schemas of the precompute output tables, readable by plain pyarrow.

Layout of a precompute folder (``SCHEMA_VERSION`` 2)::

    manifest.json        written last: schema version, config and its hash, row counts, rows and sha256 of
                         every Parquet file (``shards``), relevance shapes, rejects
    vocab.json           {"word": id}; 0=<pad>, 1=<unk>, 2=<start>, 3=<end>; built from train captions only
    cider_df.json        CIDEr document frequencies of the train reference sets (CiderDocFreq.to_dict())
    tfidf_svd.npz        the TF-IDF + truncated SVD model fitted on train captions, arrays only: vocabulary,
                         idf, components, k, seed (TfidfSvd.save / TfidfSvd.load; no pickle)
    rejects.parquet      image_id, split, path, reason of every image that could not be loaded
    features/split=<split>/part-<row>.parquet   FEATURES columns, one row per image
    captions/split=<split>/part-<row>.parquet   CAPTIONS columns, one row per caption (synthetic data: plus
                                               ``scene``, the descriptor of the caption's image)
    relevance/<split>/<source>/part-<row>.parquet
                         RELEVANCE columns for val/test, one row per image (ascending image_id) holding its
                         relevance to every caption of the split (ascending caption_id): the rows
                         ``<row>:<row + block>`` of the (n_images, n_captions) float32 matrix. Read it whole
                         with ``store.load_relevance``, in row chunks with ``store.iter_relevance``, or with
                         ``pyarrow.parquet.read_table`` / ``ray.data.read_parquet`` on the source folder.

``<row>`` is the index (within the split) of the shard's first row, so file names are the same on every run.
Vectors are ``fixed_size_list<float32>[D]``; ``split`` is dictionary-encoded strings so that reading the
whole ``features/`` folder merges it with the hive partition key ``split=<split>``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

SCHEMA_VERSION = 2
SPLIT_TYPE = pa.dictionary(pa.int32(), pa.string())


def features_schema(dim: int, with_image: bool) -> pa.Schema:
    """``image_id`` int64, ``split``, ``feature`` fixed_size_list<float32>[dim], optional ``image`` PNG."""
    fields = [("image_id", pa.int64()), ("split", SPLIT_TYPE), ("feature", pa.list_(pa.float32(), dim))]
    return pa.schema(fields + ([("image", pa.binary())] if with_image else []))


def captions_schema(sbert_dim: int, svd_dim: int, scene_dim: int | None = None) -> pa.Schema:
    """``caption_id``, ``image_id`` int64, ``split``, ``text``, ``tokens`` list<int32>, ``sbert``, ``svd``,
    and ``scene`` fixed_size_list<float32>[scene_dim] when the dataset has scene descriptors."""
    fields = [
        ("caption_id", pa.int64()),
        ("image_id", pa.int64()),
        ("split", SPLIT_TYPE),
        ("text", pa.string()),
        ("tokens", pa.list_(pa.int32())),
        ("sbert", pa.list_(pa.float32(), sbert_dim)),
        ("svd", pa.list_(pa.float32(), svd_dim)),
    ]
    if scene_dim is not None:
        fields.append(("scene", pa.list_(pa.float32(), scene_dim)))
    return pa.schema(fields)


def fixed_size_list(matrix: np.ndarray) -> pa.FixedSizeListArray:
    """(n, D) array → ``fixed_size_list<float32>[D]`` (flattened, no copy when already float32 C-order)."""
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    if matrix.ndim != 2:
        raise ValueError(f"expected a (n, D) matrix, got shape {matrix.shape}")
    return pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), matrix.shape[1])


def vectors(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """``fixed_size_list<float32>[D]`` column → (n, D) float32 array."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    width = column.type.list_size
    return column.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(-1, width)


def features_table(batch: dict[str, np.ndarray], with_image: bool) -> pa.Table:
    """Kept rows of a batch in the ``features`` schema (vectors of any shape are flattened)."""
    feature = np.asarray(batch["feature"], dtype=np.float32)
    columns = [
        pa.array(np.asarray(batch["image_id"], dtype=np.int64)),
        pa.array(np.asarray(batch["split"], dtype=str)).cast(SPLIT_TYPE),
        fixed_size_list(feature.reshape(len(feature), -1)),
    ]
    if with_image:
        columns.append(pa.array(list(batch["image"]), type=pa.binary()))
    return pa.Table.from_arrays(columns, schema=features_schema(int(np.prod(feature.shape[1:])), with_image))


def captions_table(batch: dict[str, np.ndarray]) -> pa.Table:
    """Rows of a batch in the ``captions`` schema."""
    sbert, svd = np.asarray(batch["sbert"], dtype=np.float32), np.asarray(batch["svd"], dtype=np.float32)
    columns = [
        pa.array(np.asarray(batch["caption_id"], dtype=np.int64)),
        pa.array(np.asarray(batch["image_id"], dtype=np.int64)),
        pa.array(np.asarray(batch["split"], dtype=str)).cast(SPLIT_TYPE),
        pa.array(np.asarray(batch["text"], dtype=str)),
        pa.array([np.asarray(t, dtype=np.int32) for t in batch["tokens"]], type=pa.list_(pa.int32())),
        fixed_size_list(sbert),
        fixed_size_list(svd),
    ]
    scene_dim = None
    if "scene" in batch:
        scene = np.stack([np.asarray(row, dtype=np.float32) for row in batch["scene"]])
        columns.append(fixed_size_list(scene))
        scene_dim = scene.shape[1]
    return pa.Table.from_arrays(columns, schema=captions_schema(sbert.shape[1], svd.shape[1], scene_dim))


def relevance_schema(n_captions: int) -> pa.Schema:
    """``image_id`` int64, ``relevance`` fixed_size_list<float32>[n_captions] (one matrix row per image)."""
    return pa.schema([("image_id", pa.int64()), ("relevance", pa.list_(pa.float32(), n_captions))])


def relevance_table(image_ids: np.ndarray, rows: np.ndarray, n_captions: int) -> pa.Table:
    """Rows of a relevance matrix (k, n_captions) with their image ids, in the ``relevance`` schema."""
    values = fixed_size_list(np.asarray(rows, dtype=np.float32).reshape(len(image_ids), n_captions))
    return pa.Table.from_arrays(
        [pa.array(np.asarray(image_ids, dtype=np.int64)), values], schema=relevance_schema(n_captions)
    )
