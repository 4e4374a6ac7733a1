"""NCS@K (SAM eq. 5 and the released code) and Semantic Recall (SAM eq. 4 and the released code) against
explicit per-query loops."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.metrics._inputs import retrieval_input, stable_ranking
from vse_ray.metrics import ncs, ncs_at_ks, semantic_recall, semantic_recall_at_ks, semantic_recall_by_image


def _kept_ranking(scores: np.ndarray, dropped: np.ndarray) -> list[int]:
    return [j for j in stable_ranking(scores) if not dropped[j]]


def _ncs_reference(sims, relevance, k, exclude, intersect) -> float:
    """Eq. 5 per query; ``intersect=False`` is the released code's numerator (relevance of all retrieved)."""
    values = []
    for s, r, dropped in zip(sims, relevance, exclude, strict=True):
        retrieved = _kept_ranking(s, dropped)[:k]
        ideal = _kept_ranking(r, dropped)[:k]
        gained = sum(r[j] for j in retrieved if (j in ideal or not intersect))
        values.append(gained / sum(r[j] for j in ideal))
    return float(np.mean(values))


def _sr_reference(sims, relevance, k, m, exclude) -> float:
    values = []
    for s, r, dropped in zip(sims, relevance, exclude, strict=True):
        relevant = set(_kept_ranking(r, dropped)[:m])
        values.append(len(relevant & set(_kept_ranking(s, dropped)[:k])) / m)
    return float(np.mean(values))


def _sr_by_image_reference(sims, relevance, img_of_cap, k, m, direction, depth) -> float:
    """The released code in loops: ``Metric.get_intersection`` (per caption of the query's image its top-depth
    images, scores summed per image, the image itself dropped), ``recall`` (all captions of the m best
    images, resp. the images) and the "recall" score on the ranking without the ground truth."""
    n_images, n_captions = sims.shape
    captions = {i: [c for c in range(n_captions) if img_of_cap[c] == i] for i in range(n_images)}

    def best_images(i: int) -> list[int]:
        count: dict[int, float] = {}
        for c in captions[i]:
            for image in stable_ranking(relevance[:, c])[:depth]:
                count[int(image)] = count.get(int(image), 0.0) + relevance[image, c]
        count.pop(i, None)
        return sorted(count, key=lambda image: (-count[image], image))[:m]

    values = []
    if direction == "i2t":
        for i in range(n_images):
            relevant = {c for image in best_images(i) for c in captions[image]}
            retrieved = [c for c in stable_ranking(sims[i]) if img_of_cap[c] != i][:k]
            if relevant:  # an image without captions has no related images: skipped
                values.append(len(relevant & set(retrieved)) / len(relevant))
    else:
        for c in range(n_captions):
            relevant = set(best_images(img_of_cap[c]))
            retrieved = [i for i in stable_ranking(sims[:, c]) if i != img_of_cap[c]][:k]
            values.append(len(relevant & set(retrieved)) / len(relevant))
    return float(np.mean(values))


@pytest.mark.parametrize(("k", "m", "depth"), [(1, 1, None), (5, 3, None), (10, 2, 4), (3, 8, 2)])
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("direction", ["i2t", "t2i"])
def test_semantic_recall_by_image_equals_loop(k, m, depth, ties, direction) -> None:
    sims, img_of_cap, relevance = retrieval_input(ties=ties, seed=m + 20)
    got = semantic_recall_by_image(
        sims, relevance, img_of_cap, (k,), m, direction=direction, depth=depth, chunk_size=5
    )[k]
    want = _sr_by_image_reference(sims, relevance, img_of_cap, k, m, direction, depth or k)
    assert got == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("direction", ["i2t", "t2i"])
def test_semantic_recall_by_image_with_uneven_and_unordered_captions(direction) -> None:
    """Captions in any order, 1-5 per image, one image without captions."""
    sims, _, relevance = retrieval_input(seed=30)
    rng = np.random.default_rng(30)
    img_of_cap = np.concatenate((np.arange(12), rng.integers(0, 12, 24)))
    img_of_cap[img_of_cap == 5] = 6
    rng.shuffle(img_of_cap)
    got = semantic_recall_by_image(sims, relevance, img_of_cap, (4,), 2, direction=direction, chunk_size=5)[4]
    want = _sr_by_image_reference(sims, relevance, img_of_cap, 4, 2, direction, 4)
    assert got == pytest.approx(want, abs=1e-12)


def test_semantic_recall_conventions_differ() -> None:
    """Eq. 4's m most relevant captions and the code's captions of the m best images are different sets."""
    sims, img_of_cap, relevance = retrieval_input(n_images=20, per_image=5, seed=3)
    truth = img_of_cap[None, :] == np.arange(20)[:, None]
    eq4 = semantic_recall(sims, relevance, 10, 2, exclude=truth)
    by_image = semantic_recall_by_image(sims, relevance, img_of_cap, (10,), 2)[10]
    assert eq4 != pytest.approx(by_image, abs=1e-3)


@pytest.mark.parametrize("k", [1, 5, 9])
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("without_gt", [False, True])
@pytest.mark.parametrize("intersect", [True, False])
def test_ncs_equals_loop(k: int, ties: bool, without_gt: bool, intersect: bool) -> None:
    sims, img_of_cap, relevance = retrieval_input(ties=ties, seed=k)
    truth = img_of_cap[None, :] == np.arange(sims.shape[0])[:, None]
    exclude = truth if without_gt else np.zeros_like(truth)
    for direction in (lambda a: a, np.transpose):
        got = ncs(
            direction(sims),
            direction(relevance),
            k,
            exclude=direction(exclude) if without_gt else None,
            intersect=intersect,
            chunk_size=5,
        )
        want = _ncs_reference(direction(sims), direction(relevance), k, direction(exclude), intersect)
        assert got == pytest.approx(want, abs=1e-12)


def test_ncs_bounds_and_ideal_model() -> None:
    _, _, relevance = retrieval_input(seed=3)
    assert ncs(relevance, relevance, 5) == pytest.approx(1.0)
    assert 0.0 <= ncs(-relevance, relevance, 5) < 1.0


def test_ncs_skips_queries_without_relevance() -> None:
    relevance = np.array([[0.0, 0.0, 0.0], [1.0, 0.5, 0.0]])
    sims = np.array([[1.0, 2.0, 3.0], [2.0, 1.0, 3.0]])
    assert ncs(sims, relevance, 1) == pytest.approx(0.0)
    assert ncs(sims, relevance, 2) == pytest.approx(1.0 / 1.5)
    assert ncs(sims, relevance, 2, intersect=False) == pytest.approx(1.0 / 1.5)
    assert np.isnan(ncs(sims[:1], relevance[:1], 2))


@pytest.mark.parametrize(("k", "m"), [(1, 1), (5, 3), (10, 2), (3, 8)])
@pytest.mark.parametrize("ties", [False, True])
def test_semantic_recall_equals_loop(k: int, m: int, ties: bool) -> None:
    sims, img_of_cap, relevance = retrieval_input(ties=ties, seed=m)
    truth = img_of_cap[None, :] == np.arange(sims.shape[0])[:, None]
    got = semantic_recall(sims.T, relevance.T, k, m, exclude=truth.T, chunk_size=7)
    assert got == pytest.approx(_sr_reference(sims.T, relevance.T, k, m, truth.T), abs=1e-12)
    plain = semantic_recall(sims, relevance, k, m)
    assert plain == pytest.approx(_sr_reference(sims, relevance, k, m, np.zeros_like(truth)), abs=1e-12)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s, r, x: ncs(s, -r, 2), "non-negative"),
        (lambda s, r, x: ncs(s, r, 35, exclude=x), "keep fewer than k=35"),
        (lambda s, r, x: ncs(s, r[:, :3], 2), "relevance: shape"),
        (lambda s, r, x: semantic_recall(s, r, 2, 0), "m: expected"),
        (lambda s, r, x: semantic_recall(s, r, 2, 2, exclude=x[:, :4]), "exclude: expected shape"),
        (lambda s, r, x: semantic_recall_by_image(s, r, x.argmax(0), (2,), 1, direction="x"), "direction"),
        (
            lambda s, r, x: semantic_recall_by_image(s, r, x.argmax(0), (12,), 1, direction="t2i"),
            "k: expected",
        ),
        (lambda s, r, x: semantic_recall_by_image(s, r, x.argmax(0), (2,), 12), "m: expected"),
    ],
)
def test_bad_input(call, message: str) -> None:
    sims, img_of_cap, relevance = retrieval_input()
    truth = img_of_cap[None, :] == np.arange(sims.shape[0])[:, None]
    with pytest.raises(ValueError, match=message):
        call(sims, relevance, truth)


def test_several_cutoffs_equal_single_calls() -> None:
    sims, img_of_cap, relevance = retrieval_input(ties=True, seed=11)
    truth = img_of_cap[None, :] == np.arange(sims.shape[0])[:, None]
    many = ncs_at_ks(sims, relevance, (1, 4, 9), exclude=truth, chunk_size=5)
    assert many == {k: ncs(sims, relevance, k, exclude=truth) for k in (1, 4, 9)}
    many_sr = semantic_recall_at_ks(sims, relevance, (2, 7), 3, exclude=truth)
    assert many_sr == {k: semantic_recall(sims, relevance, k, 3, exclude=truth) for k in (2, 7)}
