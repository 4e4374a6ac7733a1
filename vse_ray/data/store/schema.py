"""Arrow schemas of the precompute output tables, readable by plain pyarrow.

Layout of a precompute folder (``SCHEMA_VERSION`` 3)::

    manifest.json        written last: ``format`` ("vse_ray.precompute"), schema version, config and its
                         hash, row counts, rows and sha256 of every shard file (``shards``), sha256 of
                         vocab.json, cider_df.json and tfidf_svd.npz (``files``), relevance shapes, rejects
    vocab.json           {"word": id}; 0=<pad>, 1=<unk>, 2=<start>, 3=<end>; built from train captions only
    cider_df.json        CIDEr document frequencies of the train reference sets (CiderDocFreq.to_dict())
    tfidf_svd.npz        the TF-IDF + truncated SVD model fitted on train captions, arrays only: vocabulary,
                         idf, components, k, seed (TfidfSvd.save / TfidfSvd.load; no pickle)
    rejects.parquet      image_id, split, path, reason of every image that could not be loaded
    features/split=<split>/part-<row>.parquet   FEATURES columns, one row per image (pooled features, pixels)
    features/split=<split>/part-<row>.arrow     the same with a region axis: Arrow IPC files (see below)
    captions/split=<split>/part-<row>.arrow     CAPTIONS columns, one row per caption (synthetic data: plus
                                               ``scene``, the descriptor of the caption's image): Arrow IPC
                                               files (version 2 wrote them as Parquet; still read)
    relevance/<split>/<source>/part-<row>.parquet
                         RELEVANCE columns for val/test, one row per image (ascending image_id) holding its
                         relevance to every caption of the split (ascending caption_id): the rows
                         ``<row>:<row + block>`` of the (n_images, n_captions) float32 matrix. Read it whole
                         with ``store.load_relevance``, in row chunks with ``store.iter_relevance``, or with
                         ``pyarrow.parquet.read_table`` / ``ray.data.read_parquet`` on the source folder.
    image_embeddings/<model>-<hash>/split=<split>/part-00000000.parquet, cache.json
                         written later, by ``evaluate --image-cache`` or a locked-image ``train``: a frozen
                         image tower's embeddings (:mod:`vse_ray.evaluation.image_cache`); not in the manifest

``<row>`` is the index (within the split) of the shard's first row, so file names are the same on every run.
Vectors are ``fixed_size_list<float32>[D]``; ``split`` is dictionary-encoded strings so that reading the
whole ``features/`` folder merges it with the hive partition key ``split=<split>``.

Region features (SCAN's bottom-up regions, or a CNN's last convolution map as a grid of regions) keep their
region axis: ``feature`` is ``fixed_size_list<fixed_size_list<float32|float16>[D]>[R]``, one row per image,
and ``manifest.json`` records ``dims.regions`` = R, ``dims.feature`` = D and ``dims.feature_dtype``. These
tables are uncompressed Arrow IPC files of one record batch (``pyarrow.ipc.open_file`` or
``pyarrow.dataset.dataset(path, format="arrow")`` read them): each image's R × D values are one contiguous
run of bytes at a fixed offset, so training reads the rows of a batch straight from the file
(:mod:`vse_ray.data.store.region_rows`) instead of holding the split in memory, which Parquet's compressed,
encoded pages do not allow. float16 storage halves the size; a value beyond float16's range is an error.

Captions are uncompressed Arrow IPC files too: training memory-maps them
(:func:`vse_ray.data.store.readers.load_captions`) and reads a batch's rows out of the map, so the train
split's relevance vectors stay in the page cache, shared by a node's processes, and a process's own memory
does not grow with the split.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from vse_ray.arrow_columns import fixed_size_list
from vse_ray.relevance.sources import SOURCES

SCHEMA_VERSION = 3
READABLE_SCHEMA_VERSIONS = (2, 3)  # 2: captions as Parquet files, read into memory
SPLIT_TYPE = pa.dictionary(pa.int32(), pa.string())
IMAGE_CACHE_DIR, IMAGE_CACHE_FILE, IMAGE_CACHE_META = (
    "image_embeddings",
    "part-00000000.parquet",
    "cache.json",
)


FEATURE_DTYPES = {"float32": pa.float32(), "float16": pa.float16()}
FLOAT16_MAX = float(np.finfo(np.float16).max)


def features_schema(
    dim: int, with_image: bool, regions: int | None = None, dtype: str = "float32"
) -> pa.Schema:
    """``image_id`` int64, ``split``, ``feature``, optional ``image`` PNG.

    ``feature`` is fixed_size_list<float32>[dim] (pooled) or, with ``regions``,
    fixed_size_list<fixed_size_list<dtype>[dim]>[regions].
    """
    if regions is None:
        feature = pa.list_(pa.float32(), dim)
    else:
        feature = pa.list_(pa.list_(FEATURE_DTYPES[dtype], dim), regions)
    fields = [("image_id", pa.int64()), ("split", SPLIT_TYPE), ("feature", feature)]
    return pa.schema(fields + ([("image", pa.binary())] if with_image else []))


def check_float16_range(features: np.ndarray, where: str, first_row: int = 0) -> None:
    """ValueError naming ``where`` and the first row with a value float16 cannot hold (|x| > 65504)."""
    flat = np.abs(features.reshape(len(features), -1))
    bad = (flat > FLOAT16_MAX).any(axis=1)
    if bad.any():
        row = int(bad.argmax())
        raise ValueError(
            f"{where}: row {first_row + row} (shape {features.shape[1:]}) has |value| "
            f"{float(flat[row].max()):.6g} > {FLOAT16_MAX:.0f}, beyond float16; store float32"
        )


def region_list(features: np.ndarray, dtype: str) -> pa.FixedSizeListArray:
    """(n, R, D) array → ``fixed_size_list<fixed_size_list<dtype>[D]>[R]`` (float16 checked for overflow)."""
    if features.ndim != 3:
        raise ValueError(f"expected (n, R, D) region features, got shape {features.shape}")
    if dtype == "float16":
        check_float16_range(features, "region features")
    values = pa.array(np.ascontiguousarray(features, dtype=np.dtype(dtype)).reshape(-1))
    inner = pa.FixedSizeListArray.from_arrays(values, features.shape[2])
    return pa.FixedSizeListArray.from_arrays(inner, features.shape[1])


def region_arrays(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """``fixed_size_list<fixed_size_list<...>[D]>[R]`` column → (n, R, D) array in its stored dtype."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    regions, dim = column.type.list_size, column.type.value_type.list_size
    return column.flatten().flatten().to_numpy(zero_copy_only=False).reshape(-1, regions, dim)


def features_table(batch: dict[str, np.ndarray], with_image: bool, dtype: str = "float32") -> pa.Table:
    """Kept rows of a batch in the ``features`` schema: (n, D) pooled or (n, R, D) region features."""
    feature = np.asarray(batch["feature"])
    columns = [
        pa.array(np.asarray(batch["image_id"], dtype=np.int64)),
        pa.array(np.asarray(batch["split"], dtype=str)).cast(SPLIT_TYPE),
        region_list(feature, dtype) if feature.ndim == 3 else fixed_size_list(feature),
    ]
    if with_image:
        columns.append(pa.array(list(batch["image"]), type=pa.binary()))
    regions = feature.shape[1] if feature.ndim == 3 else None
    schema = features_schema(feature.shape[-1], with_image, regions, dtype)
    return pa.Table.from_arrays(columns, schema=schema)


def captions_table(batch: dict[str, np.ndarray]) -> pa.Table:
    """Rows of a batch in the ``captions`` schema: ``caption_id``, ``image_id`` int64, ``split``, ``text``,
    ``tokens`` list<int32>, then the caption columns of every relevance source that stores some
    (`RelevanceSource.store_arrays`; ``scene`` only when the dataset has scene descriptors)."""
    columns: list[tuple[str, pa.Array]] = [
        ("caption_id", pa.array(np.asarray(batch["caption_id"], dtype=np.int64))),
        ("image_id", pa.array(np.asarray(batch["image_id"], dtype=np.int64))),
        ("split", pa.array(np.asarray(batch["split"], dtype=str)).cast(SPLIT_TYPE)),
        ("text", pa.array(list(batch["text"]), type=pa.string())),  # as given: a NumPy str array cuts at NUL
        (
            "tokens",
            pa.array([np.asarray(t, dtype=np.int32) for t in batch["tokens"]], type=pa.list_(pa.int32())),
        ),
    ]
    for source in SOURCES.values():
        columns += source.store_arrays(batch)
    return pa.Table.from_arrays([array for _, array in columns], names=[name for name, _ in columns])


def relevance_schema(n_captions: int) -> pa.Schema:
    """``image_id`` int64, ``relevance`` fixed_size_list<float32>[n_captions] (one matrix row per image)."""
    return pa.schema([("image_id", pa.int64()), ("relevance", pa.list_(pa.float32(), n_captions))])


def relevance_table(image_ids: np.ndarray, rows: np.ndarray, n_captions: int) -> pa.Table:
    """Rows of a relevance matrix (k, n_captions) with their image ids, in the ``relevance`` schema."""
    values = fixed_size_list(np.asarray(rows, dtype=np.float32).reshape(len(image_ids), n_captions))
    return pa.Table.from_arrays(
        [pa.array(np.asarray(image_ids, dtype=np.int64)), values], schema=relevance_schema(n_captions)
    )
