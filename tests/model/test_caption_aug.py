"""Caption augmentation against its sampling law: per-token mask / replace / delete frequencies."""

from __future__ import annotations

import numpy as np
import pytest

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
    from vse_ray.data.store import load_vocab
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
