"""The structural scene similarity: hand-made scenes, and the vectorised matrix against a per-pair loop."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from vse_ray.data.synthetic.scene import ObjectGroup, Scene, sample_scene, scene_descriptor
from vse_ray.relevance import batch_relevance, scene_similarity
from vse_ray.relevance.scene import W_BACKGROUND, W_OBJECTS, W_TEXTURE

RED_BALL = ObjectGroup("ball", "red", "small", "left", 1)
BLUE_BOXES = ObjectGroup("box", "blue", "large", "right", 2)
GREEN_STARS = ObjectGroup("star", "green", "medium", "top", 3)


def naive_similarity(a: Scene, b: Scene) -> float:
    """S(a, b) written from the formula, one pair at a time, on Scene objects."""

    def group_score(u: ObjectGroup, v: ObjectGroup) -> float:
        if u.shape != v.shape:
            return 0.0
        fields = ("shape", "colour", "size", "position", "count")
        return sum(getattr(u, f) == getattr(v, f) for f in fields) / len(fields)

    small, large = sorted((a.groups, b.groups), key=len)
    best = max(
        sum(group_score(u, v) for u, v in zip(small, chosen, strict=False))
        for chosen in itertools.permutations(large, len(small))
    )
    objects = best / max(len(a.groups), len(b.groups))
    return (
        W_OBJECTS * objects
        + W_BACKGROUND * (a.background == b.background)
        + W_TEXTURE * (a.texture == b.texture)
    )


def similarity(a: Scene, b: Scene) -> float:
    pair = torch.from_numpy(np.stack([scene_descriptor(a), scene_descriptor(b)]))
    return float(scene_similarity(pair[:1], pair[1:])[0, 0])


def test_identical_scenes_score_one_whatever_the_group_order():
    a = Scene("gray", "striped", (RED_BALL, BLUE_BOXES, GREEN_STARS))
    b = Scene("gray", "striped", (GREEN_STARS, RED_BALL, BLUE_BOXES))
    assert similarity(a, a) == pytest.approx(1.0)
    assert similarity(a, b) == pytest.approx(1.0)


def test_disjoint_scenes_score_zero():
    a = Scene("gray", "plain", (RED_BALL, BLUE_BOXES))
    b = Scene("black", "dotted", (ObjectGroup("tree", "yellow", "medium", "bottom", 4),))
    assert similarity(a, b) == 0.0
    # a red tree at the left is not a red ball at the left: attributes count only within one kind
    c = Scene("black", "dotted", (ObjectGroup("tree", "red", "small", "left", 1),))
    assert similarity(a, c) == 0.0


def test_graded_case_computed_by_hand():
    # a: red ball left + blue boxes right on gray plain; b: a red ball, large, at the right, same
    # background, dotted. b's ball matches a's ball (kind, colour, count: 3/5); it shares size and position
    # with the blue boxes but is another kind (0). Objects: (3/5) / max(2, 1) = 0.3.
    a = Scene("gray", "plain", (RED_BALL, BLUE_BOXES))
    b = Scene("gray", "dotted", (ObjectGroup("ball", "red", "large", "right", 1),))
    expected = W_OBJECTS * 0.3 + W_BACKGROUND * 1 + W_TEXTURE * 0
    assert expected == pytest.approx(0.8 * 0.3 + 0.1)
    assert similarity(a, b) == pytest.approx(expected)
    assert similarity(b, a) == pytest.approx(expected)


def test_batch_matrix_equals_a_per_pair_loop_and_is_symmetric():
    scenes = [sample_scene(np.random.default_rng([3, k])) for k in range(40)]
    descriptors = torch.from_numpy(np.stack([scene_descriptor(s) for s in scenes]))
    matrix = batch_relevance("scene", descriptors)
    expected = np.array([[naive_similarity(a, b) for b in scenes] for a in scenes])
    np.testing.assert_allclose(matrix.numpy(), expected, atol=1e-6)
    np.testing.assert_allclose(matrix.numpy(), matrix.numpy().T, atol=1e-7)
    assert matrix.min() >= 0 and matrix.max() <= 1 + 1e-6
    np.testing.assert_allclose(matrix.diagonal().numpy(), 1.0, atol=1e-6)
    assert len(np.unique(expected.round(4))) > 10  # graded, not binary


def test_bad_descriptors_are_refused():
    with pytest.raises(ValueError, match=r"needs \(B, D\) scene descriptors"):
        batch_relevance("scene", None)
    with pytest.raises(ValueError, match="2 \\+ G \\* 6 columns"):
        scene_similarity(torch.zeros(2, 7), torch.zeros(2, 7))
