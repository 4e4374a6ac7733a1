"""Query × gallery scores of a similarity model (SCAN, SGRAF) in memory-bounded blocks of pairs.

A similarity model scores each image-caption pair with a learned function, so COCO 5K (5,000 × 25,000 pairs)
cannot be one tensor. The matrix is filled block by block of ``images × captions`` pairs,
on the model's device (the GPU when there is one), with a progress bar. Peak memory grows with the block, not
with the gallery; a block that cannot fit is refused before any work, with the largest one that would.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from tqdm.auto import tqdm

from vse_ray.models.base import RetrievalModel

AUTO_BLOCK_BYTES = 1 << 30  # working memory of one block when no block size is given
AUTO_BLOCK_IMAGES = 128
MEMORY_SHARE = 0.8  # of the memory the device has free, the share one block may take


def free_memory_bytes(device: torch.device) -> int:
    """Bytes free on ``device``: the CUDA allocator's free memory, or the host's MemAvailable."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("cannot read the available host memory from /proc/meminfo")


def block_bytes(
    model: RetrievalModel, block: tuple[int, int], n_regions: int, n_words: int, itemsize: int
) -> int:
    """Peak bytes of scoring one block of ``block = (images, captions)`` pairs (``model.pair_floats``)."""
    images, captions = block
    return images * captions * model.pair_floats(n_regions, n_words) * itemsize


def auto_block(
    model: RetrievalModel, n_img: int, n_txt: int, n_regions: int, n_words: int, itemsize: int, free: int
) -> tuple[int, int]:
    """Up to 128 images × as many captions as fit in min(1 GiB, the free share of memory)."""
    images = min(n_img, AUTO_BLOCK_IMAGES)
    per_row = block_bytes(model, (images, 1), n_regions, n_words, itemsize)
    budget = min(AUTO_BLOCK_BYTES, int(free * MEMORY_SHARE))
    return images, max(1, min(n_txt, budget // per_row))


def parse_block(text: str) -> tuple[int, int]:
    """``"128x512"`` → (128, 512); ValueError naming the option otherwise."""
    images, sep, captions = text.lower().partition("x")
    if not sep or not images.strip().isdigit() or not captions.strip().isdigit():
        raise ValueError(f"eval block: expected IMAGESxCAPTIONS such as 128x512, got {text!r}")
    return int(images), int(captions)


def check_block_fits(
    model: RetrievalModel, block: tuple[int, int], n_regions: int, n_words: int, itemsize: int, free: int
) -> None:
    """ValueError naming the block, what it needs, what is free and the largest caption count that fits."""
    images, captions = block
    if images < 1 or captions < 1:
        raise ValueError(f"evaluation block must be (images >= 1, captions >= 1), got {block}")
    need = block_bytes(model, block, n_regions, n_words, itemsize)
    budget = int(free * MEMORY_SHARE)
    if need > budget:
        per_pair = block_bytes(model, (1, 1), n_regions, n_words, itemsize)
        fit = budget // per_pair
        hint = (
            f"blocks of up to {fit:,} pairs fit, e.g. {min(images, fit)} x {max(fit // min(images, fit), 1)}"
            if fit
            else "not even one pair fits"
        )
        raise ValueError(
            f"evaluation block {images} x {captions} needs about {need / 2**30:.1f} GiB "
            f"({n_regions} regions, {n_words} words), more than {MEMORY_SHARE:.0%} of the "
            f"{free / 2**30:.1f} GiB free: {hint}"
        )


@torch.no_grad()
def score_matrix(
    model: RetrievalModel,
    img_repr: Tensor,
    txt_repr: Tensor,
    txt_lengths: Tensor,
    block: tuple[int, int] | None = None,
    device: torch.device | None = None,
    progress: bool = True,
) -> np.ndarray:
    """(N_img, N_txt) float32 ``model.score`` of every encoded image with every encoded caption.

    Args:
        model: a similarity model (``score``, ``pair_floats``), in eval mode for evaluation.
        img_repr: (N_img, R, E) encoded images (any device; blocks are moved to ``device``).
        txt_repr: (N_txt, L, E) encoded captions, padding beyond ``txt_lengths``.
        txt_lengths: (N_txt,) caption lengths.
        block: (images, captions) pairs per block: bounds the peak memory (None: auto_block). The model
            scores a block in passes of at most its own ``max_pairs``: the estimate is an upper bound.
        device: where to score (default: the model's device).
        progress: show a progress bar over the blocks.
    """
    device = device or next(model.parameters()).device
    n_img, n_txt = img_repr.shape[0], txt_repr.shape[0]
    shape = (img_repr.shape[1], int(txt_lengths.max()), txt_repr.element_size())
    free = free_memory_bytes(device)
    if block is None:
        block = auto_block(model, n_img, n_txt, *shape, free)
    block = (min(block[0], n_img), min(block[1], n_txt))
    check_block_fits(model, block, *shape, free)
    sims = np.empty((n_img, n_txt), dtype=np.float32)
    spans = [(i, j) for i in range(0, n_img, block[0]) for j in range(0, n_txt, block[1])]
    for i, j in tqdm(spans, desc="scoring pairs", unit="block", disable=not progress):
        lengths = txt_lengths[j : j + block[1]]
        words = txt_repr[j : j + block[1], : int(lengths.max())]
        scores = model.score(img_repr[i : i + block[0]].to(device), words.to(device), lengths.to(device))
        sims[i : i + block[0], j : j + block[1]] = scores.float().cpu().numpy()
    return sims
