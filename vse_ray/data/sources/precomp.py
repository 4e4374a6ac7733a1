"""VSE++/SCAN "precomp" folders: ``{split}_ims.npy`` features and ``{split}_caps.txt`` captions."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vse_ray.data.sources.source import PrecompFeatures, SplitSource, checked_captions, select_splits
from vse_ray.data.store.schema import check_float16_range

FILE_SPLITS = {"train": "train", "val": "dev", "test": "test"}  # our split name → precomp file prefix
_CHECK_ROWS = 4096


def _check_values(features: np.ndarray, path: Path, float16: bool) -> None:
    """ValueError naming the first row with NaN or inf (or, for float16 storage, beyond float16's range),
    scanning the memory map in chunks."""
    for start in range(0, len(features), _CHECK_ROWS):
        chunk = np.asarray(features[start : start + _CHECK_ROWS]).reshape(
            min(_CHECK_ROWS, len(features) - start), -1
        )
        bad = ~np.isfinite(chunk).all(axis=1)
        if bad.any():
            raise ValueError(f"{path}: row {start + int(bad.argmax())} has NaN or inf features")
        if float16:
            check_float16_range(chunk, f"{path} (feature_dtype float16)", start)


def _check_shapes(arrays: dict[str, tuple[Path, tuple[int, ...]]]) -> None:
    """ValueError naming two files whose rows differ in shape (region count R or width D), or a file
    whose rows are neither (D,) nor (R, D)."""
    for path, shape in arrays.values():
        if len(shape) not in (1, 2):
            raise ValueError(f"{path}: rows of shape {shape}; expected (D,) pooled or (R, D) regions")
    (first, shape), *rest = arrays.values()
    for path, other in rest:
        if other != shape:
            raise ValueError(
                f"{path}: rows of shape {other} (regions × width) differ from {first}: {shape}; "
                "every split needs the same region count and feature width"
            )


def load_npy(path: Path) -> np.ndarray:
    """The array of a ``.npy`` file, memory-mapped; ValueError naming the file when it is not one."""
    try:
        return np.load(path, mmap_mode="r")
    except (ValueError, OSError, EOFError) as err:
        if isinstance(err, FileNotFoundError):
            raise
        raise ValueError(f"{path}: not a readable .npy array ({err})") from err


def read_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 text file; ValueError naming the file and line of a byte that is not UTF-8."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8").splitlines()
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise ValueError(f"{path}: line {line} is not UTF-8 ({err.reason}); save the file as UTF-8") from None


def _read_split(
    folder: Path, prefix: str, per_image: int, first_id: int, float16: bool
) -> tuple[SplitSource, PrecompFeatures]:
    ims, caps = folder / f"{prefix}_ims.npy", folder / f"{prefix}_caps.txt"
    features = load_npy(ims)
    lines = read_lines(caps)
    if len(lines) % per_image:
        raise ValueError(f"{caps}: {len(lines)} lines is not a multiple of {per_image} captions per image")
    n = len(lines) // per_image
    if len(features) not in (n, n * per_image):
        raise ValueError(
            f"{ims}: {len(features)} rows do not match {caps} "
            f"({len(lines)} captions = {n} images x {per_image}); "
            f"expected {n} rows (one per image) or {n * per_image} (one per caption)"
        )
    _check_values(features, ims, float16 and features.ndim == 3)
    captions = checked_captions(
        [[c.strip() for c in lines[k * per_image : (k + 1) * per_image]] for k in range(n)],
        per_image,
        [f"{caps}: lines {k * per_image + 1}-{(k + 1) * per_image}" for k in range(n)],
    )
    source = SplitSource(
        image_ids=np.arange(first_id, first_id + n, dtype=np.int64),
        refs=np.arange(n).astype(str).astype(object),
        captions=captions,
        caption_ids=(
            np.arange(first_id, first_id + n, dtype=np.int64)[:, None] * per_image + np.arange(per_image)
        ),
    )
    return source, PrecompFeatures(path=str(ims), stride=len(features) // n if n else 1)


def read_precomp(
    folder: str,
    splits: Sequence[str],
    captions_per_image: int = 5,
    feature_dtype: str = "float32",
    test_file: str = "test",
) -> tuple[dict[str, SplitSource], dict[str, PrecompFeatures]]:
    """Read the captions and locate the features of each split (``val`` is the ``dev`` files, ``test`` the
    ``test_file`` ones: ``testall`` for COCO's 5,000 test images).

    ``{split}_ims.npy`` holds pooled (N, D) or region (N, R, D) features (SCAN's bottom-up regions: 36 ×
    2048), one row per image or per caption. Only the header and a chunked value scan are read here; the
    rows stream later through Ray Data (:func:`read_precomp_rows`).

    Image ids run over the splits in the order train, val, test (so they are unique across splits) and
    caption ``j`` of image ``i`` has id ``i * captions_per_image + j``.

    Raises:
        ValueError: Naming the file and row of a features/captions row-count mismatch, NaN/inf features,
            a value beyond float16 when ``feature_dtype`` is float16, an empty caption; naming the files
            whose region count or width differ between splits; or a requested split whose files are missing.
    """
    root = Path(folder)
    files = {**FILE_SPLITS, "test": test_file}
    available = [s for s, prefix in files.items() if (root / f"{prefix}_ims.npy").is_file()]
    chosen = select_splits(dict.fromkeys(available), splits, f"precomp folder {folder}")
    in_order = [s for s in files if s in chosen]
    paths = {s: root / f"{files[s]}_ims.npy" for s in in_order}
    _check_shapes({s: (p, load_npy(p).shape[1:]) for s, p in paths.items()})
    sources, features, next_id = {}, {}, 0
    for split in in_order:
        sources[split], features[split] = _read_split(
            root, files[split], captions_per_image, next_id, feature_dtype == "float16"
        )
        next_id += len(sources[split].image_ids)
    return {s: sources[s] for s in splits}, {s: features[s] for s in splits}


def read_precomp_rows(
    batch: dict[str, np.ndarray], *, features: dict[str, PrecompFeatures]
) -> dict[str, np.ndarray]:
    """Ray Data stage: the given features of each row (row ``ref * stride`` of its split's ``_ims.npy``),
    read from the memory map: one shard's rows at a time, never the whole array."""
    split = str(batch["split"][0])
    given = features[split]
    rows = np.asarray(batch["ref"]).astype(np.int64) * given.stride
    batch["feature"] = np.asarray(np.load(given.path, mmap_mode="r")[rows], dtype=np.float32)
    return batch
