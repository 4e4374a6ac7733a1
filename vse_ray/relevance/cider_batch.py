"""Exact CIDEr-D of a training batch from stored tf-idf vectors: tensor operations, no text."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from vse_ray.relevance.cider import CIDER_SIGMA
from vse_ray.relevance.cider_doc_freq import CIDER_MAX_N
from vse_ray.relevance.cider_vectors import CiderBatch, CiderVectors


def _entries(vectors: CiderVectors, device: torch.device) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Row, n-gram id, tf-idf weight and ``1 / ||v^n||`` (the norm of its order) of every stored entry."""
    counts = torch.as_tensor(np.diff(vectors.indptr), device=device)
    rows = torch.repeat_interleave(torch.arange(len(vectors), device=device), counts)
    grams = torch.as_tensor(vectors.ngrams, device=device)
    norms = torch.as_tensor(vectors.norms, device=device)[rows, grams % CIDER_MAX_N]  # > 0: weights are > 0
    return rows, grams, torch.as_tensor(vectors.tfidf, device=device), 1.0 / norms


def _levels(columns: Tensor, values: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Distinct (column, value) pairs as levels, sorted by column then value.

    Returns each entry's level, each level's step ``u_l - u_(l-1)`` (``u_0 = 0`` in each column) and each
    entry's rank among its column's levels (1 for the smallest value).
    """
    order = torch.argsort(values, stable=True)
    order = order[torch.argsort(columns[order], stable=True)]
    col, val = columns[order], values[order]
    new_col = torch.ones_like(col, dtype=torch.bool)
    new_col[1:] = col[1:] != col[:-1]
    new_level = new_col.clone()
    new_level[1:] |= val[1:] != val[:-1]
    level_sorted = torch.cumsum(new_level, 0) - 1
    level = torch.empty_like(level_sorted)
    level[order] = level_sorted
    level_value, level_new_col = val[new_level], new_col[new_level]  # per level, from its first entry
    n_levels = len(level_value)
    step = level_value.clone()
    step[1:] -= torch.where(level_new_col[1:], 0.0, level_value[:-1])
    first = torch.cummax(torch.where(level_new_col, torch.arange(n_levels, device=col.device), 0), 0).values
    return level, step, level - first[level] + 1


def _expand(level: Tensor, rank: Tensor) -> tuple[Tensor, Tensor]:
    """Each entry repeated once per level at or below its own in its column: (entry index, level)."""
    entry = torch.repeat_interleave(torch.arange(len(level), device=level.device), rank)
    start = torch.cumsum(rank, 0) - rank
    return entry, level[entry] - (torch.arange(len(entry), device=level.device) - start[entry])


def cider_batch_matrix(batch: CiderBatch, device: torch.device | None = None) -> Tensor:
    """(B, B) float64 ``R[i, j]`` = CIDEr-D of hypothesis j against the references of row i's image, computed
    on ``device`` (default: the CPU); on a GPU, a few dozen kernels instead of the host's ~10 ms per batch.

    The value pycocoevalcap's ``CiderScorer.compute_cider`` gives for the vectors' document frequencies:
    ``10 / (4 |G|) * sum_{r in G} exp(-(l_h - l_r)^2 / (2 * 6^2)) * sum_n sum_g min(v_h[g], v_r[g]) v_r[g]
    / (||v_h^n|| ||v_r^n||)``. The clipped product splits over the distinct values ``u_1 < u_2 < ...`` that
    an n-gram takes in the batch: ``min(a, b) = sum_l [a >= u_l][b >= u_l] (u_l - u_(l-1))``, so with one
    column per (n-gram, level) it is one sparse (references x levels) by dense (levels x hypotheses)
    product; then the length penalty and the mean over each image's references.
    """
    n_sets = len(batch.set_sizes)
    if len(batch.image_set) != len(batch.hypotheses) or int(np.sum(batch.set_sizes)) != len(batch.references):
        raise ValueError(
            f"CiderBatch: {len(batch.image_set)} image rows for {len(batch.hypotheses)} hypotheses and "
            f"{int(np.sum(batch.set_sizes))} references in set_sizes for {len(batch.references)} vectors"
        )
    device = device or torch.device("cpu")
    hyp_rows, hyp_grams, hyp_tfidf, hyp_inv = _entries(batch.hypotheses, device)
    ref_rows, ref_grams, ref_tfidf, ref_inv = _entries(batch.references, device)
    n_hyp, n_ref = len(batch.hypotheses), len(batch.references)
    # Only the hypotheses' n-grams count: the batch vocabulary, and the reference entries within it.
    vocab, hyp_col = torch.unique(hyp_grams, return_inverse=True)
    ref_col = torch.searchsorted(vocab, ref_grams).clamp_max(max(len(vocab) - 1, 0))
    shared = vocab[ref_col] == ref_grams if len(vocab) else torch.zeros_like(ref_grams, dtype=torch.bool)
    ref_rows, ref_col, ref_tfidf, ref_inv = (x[shared] for x in (ref_rows, ref_col, ref_tfidf, ref_inv))
    # sum_n sum_g min(v_h, v_r) v_r / norms
    dots = torch.zeros(n_ref, n_hyp, dtype=torch.float64, device=device)
    if len(ref_col):
        n_h = len(hyp_col)
        level, step, rank = _levels(torch.cat([hyp_col, ref_col]), torch.cat([hyp_tfidf, ref_tfidf]))
        entry, lev = _expand(level[:n_h], rank[:n_h])  # hypotheses: dense (levels, B) of steps / norm
        hyp = torch.zeros(len(step), n_hyp, dtype=torch.float64, device=device)
        hyp[lev, hyp_rows[entry]] = step[lev] * hyp_inv[entry]
        entry, lev = _expand(level[n_h:], rank[n_h:])  # references: sparse (n_ref, levels) of v_r / norm
        ref = torch.sparse_coo_tensor(
            torch.stack([ref_rows[entry], lev]),
            ref_tfidf[entry] * ref_inv[entry],
            (n_ref, len(step)),
            check_invariants=False,  # indices in range by construction
        )
        dots = torch.sparse.mm(ref, hyp)
    hyp_len = torch.as_tensor(batch.hypotheses.length, dtype=torch.float64, device=device)
    ref_len = torch.as_tensor(batch.references.length, dtype=torch.float64, device=device)
    dots *= torch.exp(-((hyp_len[None, :] - ref_len[:, None]) ** 2) / (2 * CIDER_SIGMA**2))
    sizes = torch.as_tensor(np.asarray(batch.set_sizes, dtype=np.int64), device=device)
    ref_set = torch.repeat_interleave(torch.arange(n_sets, device=device), sizes)
    per_set = torch.zeros(n_sets, n_hyp, dtype=torch.float64, device=device).index_add_(0, ref_set, dots)
    per_set *= (10.0 / CIDER_MAX_N) / sizes[:, None].to(torch.float64)
    return per_set[torch.as_tensor(np.asarray(batch.image_set, dtype=np.int64), device=device)]
