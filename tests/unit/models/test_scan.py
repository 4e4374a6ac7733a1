"""SCAN (Lee et al., ECCV 2018): the batched scores against a per-pair loop written from Sec. 3.1-3.2."""

from __future__ import annotations

import math

import pytest
import torch

from tests.support.xattn_inputs import region_word_batch, token_batch
from vse_ray.models.scan import SCANModel, scan_scores

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _leaky(x: float, slope: float) -> float:
    return x if x > 0 else slope * x


def scan_pair(regions, words, direction, lambda_1, aggregation, lambda_2, slope):
    """S(I, T) of one image (R, E) and one caption's real words (L, E), one fragment at a time."""
    queries, context = (words, regions) if direction == "t2i" else (regions, words)
    n_q, n_c = len(queries), len(context)
    s = [[float(queries[q] @ context[c]) for c in range(n_c)] for q in range(n_q)]
    norms = [math.sqrt(sum(_leaky(s[q][c], slope) ** 2 for q in range(n_q))) for c in range(n_c)]
    relevance = []
    for q in range(n_q):
        s_bar = [_leaky(s[q][c], slope) / (norms[c] + 1e-8) for c in range(n_c)]
        z = sum(math.exp(lambda_1 * v) for v in s_bar)
        attended = sum((math.exp(lambda_1 * s_bar[c]) / z) * context[c] for c in range(n_c))
        relevance.append(float(queries[q] @ attended) / max(float(queries[q].norm() * attended.norm()), 1e-8))
    if aggregation == "lse":
        return math.log(sum(math.exp(lambda_2 * r) for r in relevance)) / lambda_2
    return sum(relevance) / len(relevance)


@pytest.mark.parametrize(
    ("direction", "aggregation", "lambda_1", "lambda_2", "slope"),
    [
        ("t2i", "lse", 9.0, 6.0, 0.1),
        ("t2i", "mean", 9.0, 6.0, 0.0),
        ("i2t", "lse", 4.0, 5.0, 0.1),
        ("i2t", "mean", 4.0, 20.0, 0.1),
    ],
)
def test_batched_scores_equal_the_per_pair_loop(direction, aggregation, lambda_1, lambda_2, slope):
    regions, words, lengths = region_word_batch()
    got = scan_scores(regions, words, lengths, direction, lambda_1, aggregation, lambda_2, slope)
    want = torch.tensor(
        [
            [
                scan_pair(
                    regions[i], words[j, : lengths[j]], direction, lambda_1, aggregation, lambda_2, slope
                )
                for j in range(len(words))
            ]
            for i in range(len(regions))
        ],
        dtype=torch.float64,
    )
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_model_blocks_padding_and_gradients():
    model = SCANModel(vocab_size=30, feature_dim=7, word_dim=5, embed_dim=6, max_pairs=1).double()
    images = torch.randn(4, 3, 7, dtype=torch.float64)
    tokens, lengths = token_batch(4, 30)
    one_by_one = model(images, tokens, lengths)
    model.max_pairs = 10_000
    whole = model(images, tokens, lengths)
    torch.testing.assert_close(one_by_one, whole, rtol=1e-12, atol=1e-12)
    padded = torch.nn.functional.pad(tokens, (0, 3))  # extra padding changes nothing
    torch.testing.assert_close(model(images, padded, lengths), whole, rtol=1e-12, atol=1e-12)
    whole.trace().backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad and p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)


def test_pooled_features_and_bad_options_are_refused():
    model = SCANModel(vocab_size=30, feature_dim=7, word_dim=5, embed_dim=6)
    with pytest.raises(ValueError, match="region features .*pooled"):
        model.encode_images(torch.randn(4, 7))
    with pytest.raises(ValueError, match="direction"):
        SCANModel(vocab_size=30, feature_dim=7, direction="both")
    with pytest.raises(ValueError, match="aggregation"):
        SCANModel(vocab_size=30, feature_dim=7, aggregation="max")
