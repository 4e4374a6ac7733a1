"""Exact all-pairs CIDEr-D (pycocoevalcap ``Cider``) with sparse n-gram products."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from scipy.linalg.blas import get_blas_funcs

from vse_ray.relevance._checks import check_reference_sets, check_texts
from vse_ray.relevance.cider_doc_freq import (
    CIDER_MAX_N,
    CiderDocFreq,
    image_document_frequency,
)
from vse_ray.relevance.ngrams import ngram_counts

CIDER_SIGMA = 6.0
# An n-gram column goes to the dense GEMM when (share of hypotheses holding it) x (share of references
# holding it) exceeds this; rarer columns go through the sparse product (measured crossover on CPU).
_DENSE_PAIR_SHARE = 0.002


def _threshold_columns(tf: sp.csr_matrix, values: np.ndarray, t_max: int) -> sp.csr_matrix:
    """Spread each entry over threshold columns: column ``(t - 1) * V + g`` holds ``values`` where tf >= t.

    With ``H_t = [tf_h >= t]`` and ``R_t = [tf_r >= t] * w``, ``sum_t H_t R_t^T = sum_g min(tf_h, tf_r) w``
    because ``min(a, b) = sum_{t >= 1} [a >= t][b >= t]`` for integers.
    """
    coo = tf.tocoo()
    rows, cols, vals = [], [], []
    for t in range(1, t_max + 1):
        keep = coo.data >= t
        rows.append(coo.row[keep])
        cols.append(coo.col[keep] + (t - 1) * tf.shape[1])
        vals.append(values[keep])
    return sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(tf.shape[0], t_max * tf.shape[1]),
    )


def _inverse_order_norms(tfidf_sq: sp.csr_matrix, order: np.ndarray) -> np.ndarray:
    """(n, max_n) of 1 / ||tf-idf vector of order n||, 0 where the norm is 0 (pycocoevalcap skips those)."""
    one_hot = sp.csr_matrix(
        (np.ones(len(order)), (np.arange(len(order)), order - 1)), shape=(len(order), CIDER_MAX_N)
    )
    norms = np.sqrt(np.asarray((tfidf_sq @ one_hot).todense()))
    with np.errstate(divide="ignore"):
        return np.where(norms > 0, 1.0 / norms, 0.0)


def _entry_inverse_norms(tf: sp.csr_matrix, inv_norms: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``inv_norms[row, order[col] - 1]`` at each stored entry of ``tf``, in ``tf.tocoo()`` order."""
    coo = tf.tocoo()
    return inv_norms[coo.row, order[coo.col] - 1]


def _word_counts(texts: Sequence[str]) -> np.ndarray:
    """Words per text. pycocoevalcap's length is the bigram count ``words - 1``: the same differences,
    except for empty texts, whose pairs score 0 anyway (zero norm)."""
    return np.fromiter((len(t.split()) for t in texts), dtype=np.int64, count=len(texts))


def _weighted_threshold_matrices(
    hyp_tf: sp.csr_matrix, ref_tf: sp.csr_matrix, idf: np.ndarray, order: np.ndarray
) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Hypothesis and reference matrices whose product is ``sum_n sum_g idf^2 min(tf_h, tf_r) tf_r / norms``.

    Columns are (threshold, n-gram) pairs; hypothesis entries hold ``1 / ||v_h^n||`` and reference entries
    ``idf^2 tf_r / ||v_r^n||``, so one product gives the norm-scaled clipped dot products of all orders.
    """
    idf_sq = sp.diags(idf**2)
    inv_hyp = _inverse_order_norms(hyp_tf.power(2) @ idf_sq, order)
    inv_ref = _inverse_order_norms(ref_tf.power(2) @ idf_sq, order)
    ref_coo = ref_tf.tocoo()
    ref_weight = ref_coo.data * idf[ref_coo.col] ** 2 * _entry_inverse_norms(ref_tf, inv_ref, order)
    t_max = int(min(hyp_tf.max(), ref_tf.max())) if hyp_tf.nnz and ref_tf.nnz else 0
    hyp_ext = _threshold_columns(hyp_tf, _entry_inverse_norms(hyp_tf, inv_hyp, order), t_max)
    return hyp_ext, _threshold_columns(ref_tf, ref_weight, t_max)


def _split_frequent_columns(
    hyp_ext: sp.csr_matrix, ref_ext: sp.csr_matrix
) -> tuple[sp.csr_matrix, np.ndarray, sp.csr_matrix, sp.csr_matrix]:
    """Frequent columns as (hypothesis CSR, dense references), the rest as two CSR matrices.

    Columns absent on either side are dropped: they contribute nothing to the product.
    """
    hyp_share = hyp_ext.getnnz(axis=0) / hyp_ext.shape[0]
    ref_share = ref_ext.getnnz(axis=0) / ref_ext.shape[0]
    shared = (hyp_share > 0) & (ref_share > 0)
    dense = shared & (hyp_share * ref_share > _DENSE_PAIR_SHARE)
    rare = shared & ~dense
    return (
        hyp_ext[:, dense].tocsr(),
        ref_ext[:, dense].toarray(),
        hyp_ext[:, rare].tocsr(),
        ref_ext[:, rare].tocsr(),
    )


def cider_matrix(
    hypotheses: Sequence[str],
    references: Sequence[Sequence[str]],
    doc_freq: CiderDocFreq | None = None,
    *,
    chunk_size: int = 4096,
) -> np.ndarray:
    """CIDEr-D of every hypothesis against every reference set: ``N_ij = phi(G_i, c_j)`` (SAM/NCS eq. 3).

    Reproduces pycocoevalcap ``CiderScorer.compute_cider`` (n = 1..4, sigma = 6) exactly:
    ``score(h, G) = 10 / (4 |G|) * sum_{r in G} exp(-(l_h - l_r)^2 / (2 sigma^2))
    * sum_n sum_g min(v_h[g], v_r[g]) v_r[g] / (||v_h^n|| ||v_r^n||)`` with tf-idf vectors
    ``v[g] = tf[g] * (log N - log max(1, df[g]))`` and ``l`` = caption length. Since the idf is
    non-negative, ``min(v_h, v_r) v_r = idf^2 min(tf_h, tf_r) tf_r`` and ``min`` splits over count
    thresholds, so one block of hypotheses needs one product over all references: a dense GEMM for the
    frequent n-grams plus a sparse product for the rest, then the length penalty and the mean per set.

    Args:
        hypotheses: Pre-tokenised captions (see :func:`tokenize`), one row of the result each.
        references: ``references[i]`` = the pre-tokenised reference captions of image i.
        doc_freq: Document frequencies to use; ``None`` counts them over ``references`` (as pycocoevalcap
            does for the images of one call).
        chunk_size: Hypotheses per block; a block holds ``chunk_size * n_references`` float64 values
            (plus its sparse part), on top of the result itself.

    Returns:
        (n_hypotheses, n_reference_sets) float64 CIDEr-D scores, Fortran-ordered: its transpose, the
        (images, captions) relevance matrix, is C-contiguous.

    Raises:
        ValueError: On a non-string caption, an empty reference set or ``chunk_size < 1``.
    """
    hyps = check_texts("hypotheses", hypotheses)
    sets = check_reference_sets(references)
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    if not hyps or not sets:
        return np.zeros((len(hyps), len(sets)))
    set_sizes = np.array([len(refs) for refs in sets])
    flat_refs = [ref for refs in sets for ref in refs]
    table = ngram_counts(flat_refs + hyps, CIDER_MAX_N)
    ref_tf, hyp_tf = table.counts[: len(flat_refs)], table.counts[len(flat_refs) :]
    if doc_freq is None:
        df, log_num_docs = image_document_frequency(ref_tf, set_sizes), math.log(len(sets))
    else:
        df, log_num_docs = doc_freq.lookup(table.ngrams), doc_freq.log_num_docs
    idf = log_num_docs - np.log(np.maximum(df, 1.0))
    hyp_dense, ref_dense, hyp_rare, ref_rare = _split_frequent_columns(
        *_weighted_threshold_matrices(hyp_tf, ref_tf, idf, table.order)
    )

    # References sorted by length: the length penalty then scales contiguous row ranges of a block.
    ref_len = _word_counts(flat_refs)
    ref_order = np.argsort(ref_len, kind="stable")
    lengths, first = np.unique(ref_len[ref_order], return_index=True)
    length_rows = list(zip(lengths, first, np.append(first[1:], len(ref_order)), strict=True))
    ref_dense, ref_rare = ref_dense[ref_order], ref_rare[ref_order]
    set_of_ref = np.repeat(np.arange(len(sets)), set_sizes)[ref_order]
    mean_over_set = sp.csr_matrix(
        (10.0 / (CIDER_MAX_N * set_sizes[set_of_ref]), (set_of_ref, np.arange(len(flat_refs)))),
        shape=(len(sets), len(flat_refs)),
    )
    hyp_len = _word_counts(hyps)
    out_t = np.empty((len(sets), len(hyps)))  # filled column block by column block, returned transposed
    gemm = get_blas_funcs("gemm", dtype=np.float64)
    buffer = np.empty(len(flat_refs) * min(chunk_size, len(hyps)))
    for start in range(0, len(hyps), chunk_size):
        stop = min(start + chunk_size, len(hyps))
        # (n_refs, m) norm-scaled clipped dot products: the sparse part written, the dense part added.
        block = buffer[: len(flat_refs) * (stop - start)].reshape(len(flat_refs), stop - start)
        (ref_rare @ hyp_rare[start:stop].T.tocsr()).toarray(out=block)
        if ref_dense.shape[1]:
            hyp_block = hyp_dense[start:stop].toarray()
            block = gemm(1.0, hyp_block.T, ref_dense.T, beta=1.0, c=block.T, trans_a=1, overwrite_c=1).T
        for length, lo, hi in length_rows:
            block[lo:hi] *= np.exp(-((hyp_len[start:stop] - length) ** 2) / (2 * CIDER_SIGMA**2))
        out_t[:, start:stop] = mean_over_set @ block
    return out_t.T
