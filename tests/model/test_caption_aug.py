"""Caption augmentation against its sampling law: per-word mask / uniform replacement / deletion."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare

from vse_ray.train.caption_aug import augment_captions

V, MASK_ID, TOKEN = 12, 4, 7
LAW = {"mask": 0.1, "replace": 0.3, "delete": 0.2}


def test_one_token_words_follow_the_law():
    """Each token of a one-token-per-word caption ends up deleted, or as id j with probability
    p_mask·[j = mask] + p_replace / V + p_keep·[j = token]: a chi-square test over the V + 1 outcomes."""
    n = 60_000
    captions = [np.full(6, TOKEN)] * (n // 6)
    out = augment_captions(captions, mask_id=MASK_ID, vocab_size=V, rng=np.random.default_rng(3), **LAW)
    kept = np.concatenate(out)
    observed = np.append(np.bincount(kept, minlength=V), n - len(kept))
    expected = np.full(V + 1, LAW["replace"] / V)
    expected[MASK_ID] += LAW["mask"]
    expected[TOKEN] += 1 - sum(LAW.values())
    expected[V] = LAW["delete"]
    assert chisquare(observed, expected * n).pvalue > 1e-3


def test_a_word_of_several_pieces_shares_one_draw():
    """Token 9 continues the previous token's word: the pairs (8, 9) are masked or deleted together,
    replaced piece by piece (each its own uniform id), and each fate has its per-word probability."""
    continues = np.zeros(V, dtype=bool)
    continues[9] = True
    words = 20_000
    captions = [np.array([8, 9] * 4)] * (words // 4)
    law = {"mask": 0.25, "replace": 0.25, "delete": 0.25}
    out = augment_captions(
        captions, mask_id=MASK_ID, vocab_size=V, rng=np.random.default_rng(5), continues=continues, **law
    )
    assert all(len(c) % 2 == 0 for c in out)  # words are deleted whole
    pairs = np.concatenate([c.reshape(-1, 2) for c in out])
    masked = (pairs == MASK_ID).all(axis=1)
    kept = (pairs == [8, 9]).all(axis=1)
    replaced = ~masked & ~kept
    counts = [masked.sum(), replaced.sum(), kept.sum(), words - len(pairs)]
    # a replaced pair equals (mask, mask) or (8, 9) with probability 1/V² each: negligible at this size
    assert chisquare(counts, np.array([0.25, 0.25, 0.25, 0.25]) * words).pvalue > 1e-3
    assert len(np.unique(pairs[replaced], axis=0)) > V  # the pieces of a word draw separately


def test_captions_start_a_word_even_with_a_continuation_piece():
    continues = np.zeros(V, dtype=bool)
    continues[9] = True
    captions = [np.array([9, 9])] * 400
    out = augment_captions(
        captions,
        mask_id=MASK_ID,
        vocab_size=V,
        mask=0,
        replace=0,
        delete=0.5,
        rng=np.random.default_rng(0),
        continues=continues,
    )
    assert {len(c) for c in out} == {0, 2}  # each caption is one word: kept or deleted whole


def test_no_probability_keeps_captions_and_seed_repeats():
    captions = [np.arange(5), np.array([], dtype=np.int64), np.array([3, 1])]
    same = augment_captions(
        captions, mask_id=None, vocab_size=V, mask=0, replace=0, delete=0, rng=np.random.default_rng(0)
    )
    assert [c.tolist() for c in same] == [c.tolist() for c in captions]
    runs = [
        augment_captions(captions, mask_id=MASK_ID, vocab_size=V, rng=np.random.default_rng(1), **LAW)
        for _ in range(2)
    ]
    assert [c.tolist() for c in runs[0]] == [c.tolist() for c in runs[1]]
    assert augment_captions([], mask_id=0, vocab_size=V, rng=np.random.default_rng(0), **LAW) == []


@pytest.mark.parametrize(
    ("law", "match"),
    [
        ({"mask": -0.1, "replace": 0, "delete": 0}, r"caption_mask: must be a probability in \[0, 1\]"),
        ({"mask": 0, "replace": 1.5, "delete": 0}, r"caption_replace: must be a probability"),
        ({"mask": 0.5, "replace": 0.3, "delete": 0.3}, r"caption_delete: must be at most 1"),
    ],
)
def test_bad_probabilities_are_named(law, match):
    with pytest.raises(ValueError, match=match):
        augment_captions([[1]], mask_id=0, vocab_size=V, rng=np.random.default_rng(0), **law)


def test_masking_needs_a_mask_token():
    with pytest.raises(ValueError, match="caption_mask: the captions' vocabulary has no mask token"):
        augment_captions(
            [[1]], mask_id=None, vocab_size=V, mask=0.1, replace=0, delete=0, rng=np.random.default_rng(0)
        )
