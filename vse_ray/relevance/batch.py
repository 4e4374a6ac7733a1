"""The (B, B) relevance matrix of one training batch, built on the fly by the loss's relevance source."""

from __future__ import annotations

from typing import Any

import torch

from vse_ray.relevance.sources import SOURCES, TRAINING_SOURCES


def batch_relevance(source: str, inputs: Any) -> torch.Tensor:
    """Relevance of every batch caption (columns) to every batch image (rows).

    Args:
        source: A training source (:data:`~vse_ray.relevance.sources.TRAINING_SOURCES`): ``"sbert"``
            (ladder, BCLS), ``"svd"`` (LSEH), ``"cider"`` (SAM) or ``"scene"`` (the synthetic data's
            structural scene similarity, any graded loss).
        inputs: What the source builds it from (`RelevanceSource.batch_inputs`): the (B, d) caption
            vectors (``"sbert"``, ``"svd"``), the (B, D) scene descriptors of the captions' images
            (``"scene"``), or a :class:`~vse_ray.relevance.cider_vectors.CiderBatch` (``"cider"``).

    Returns:
        (B, B) tensor; the diagonal holds the positive pairs. Cosine sources keep the input's
        dtype and device, ``"scene"`` is float32 on the input's device, ``"cider"`` is float64 on the
        CPU (:func:`~vse_ray.relevance.cider_batch.cider_batch_matrix`).

    Raises:
        ValueError: For an unknown ``source``, a missing input or mismatched lengths.
    """
    if source not in TRAINING_SOURCES:
        raise ValueError(f"unknown relevance source {source!r}; expected one of {TRAINING_SOURCES}")
    return SOURCES[source].batch_matrix(inputs)
