"""All image × caption pairs of a similarity model in vectorised blocks of at most ``max_pairs`` pairs."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

BlockScorer = Callable[[Tensor, Tensor, Tensor], Tensor]


def pairs_per_pass(max_pairs: int | None, device: torch.device, cpu: int, gpu: int) -> int:
    """Pairs scored per vectorised pass: ``max_pairs`` when given, else the model's default for ``device``.

    On a CPU a pass is memory-bound once its intermediates leave the caches, so small passes are faster
    (measured by ``benchmarks/bench_pair_scoring.py``); a GPU wants large passes to fill its cores.
    """
    if max_pairs is not None:
        return max_pairs
    return cpu if device.type == "cpu" else gpu


def captions_per_block(n_images: int, max_pairs: int) -> int:
    """Captions scored together against all ``n_images`` images: a block holds at most ``max_pairs``."""
    if max_pairs < 1:
        raise ValueError(f"max_pairs must be >= 1, got {max_pairs}")
    return max(1, max_pairs // max(n_images, 1))


def score_pairs(
    block_scorer: BlockScorer, images: Tensor, words: Tensor, lengths: Tensor | None, max_pairs: int
) -> Tensor:
    """(N_img, N_txt) scores: ``block_scorer(images, words_block, lengths_block)`` over caption blocks.

    Every block pairs all images with a slice of captions (so per-caption statistics, e.g. SGRAF's
    attention-filtration batch norm, see every image as in the reference loop), cut to the block's
    longest caption. Peak memory grows with ``max_pairs``; the result is the same for any block size.
    """
    if lengths is None:
        raise ValueError("a similarity model scores words with their caption lengths, got None")
    if words.dim() != 3 or lengths.shape != (words.shape[0],):
        raise ValueError(
            f"words must be (N_txt, L, E) with lengths (N_txt,), got {tuple(words.shape)}, "
            f"{tuple(lengths.shape)}"
        )
    if int(lengths.min()) < 1 or int(lengths.max()) > words.shape[1]:
        raise ValueError(f"lengths must be in [1, {words.shape[1]}], got {lengths.min()}..{lengths.max()}")
    step = captions_per_block(images.shape[0], max_pairs)
    blocks = []
    for start in range(0, words.shape[0], step):
        block_lengths = lengths[start : start + step]
        longest = int(block_lengths.max())
        blocks.append(block_scorer(images, words[start : start + step, :longest], block_lengths))
    return torch.cat(blocks, dim=1)
