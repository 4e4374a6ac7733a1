"""The (B, B) relevance matrix of one training batch, built on the fly from per-caption data."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from vse_ray.relevance.cider_batch import cider_batch_matrix
from vse_ray.relevance.cider_vectors import CiderBatch
from vse_ray.relevance.scene import scene_similarity
from vse_ray.relevance.sources import SOURCES, TRAINING_SOURCES

RELEVANCE_SOURCES = TRAINING_SOURCES  # the sources a loss can train on


def _caption_cosine(name: str, vectors: torch.Tensor | None) -> torch.Tensor:
    """``R[i, j] = cos(v_i, v_j)``: caption i stands for image i (ladder eq. 1, LSEH eq. 6)."""
    if vectors is None:
        raise ValueError(f"batch_relevance(source={name!r}) needs {name}= (B, d) caption vectors")
    if vectors.ndim != 2:
        raise ValueError(f"{name} must have shape (B, d), got {tuple(vectors.shape)}")
    unit = F.normalize(vectors, dim=1)
    return unit @ unit.T


def batch_relevance(
    source: str,
    *,
    sbert: torch.Tensor | None = None,
    svd: torch.Tensor | None = None,
    scene: torch.Tensor | None = None,
    cider: CiderBatch | None = None,
) -> torch.Tensor:
    """Relevance of every batch caption (columns) to every batch image (rows).

    Args:
        source: ``"sbert"`` (ladder, BCLS), ``"svd"`` (LSEH), ``"cider"`` (SAM) or ``"scene"`` (the
            synthetic data's structural scene similarity, any graded loss).
        sbert: (B, d) Sentence-BERT vectors of the batch captions, for ``"sbert"``.
        svd: (B, k) TF-IDF+SVD vectors of the batch captions, for ``"svd"``.
        scene: (B, D) scene descriptors of the batch captions' images, for ``"scene"``.
        cider: The batch captions' CIDEr-D vectors and their images' references, for ``"cider"``.

    Returns:
        (B, B) tensor; the diagonal holds the positive pairs. Cosine sources keep the input's
        dtype and device, ``"scene"`` is float32 on the input's device, ``"cider"`` is float64 on the
        CPU (:func:`~vse_ray.relevance.cider_batch.cider_batch_matrix`).

    Raises:
        ValueError: For an unknown ``source``, a missing input or mismatched lengths.
    """
    kind = SOURCES[source].batch if source in SOURCES else None
    if kind is None:
        raise ValueError(f"unknown relevance source {source!r}; expected one of {RELEVANCE_SOURCES}")
    vectors = {"sbert": sbert, "svd": svd, "scene": scene}.get(source)  # the source's caption vectors
    if kind == "cosine":
        return _caption_cosine(source, vectors)
    if kind == "scene":
        if vectors is None:
            raise ValueError(f"batch_relevance(source={source!r}) needs {source}= (B, D) scene descriptors")
        return scene_similarity(vectors, vectors)
    if cider is None:
        raise ValueError("batch_relevance(source='cider') needs cider= (a CiderBatch)")
    return cider_batch_matrix(cider)
