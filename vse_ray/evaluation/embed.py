"""Embed a whole split with a trained model and score it with every metric (`evaluate_all`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from vse_ray.data.store.split_data import SplitData, pad_tokens
from vse_ray.evaluation.pair_blocks import check_block_fits, free_memory_bytes, score_matrix
from vse_ray.metrics import evaluate_all
from vse_ray.models import RetrievalModel


def scoring_device() -> torch.device:
    """Where a driver embeds and scores a split: its GPU when it has one, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _pad_words(chunks: list[torch.Tensor]) -> torch.Tensor:
    """Concatenate caption representations; word features (B, L, E) are zero-padded to the longest L."""
    if chunks[0].dim() == 2:
        return torch.cat(chunks)
    longest = max(c.shape[1] for c in chunks)
    return torch.cat([F.pad(c, (0, 0, 0, longest - c.shape[1])) for c in chunks])


@torch.no_grad()
def split_similarities(
    model: RetrievalModel,
    split: SplitData,
    batch_size: int,
    device: torch.device,
    block: tuple[int, int] | None = None,
    progress: bool = False,
) -> np.ndarray:
    """`model.score` of every image × caption of the split: (n_images, n_captions) float32.

    Each side is encoded once (``batch_size`` rows at a time), the captions as ``model.caption_ids`` gives
    them (through ``model.encode_caption_split`` when the model encodes them with the split in view).
    Embedding models score (batch_size × all captions) blocks; similarity models, whose score is a learned
    function of each pair, go through ``score_matrix`` in memory-bounded ``block`` = (images,
    captions) blocks (None: sized automatically), a block that cannot fit being refused before anything is
    encoded.
    """
    n_img, n_cap = len(split.images.image_ids), len(split.tokens)
    caption_ids = model.caption_ids(split.tokens, split.texts)
    if model.kind == "similarity" and block is not None:
        fitted = (min(block[0], n_img), min(block[1], n_cap))
        longest = max(len(t) for t in caption_ids)
        check_block_fits(model, fitted, split.images.values.shape[1], longest, 4, free_memory_bytes(device))
    was_training = model.training
    model.eval()
    img = torch.cat(
        [
            model.encode_images(split.images.tensor_rows(slice(s, s + batch_size)).to(device))
            for s in range(0, n_img, batch_size)
        ]
    )
    padded = (pad_tokens(caption_ids[s : s + batch_size]) for s in range(0, n_cap, batch_size))
    batches = [(tokens.to(device), length.to(device)) for tokens, length in padded]
    txt_all = model.encode_caption_split(img, batches)
    if txt_all is None:
        txt_all = _pad_words([model.encode_captions(tokens, length) for tokens, length in batches])
    len_all = torch.cat([length for _, length in batches])
    if model.kind == "similarity":
        sims = score_matrix(model, img, txt_all, len_all, block, device, progress)
        model.train(was_training)
        return sims
    sims = np.empty((n_img, n_cap), dtype=np.float32)
    for i in range(0, n_img, batch_size):
        rows = slice(i, i + batch_size)
        sims[rows] = model.score(img[rows], txt_all, len_all).float().cpu().numpy()
    model.train(was_training)
    return sims


def ensemble_similarities(
    models: list[RetrievalModel],
    split: SplitData,
    batch_size: int,
    device: torch.device,
    block: tuple[int, int] | None = None,
    progress: bool = False,
) -> np.ndarray:
    """The mean of the members' score matrices: SGRAF's SGR + SAF (SGRAF*), SCAN's t-i + i-t (SCAN*)."""
    if not models:
        raise ValueError("ensemble: needs at least one model")
    total = split_similarities(models[0], split, batch_size, device, block, progress)
    for model in models[1:]:
        total += split_similarities(model, split, batch_size, device, block, progress)
    total /= np.float32(len(models))  # in place: no second matrix of the split
    return total


def evaluate_split(
    model: RetrievalModel,
    split: SplitData,
    batch_size: int,
    device: torch.device,
    metric_kwargs: dict[str, Any],
) -> dict[str, float]:
    """All retrieval metrics of the split, both directions, with every stored relevance matrix."""
    sims = split_similarities(model, split, batch_size, device)
    return evaluate_all(sims, split.img_of_cap, relevance=split.relevance or None, **metric_kwargs)
