"""Caption augmentation against its sampling law: per-word mask / replace / delete frequencies."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare

from vse_ray.models.base import CaptionSpace
from vse_ray.train.caption_aug import CaptionAugment

MASK_ID, VOCAB = 99, 100


def _captions(n: int, length: int) -> list[np.ndarray]:
    return [np.arange(1, length + 1) + 10 * (k % 5) for k in range(n)]


def test_frequencies_follow_the_probabilities():
    aug = CaptionAugment(0.1, 0.02, 0.08, MASK_ID, VOCAB)
    captions = _captions(4000, 12)  # 48,000 tokens, none equal to the mask id
    out = aug(captions, np.random.default_rng(0))
    n = sum(len(c) for c in captions)
    kept = sum(len(c) for c in out)
    masked = sum(int((c == MASK_ID).sum()) for c in out)
    for observed, p in ((n - kept, 0.08), (masked, 0.1 + 0.02 / VOCAB)):
        assert abs(observed - n * p) < 5 * np.sqrt(n * p * (1 - p)), (observed, n * p)
    assert all(((c >= 0) & (c < VOCAB)).all() and len(c) >= 1 for c in out)


def test_deletion_keeps_the_order_of_the_other_tokens_and_never_empties():
    aug = CaptionAugment(0.0, 0.0, 0.9, MASK_ID, VOCAB)
    out = aug(_captions(200, 5), np.random.default_rng(1))
    assert all(len(c) >= 1 and (np.diff(c) > 0).all() for c in out)


def test_inactive_and_seeded():
    captions = _captions(3, 4)
    same = CaptionAugment(0, 0, 0, MASK_ID, VOCAB)(captions, np.random.default_rng(0))
    assert all(np.array_equal(a, b) for a, b in zip(same, captions, strict=True))
    aug = CaptionAugment(0.3, 0.1, 0.1, MASK_ID, VOCAB)
    a, b = (aug(captions, np.random.default_rng(5)) for _ in range(2))
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("mask", [0.0, 0.1])
def test_training_data_adds_a_mask_row_only_when_masking(tiny_data_dir, mask):
    from vse_ray.data.store.readers import load_vocab
    from vse_ray.train.config import TrainConfig
    from vse_ray.train.training_data import TrainingData

    cfg = TrainConfig(data_dir=str(tiny_data_dir), caption_mask=mask, caption_delete=0.05).validate()
    data = TrainingData.load(cfg, None)
    size = max(load_vocab(str(tiny_data_dir)).values()) + 1
    assert data.model_args["vocab_size"] == size + (mask > 0)
    assert (
        data.caption_augment.mask_id == size
        and data.caption_augment.vocab_size == data.model_args["vocab_size"]
    )


def test_vse_inf_always_has_the_mask_row(tiny_region_dir):
    """VSE∞'s released train.py adds `<mask>` whatever the augmentation, so vse_ray's VSE∞ gives it a row
    without augmentation too (never read then): a seed draws the released text side (test_vse_inf_init)."""
    from vse_ray.data.store.readers import load_vocab
    from vse_ray.train.config import TrainConfig
    from vse_ray.train.training_data import TrainingData

    cfg = TrainConfig(data_dir=str(tiny_region_dir), model="vse_inf").validate()
    data = TrainingData.load(cfg, None)
    assert data.model_args["vocab_size"] == max(load_vocab(str(tiny_region_dir)).values()) + 2
    assert data.caption_augment is None


V, TOKEN = 12, 7


def test_one_token_words_follow_the_whole_law():
    """Each token ends up deleted, or as id j with probability p_mask·[j = mask] + p_replace / V +
    p_keep·[j = token]: a chi-square test over the V + 1 outcomes."""
    law = (0.1, 0.3, 0.2)
    n = 60_000
    out = CaptionAugment(*law, 4, V)([np.full(6, TOKEN)] * (n // 6), np.random.default_rng(3))
    kept = np.concatenate(out)
    observed = np.append(np.bincount(kept, minlength=V), n - len(kept))
    expected = np.full(V + 1, law[1] / V)
    expected[4] += law[0]
    expected[TOKEN] += 1 - sum(law)
    expected[V] = law[2]
    assert chisquare(observed, expected * n).pvalue > 1e-3


def _pieces() -> np.ndarray:
    continues = np.zeros(V, dtype=bool)
    continues[9] = True  # token 9 continues the previous token's word, as a ## wordpiece
    return continues


def test_a_word_of_several_pieces_shares_one_draw():
    """The pairs (8, 9) are masked or deleted together, replaced piece by piece (each its own uniform
    id), and each fate has its per-word probability."""
    words = 20_000
    aug = CaptionAugment(0.25, 0.25, 0.25, 4, V, continues=_pieces(), keep_one=False)
    out = aug([np.array([8, 9] * 4)] * (words // 4), np.random.default_rng(5))
    assert all(len(c) % 2 == 0 for c in out)  # words are deleted whole
    pairs = np.concatenate([c.reshape(-1, 2) for c in out])
    masked = (pairs == 4).all(axis=1)
    kept = (pairs == [8, 9]).all(axis=1)
    replaced = ~masked & ~kept
    # a replaced pair equals (mask, mask) or (8, 9) with probability 1/V² each: negligible at this size
    counts = [masked.sum(), replaced.sum(), kept.sum(), words - len(pairs)]
    assert chisquare(counts, np.full(4, 0.25 * words)).pvalue > 1e-3
    assert len(np.unique(pairs[replaced], axis=0)) > V  # the pieces of a word draw separately


def test_a_caption_starts_a_word_and_wrapped_captions_may_empty():
    aug = CaptionAugment(0, 0, 0.5, 4, V, continues=_pieces(), keep_one=False)
    out = aug([np.array([9, 9])] * 400, np.random.default_rng(0))
    assert {len(c) for c in out} == {0, 2}  # each caption is one word: kept or deleted whole


def test_in_space_takes_the_models_ids():
    space = CaptionSpace(vocab_size=30, mask_id=3, continues=_pieces(), wrapped=True)
    aug = CaptionAugment(0.1, 0.02, 0.08, 99, 100).in_space(space)
    assert (aug.mask_id, aug.vocab_size, aug.keep_one) == (3, 30, False) and aug.continues is space.continues
    with pytest.raises(ValueError, match="caption_mask: the model's caption vocabulary has no mask token"):
        CaptionAugment(0.1, 0, 0, 99, 100).in_space(CaptionSpace(30, None))
