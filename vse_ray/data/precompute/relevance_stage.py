"""Stage 1c: full query x gallery relevance matrices of the evaluation splits, written as Parquet row shards.

``relevance/<split>/<source>/part-<row>.parquet`` holds rows of the (n_images, n_captions) float32 matrix:
one row per image (``image_id``, ascending), its relevance to every caption of the split as
``relevance: fixed_size_list<float32>[n_captions]`` (columns ascending ``caption_id``, the order of
:func:`~vse_ray.data.store.readers.load_captions`). A source's folder appears only once all its shards are
written.
``R[i, j]`` is:

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
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import ray
import torch

from vse_ray.data.store.readers import load_captions, read_features_table
from vse_ray.data.store.schema import relevance_table, vectors
from vse_ray.data.store.shards import part_name, write_atomic
from vse_ray.relevance import (
    CiderDocFreq,
    cider_doc_freq,
    cider_matrix,
    scene_similarity,
    spice_matrix,
    tokenize,
)
from vse_ray.relevance.sources import SOURCES

EVAL_SPLITS = ("val", "test")


def image_of_caption(image_ids: np.ndarray, caption_image_ids: np.ndarray) -> np.ndarray:
    """Row index (in ``image_ids``, sorted ascending) of each caption's image."""
    return np.searchsorted(image_ids, caption_image_ids)


def mean_cosine(
    caption_vectors: np.ndarray, img_of_cap: np.ndarray, n_images: int
) -> Callable[[slice], np.ndarray]:
    """Row blocks of ``R[i, j] = mean_{r in refs(i)} cos(v_r, v_j)`` for L2-normalised (or zero) vectors."""
    sums = np.zeros((n_images, caption_vectors.shape[1]), dtype=np.float64)
    np.add.at(sums, img_of_cap, caption_vectors)
    means = (sums / np.bincount(img_of_cap, minlength=n_images)[:, None]).astype(np.float32)
    return lambda rows: means[rows] @ caption_vectors.T


def scene_rows(
    descriptors: np.ndarray, img_of_cap: np.ndarray, n_images: int
) -> Callable[[slice], np.ndarray]:
    """Row blocks of ``R[i, j] = S(scene of image i, scene of caption j's image)``."""
    caption_of_image = np.zeros(n_images, dtype=np.int64)
    caption_of_image[img_of_cap] = np.arange(len(img_of_cap))  # any caption: all carry their image's scene
    per_image = torch.from_numpy(np.ascontiguousarray(descriptors[caption_of_image]))

    def rows_of(rows: slice) -> np.ndarray:
        return scene_similarity(per_image[rows], per_image).numpy()[:, img_of_cap]

    return rows_of


@ray.remote
def _cider_rows(hypotheses: list[str], references: list[list[str]], doc_freq: CiderDocFreq) -> np.ndarray:
    """Rows of the CIDEr matrix for a block of images (doc_freq of the whole split keeps them exact)."""
    return cider_matrix(hypotheses, references, doc_freq).T.astype(np.float32)


def write_row_blocks(
    folder: Path, image_ids: np.ndarray, n_captions: int, blocks: Iterable[tuple[slice, np.ndarray]]
) -> None:
    """Write one Parquet shard per row block into a hidden folder, renamed to ``folder`` once complete."""
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    for rows, block in blocks:
        write_atomic(relevance_table(image_ids[rows], block, n_captions), tmp / part_name(rows.start or 0))
    if not tmp.exists():  # no image rows
        empty = relevance_table(image_ids[:0], np.zeros((0, n_captions)), n_captions)
        write_atomic(empty, tmp / part_name(0))
    os.replace(tmp, folder)


def _row_slices(n: int, block: int) -> list[slice]:
    return [slice(start, min(start + block, n)) for start in range(0, n, block)]


def split_relevance(out: Path, split: str, sources: tuple[str, ...], block: int) -> dict[str, str]:
    """Write the missing matrices of one split; returns ``{source: reason}`` for sources that were skipped."""
    image_ids = np.sort(read_features_table(str(out), split, ["image_id"])["image_id"].to_numpy())
    captions = load_captions(str(out), split)
    img_of_cap = image_of_caption(image_ids, captions["image_id"].to_numpy())
    shape = (len(image_ids), captions.num_rows)
    slices = _row_slices(shape[0], block)
    texts = [tokenize(t) for t in captions["text"].to_pylist()]
    references: list[list[str]] = [[] for _ in image_ids]
    for row, text in zip(img_of_cap.tolist(), texts, strict=True):
        references[row].append(text)
    skipped = {}
    for source in sources:
        folder = out / "relevance" / split / source
        if folder.exists():
            continue
        folder.parent.mkdir(parents=True, exist_ok=True)
        kind, column = SOURCES[source].batch, SOURCES[source].column
        if kind == "cosine":  # image i's row: mean cosine of its captions' vectors
            rows_of = mean_cosine(vectors(captions[column]), img_of_cap, shape[0])
            write_row_blocks(folder, image_ids, shape[1], ((rows, rows_of(rows)) for rows in slices))
        elif kind == "scene":
            if column not in captions.column_names:
                raise ValueError(f"{out / 'captions'}: no {column!r} column; only synthetic data has scenes")
            rows_of = scene_rows(vectors(captions[column]), img_of_cap, shape[0])
            write_row_blocks(folder, image_ids, shape[1], ((rows, rows_of(rows)) for rows in slices))
        elif kind == "cider" and len(slices) == 1:  # one block: no task start-up cost
            write_row_blocks(folder, image_ids, shape[1], [(slices[0], cider_matrix(texts, references).T)])
        elif kind == "cider":
            hyps, doc_freq = ray.put(texts), ray.put(cider_doc_freq(references))
            refs = [(rows, _cider_rows.remote(hyps, references[rows], doc_freq)) for rows in slices]
            write_row_blocks(folder, image_ids, shape[1], ((rows, ray.get(ref)) for rows, ref in refs))
        else:
            try:
                matrix = spice_matrix(texts, references).T
            except RuntimeError as err:
                skipped[source] = str(err)
                continue
            write_row_blocks(folder, image_ids, shape[1], ((rows, matrix[rows]) for rows in slices))
    return skipped


def run_relevance_stage(
    out: Path, splits: tuple[str, ...], sources: tuple[str, ...], block: int
) -> dict[str, str]:
    """Matrices of every evaluation split in ``splits``; returns skip reasons (e.g. SPICE without Java)."""
    skipped = {}
    for split in (s for s in splits if s in EVAL_SPLITS):
        skipped.update({f"{split}/{k}": v for k, v in split_relevance(out, split, sources, block).items()})
    return skipped
