"""SCAN: Stacked Cross Attention Network (Lee et al., ECCV 2018), every pair of a batch in one pass."""

from __future__ import annotations

import torch
from torch import Tensor

from vse_ray.models.cross_attention import EPS, cross_attention_weights, length_mask, region_word_logits
from vse_ray.models.pair_scoring import pairs_per_pass, score_pairs
from vse_ray.models.region_word import RegionWordModel

DIRECTIONS = ("t2i", "i2t")
AGGREGATIONS = ("lse", "mean")
CPU_PAIRS, GPU_PAIRS = 2048, 16384  # default pairs per vectorised pass (bench_pair_scoring.py)


def scan_scores(
    regions: Tensor,
    words: Tensor,
    lengths: Tensor,
    direction: str = "t2i",
    lambda_softmax: float = 9.0,
    aggregation: str = "lse",
    lambda_lse: float = 6.0,
    clip_slope: float = 0.1,
) -> Tensor:
    """S(I, T) of SCAN for every image × caption pair: (N_img, N_txt).

    Image-text (``"i2t"``, Sec. 3.1): each region v_i attends to the words, a_i^t = Σ_j α_ij e_j with
    α_ij = softmax_j(λ_1 s̄_ij); relevance R(v_i, a_i^t) = cos(v_i, a_i^t); pooled into
    S = (1/λ_2) log Σ_i exp(λ_2 R(v_i, a_i^t)) (LogSumExp) or the mean of R over regions (average pooling).
    Text-image (``"t2i"``, Sec. 3.2): the same with the roles swapped, each word e_j attending to the regions,
    R(e_j, a_j^v) pooled over the caption's words.

    The attended vectors are never built: with s_qc = x_q · y_c, x_q · a_q = Σ_c α_qc s_qc, and
    ||a_q||² = α_q^T G α_q with G the Gram matrix of the context fragments (R × R or L × L per item), so a
    pair costs O(Q·C·(C + 1)) instead of O(Q·C·E).

    Args:
        regions: (N_img, R, E) image region features.
        words: (N_txt, L, E) word features, padding beyond ``lengths``.
        lengths: (N_txt,) caption lengths.
        direction: "t2i" (words attend to regions) or "i2t" (regions attend to words).
        lambda_softmax: λ_1, the attention's inverse temperature.
        aggregation: "lse" (LogSumExp pooling) or "mean" (average pooling).
        lambda_lse: λ_2 of LogSumExp pooling.
        clip_slope: slope of [·]_+ in the attention's normalisation (see cross_attention_weights).
    """
    word_mask = length_mask(lengths, words.shape[1])[None]  # (1, N_txt, L)
    logits = region_word_logits(regions, words)  # (N_img, N_txt, R, L)
    if direction == "t2i":
        logits = logits.transpose(-1, -2)  # queries: words; context: regions
        weights = cross_attention_weights(logits, word_mask, None, lambda_softmax, clip_slope)
        gram = (regions @ regions.transpose(1, 2))[:, None]  # (N_img, 1, R, R)
        query_norm, query_mask = words.norm(dim=-1)[None], word_mask
    elif direction == "i2t":
        weights = cross_attention_weights(logits, None, word_mask, lambda_softmax, clip_slope)
        gram = (words @ words.transpose(1, 2))[None]  # (1, N_txt, L, L)
        query_norm, query_mask = regions.norm(dim=-1)[:, None], None
    else:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    dot = (weights * logits).sum(-1)
    attended_norm = ((weights @ gram) * weights).sum(-1).clamp(min=0).sqrt()
    relevance = dot / (query_norm * attended_norm).clamp(min=EPS)
    if aggregation == "lse":
        if query_mask is not None:
            relevance = relevance.masked_fill(~query_mask, float("-inf"))
        return torch.logsumexp(lambda_lse * relevance, dim=-1) / lambda_lse
    if aggregation == "mean":
        if query_mask is None:
            return relevance.mean(-1)
        return (relevance * query_mask).sum(-1) / lengths[None].to(relevance.dtype)
    raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")


class SCANModel(RegionWordModel):
    """SCAN: region features W_v·f_i (Sec. 3.4), Bi-GRU word features, stacked cross attention scores.

    Official recipes: t-i λ_1 = 9, LogSumExp λ_2 = 6 (or mean); i-t λ_1 = 4, λ_2 = 5 (F30K; 20 on COCO).

    Args:
        vocab_size, feature_dim, word_dim, embed_dim: vocabulary, region feature size D, word size, E.
        direction, lambda_softmax, aggregation, lambda_lse, clip_slope: see ``scan_scores``.
        bidirectional: Bi-GRU caption encoder (the reference recipes use it).
        max_pairs: image × caption pairs scored per vectorised block (bounds memory, not the result);
            None: ``CPU_PAIRS`` on a CPU, ``GPU_PAIRS`` on a GPU.
    """

    def __init__(
        self,
        *,
        vocab_size: int,
        feature_dim: int,
        word_dim: int = 300,
        embed_dim: int = 1024,
        direction: str = "t2i",
        lambda_softmax: float = 9.0,
        aggregation: str = "lse",
        lambda_lse: float = 6.0,
        clip_slope: float = 0.1,
        bidirectional: bool = True,
        max_pairs: int | None = None,
    ) -> None:
        self.check_options(
            direction=direction, aggregation=aggregation, lambda_softmax=lambda_softmax, lambda_lse=lambda_lse
        )
        super().__init__(vocab_size, feature_dim, word_dim, embed_dim, bidirectional)
        self.direction, self.aggregation = direction, aggregation
        self.lambda_softmax, self.lambda_lse, self.clip_slope = lambda_softmax, lambda_lse, clip_slope
        self.max_pairs = max_pairs

    @staticmethod
    def check_options(
        direction: str = "t2i",
        aggregation: str = "lse",
        lambda_softmax: float = 9.0,
        lambda_lse: float = 6.0,
        **_: object,
    ) -> None:
        """ValueError naming the first option SCAN does not have (also run on recipes before training)."""
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
        if aggregation not in AGGREGATIONS:
            raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
        if lambda_softmax <= 0 or lambda_lse <= 0:
            raise ValueError(f"lambda_softmax and lambda_lse must be > 0, got {lambda_softmax}, {lambda_lse}")

    def score(self, img_repr: Tensor, txt_repr: Tensor, txt_lengths: Tensor | None = None) -> Tensor:
        """(N_img, N_txt) SCAN similarities, in blocks of at most ``max_pairs`` pairs."""
        max_pairs = pairs_per_pass(self.max_pairs, img_repr.device, CPU_PAIRS, GPU_PAIRS)
        return score_pairs(self.score_block, img_repr, txt_repr, txt_lengths, max_pairs)

    def score_block(self, regions: Tensor, words: Tensor, lengths: Tensor) -> Tensor:
        """All pairs of one block in one vectorised pass."""
        return scan_scores(
            regions,
            words,
            lengths,
            self.direction,
            self.lambda_softmax,
            self.aggregation,
            self.lambda_lse,
            self.clip_slope,
        )

    def pair_floats(self, n_regions: int, n_words: int) -> int:
        """Floats held per pair at the peak of ``score_block`` (logits, weights, their products): 7 (R, L)
        arrays, about 1.2x the one-pass peak that ``benchmarks/bench_chunked_eval.py`` measures."""
        return 7 * n_regions * n_words
