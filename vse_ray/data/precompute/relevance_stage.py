"""Stage 1c: full query x gallery relevance matrices of the evaluation splits, written as Parquet row shards.

``relevance/<split>/<source>/part-<row>.parquet`` holds rows of the (n_images, n_captions) float32 matrix:
one row per image (``image_id``, ascending), its relevance to every caption of the split as
``relevance: fixed_size_list<float32>[n_captions]`` (columns ascending ``caption_id``, the order of
:func:`~vse_ray.data.store.readers.load_captions`). A source's folder appears only once all its shards are
written. Each source builds its rows (`RelevanceSource.evaluation_rows`); ``R[i, j]`` is:

- ``sbert`` / ``svd``: the mean cosine between caption j and the reference captions of image i (the
  ladder loss relevance, eq. 1, averaged over the image's captions);
- ``cider``: CIDEr-D of caption j against the reference captions of image i (SAM/NCS ``N_ij``), with
  document frequencies counted over the reference sets of the split itself, as pycocoevalcap does for
  the images it scores (not the train frequencies of ``cider_df.json``);
- ``spice``: SPICE of caption j against the references of image i (needs Java and CoreNLP);
- ``scene``: the structural similarity (:func:`~vse_ray.relevance.scene.scene_similarity`) of the scene of
  image i and the scene of caption j's image (synthetic data: descriptors in the captions' ``scene`` column).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import ray

from vse_ray.data.store.readers import load_captions, read_features_table
from vse_ray.data.store.schema import relevance_table
from vse_ray.data.store.shards import part_name, write_atomic
from vse_ray.relevance import tokenize
from vse_ray.relevance.sources import SOURCES, EvaluationSplit, Rows, SourceUnavailable

EVAL_SPLITS = ("val", "test")


def image_of_caption(image_ids: np.ndarray, caption_image_ids: np.ndarray) -> np.ndarray:
    """Row index (in ``image_ids``, sorted ascending) of each caption's image."""
    return np.searchsorted(image_ids, caption_image_ids)


@ray.remote
def _rows_task(rows_of: Rows, rows: slice) -> np.ndarray:
    """One row block of a source's matrix in a Ray task (``rows_of`` is put in the object store once)."""
    return rows_of(rows)


def write_row_blocks(
    folder: Path, image_ids: np.ndarray, n_captions: int, blocks: Iterable[tuple[slice, np.ndarray]]
) -> None:
    """Write one Parquet shard per row block into a hidden folder, renamed to ``folder`` once complete (the
    hidden folder is removed when the write fails)."""
    for stale in folder.parent.glob(f".{folder.name}.*.tmp"):  # of a write that was killed
        shutil.rmtree(stale)
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    try:
        for rows, block in blocks:
            table = relevance_table(image_ids[rows], block, n_captions)
            write_atomic(table, tmp / part_name(rows.start or 0))
        if not tmp.exists():  # no image rows
            empty = relevance_table(image_ids[:0], np.zeros((0, n_captions)), n_captions)
            write_atomic(empty, tmp / part_name(0))
        os.replace(tmp, folder)
    except BaseException:  # a full disk, Ctrl-C: no partial folder is left
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _row_slices(n: int, block: int) -> list[slice]:
    return [slice(start, min(start + block, n)) for start in range(0, n, block)]


def split_relevance(out: Path, split: str, sources: tuple[str, ...], block: int) -> dict[str, str]:
    """Write the missing matrices of one split; returns ``{source: reason}`` for sources that were skipped."""
    image_ids = np.sort(read_features_table(str(out), split, ["image_id"])["image_id"].to_numpy())
    captions = load_captions(str(out), split)
    img_of_cap = image_of_caption(image_ids, captions["image_id"].to_numpy())
    texts = [tokenize(t) for t in captions["text"].to_pylist()]
    references: list[list[str]] = [[] for _ in image_ids]
    for row, text in zip(img_of_cap.tolist(), texts, strict=True):
        references[row].append(text)
    data = EvaluationSplit(str(out / "captions"), captions, image_ids, img_of_cap, texts, references)
    slices = _row_slices(len(image_ids), block)
    skipped = {}
    for name in sources:
        folder = out / "relevance" / split / name
        if folder.exists():
            continue
        folder.parent.mkdir(parents=True, exist_ok=True)
        source = SOURCES[name]
        try:
            rows_of = source.evaluation_rows(data)
        except SourceUnavailable as err:
            skipped[name] = str(err)
            continue
        if source.rows_in_tasks and len(slices) > 1:
            shared = ray.put(rows_of)
            tasks = [(rows, _rows_task.remote(shared, rows)) for rows in slices]
            blocks: Iterable[tuple[slice, np.ndarray]] = ((rows, ray.get(task)) for rows, task in tasks)
        else:
            blocks = ((rows, rows_of(rows)) for rows in slices)
        write_row_blocks(folder, image_ids, captions.num_rows, blocks)
    return skipped


def run_relevance_stage(
    out: Path, splits: tuple[str, ...], sources: tuple[str, ...], block: int
) -> dict[str, str]:
    """Matrices of every evaluation split in ``splits``; returns skip reasons (e.g. SPICE without Java)."""
    skipped = {}
    for split in (s for s in splits if s in EVAL_SPLITS):
        skipped.update({f"{split}/{k}": v for k, v in split_relevance(out, split, sources, block).items()})
    return skipped
