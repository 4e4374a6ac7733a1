import itertools
import warnings

import numpy as np
import pytest
import torch
from sklearn.cluster import KMeans
from sklearn.metrics import silhouette_score

from tests.unit.losses._reference import silhouette_ref
from vse_ray.losses.kernels.clustering import (
    adaptive_levels,
    kmeans_1d_exact_sorted,
    kmeans_1d_sorted,
    silhouette_1d_sorted,
)
from vse_ray.losses.kernels.distinct_rows import distinct_rows


def random_rows(n_rows=24, seed=0):
    """Relevance-like rows: a tight group plus uniform values; every third row rounded (ties), some short."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(n_rows):
        n = int(rng.integers(4, 9)) if r % 4 == 0 else int(rng.integers(20, 60))
        x = np.concatenate([rng.normal(rng.uniform(0.2, 0.8), 0.04, n // 2), rng.uniform(0, 1, n - n // 2)])
        rows.append(np.sort(np.round(x, 1) if r % 3 == 0 else x))
    return rows


def padded(rows):
    n = max(len(x) for x in rows)
    xs = torch.full((len(rows), n), float("inf"), dtype=torch.float64)
    for i, x in enumerate(rows):
        xs[i, : len(x)] = torch.from_numpy(x)
    return xs, torch.tensor([len(x) for x in rows])


def labels_from_ends(ends, n):
    return np.searchsorted(ends, np.arange(n), side="right")


def same_partition(a, b):
    return np.array_equal(a[:, None] == a[None, :], b[:, None] == b[None, :])


def on_a_tie(x, centres):
    """True if some point is (numerically) equidistant from its two nearest distinct centres."""
    c = np.unique(centres)
    d = np.sort(np.abs(x[:, None] - c[None, :]), axis=1)
    return len(c) > 1 and bool(np.any(np.abs(d[:, 0] - d[:, 1]) < 1e-9))


@pytest.mark.parametrize("k", [2, 3, 4])
def test_lloyd_matches_sklearn_from_the_same_init(k):
    rows = random_rows()
    xs, counts = padded(rows)
    ends = kmeans_1d_sorted(xs, counts, torch.full((len(rows),), k))
    compared = 0
    for r, x in enumerate(rows):
        init = x[np.floor((np.arange(k) + 0.5) * len(x) / k).astype(int)]
        if len(np.unique(init)) < k:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = KMeans(k, init=init.reshape(-1, 1), n_init=1, tol=0.0, max_iter=300).fit(x.reshape(-1, 1))
        if on_a_tie(x, ref.cluster_centers_.ravel()):
            continue  # float rounding decides exact ties differently in a distance and a midpoint test
        assert same_partition(labels_from_ends(ends[r], len(x)), ref.labels_), (r, k)
        compared += 1
    assert compared >= len(rows) // 2


def test_partition_equals_sklearn_restarts_where_both_reach_the_same_optimum():
    rows = random_rows(n_rows=8, seed=1)
    xs, counts = padded(rows)
    same_optimum = 0
    for k in (2, 3):
        ends = kmeans_1d_sorted(xs, counts, torch.full((len(rows),), k))
        for r, x in enumerate(rows):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref = KMeans(k, n_init=5, random_state=0).fit(x.reshape(-1, 1))
            ours = labels_from_ends(ends[r], len(x))
            inertia = sum(((x[ours == t] - x[ours == t].mean()) ** 2).sum() for t in np.unique(ours))
            reached = np.isclose(inertia, ref.inertia_, rtol=1e-9, atol=1e-12)
            if reached and not on_a_tie(x, ref.cluster_centers_.ravel()):
                assert same_partition(ours, ref.labels_), (r, k)
                same_optimum += 1
    assert same_optimum >= len(rows)  # Lloyd from quantiles is a local method, but mostly finds the optimum


def test_silhouette_matches_sklearn_and_loops():
    rows = random_rows(seed=2)
    xs, counts = padded(rows)
    for k in (2, 3, 4):
        ends = kmeans_1d_sorted(xs, counts, torch.full((len(rows),), k))
        sil = silhouette_1d_sorted(xs, counts, ends)
        for r, x in enumerate(rows):
            labels = labels_from_ends(ends[r], len(x))
            assert float(sil[r]) == pytest.approx(silhouette_ref(x.tolist(), labels.tolist()), abs=1e-12)
            if 2 <= len(np.unique(labels)) <= len(x) - 1:
                assert float(sil[r]) == pytest.approx(silhouette_score(x.reshape(-1, 1), labels), abs=1e-12)


def test_silhouette_of_singletons_and_duplicates_is_zero():
    xs = torch.tensor([[0.1, 0.5, 0.9], [0.3, 0.3, 0.3]], dtype=torch.float64)
    counts = torch.tensor([3, 3])
    ends = torch.tensor([[1, 2, 3], [1, 3, 3]])
    assert silhouette_1d_sorted(xs, counts, ends).tolist() == [0.0, 0.0]


def test_lloyd_levels_choose_k_like_sklearn():
    gen = torch.Generator().manual_seed(0)
    centres = torch.tensor([0.1, 0.45, 0.8], dtype=torch.float64)
    rel = centres[torch.randint(0, 3, (20, 12), generator=gen)] + 0.03 * torch.randn(
        20, 12, generator=gen, dtype=torch.float64
    )
    rel[::2, :] = torch.rand(10, 12, generator=gen, dtype=torch.float64)  # unstructured rows too
    cand = torch.ones(20, 12, dtype=torch.bool)
    cand[:, 0] = False
    levels, n_levels = adaptive_levels(rel, cand, 2, 4, kmeans="lloyd")
    for r in range(20):
        x = rel[r, 1:].numpy()
        scores = []
        for k in (2, 3, 4):
            init = np.sort(x)[np.floor((np.arange(k) + 0.5) * len(x) / k).astype(int)].reshape(-1, 1)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                labels = KMeans(k, init=init, n_init=1, tol=0.0).fit(x.reshape(-1, 1)).labels_
            scores.append(silhouette_score(x.reshape(-1, 1), labels))
        assert int(n_levels[r]) == 2 + int(np.argmax(scores)), r
        ours = levels[r, 1:].numpy()
        assert levels[r, 0] == 0 and ours.min() == 1 and ours.max() == n_levels[r]
        # level 1 holds the most relevant values: levels decrease as relevance increases
        order = np.argsort(x)
        assert np.all(np.diff(ours[order]) <= 0)


def test_adaptive_levels_with_too_few_candidates():
    rel = torch.tensor([[1.0, 0.2, 0.7], [0.2, 1.0, 0.5], [0.3, 0.3, 1.0]], dtype=torch.float64)
    cand = ~torch.eye(3, dtype=torch.bool)
    cand[2] = torch.tensor([True, False, False])
    levels, n_levels = adaptive_levels(rel, cand, 2, 4)
    assert n_levels.tolist() == [2, 2, 1]
    assert levels.tolist() == [[0, 2, 1], [2, 0, 1], [1, 0, 0]]


def test_several_k_per_row_equal_one_k_per_call():
    xs, counts = padded(random_rows(seed=3))
    ks = torch.tensor([2, 3, 4])
    ends = kmeans_1d_sorted(xs, counts, ks.expand(len(xs), -1))
    sil = silhouette_1d_sorted(xs, counts, ends)
    for g, k in enumerate(ks.tolist()):
        ends_k = kmeans_1d_sorted(xs, counts, torch.full((len(xs),), k))
        assert np.array_equal(ends[:, g, :k], ends_k[:, :k])
        assert np.array_equal(sil[:, g], silhouette_1d_sorted(xs, counts, ends_k))


def test_distinct_rows_finds_equal_rows():
    a, b, c = [0.1, 0.5, np.inf], [0.1, 0.6, np.inf], [0.2, 0.3, 0.4]
    xs = np.array([a, b, a, c, b, c, c])
    first, copy_of = distinct_rows(xs)
    assert len(first) == 3 and np.array_equal(xs[first[copy_of]], xs)
    assert copy_of[0] == copy_of[2] and copy_of[1] == copy_of[4] and len({*copy_of[[0, 1, 3]]}) == 3


def test_kmeans_exact_where_search_keys_collide():
    """Many rows are shifted far apart for one search; 1 + 2^-45 then shares the key of the midpoint 1."""
    x = np.tile([0.0, 1.0 + 2.0**-45, 2.0], (5000, 1))
    ends = kmeans_1d_sorted(x, np.full(5000, 3), np.full(5000, 2))
    assert np.array_equal(ends, np.tile([1, 3], (5000, 1)))  # centres 0 and 2: only 0 is <= midpoint 1


# ---- exact K-Means (dynamic programming) ----


def inertia(x, ends):
    starts = np.concatenate(([0], ends[:-1]))
    return sum(((x[s:e] - x[s:e].mean()) ** 2).sum() for s, e in zip(starts, ends, strict=True) if e > s)


def brute_force_inertia(x, k):
    """The least inertia over every partition of the sorted x into at most k contiguous intervals."""
    n = len(x)
    return min(
        inertia(x, np.array([*cuts, n]))
        for cuts in itertools.combinations_with_replacement(range(n + 1), k - 1)
    )


@pytest.mark.parametrize("seed", range(2))
def test_exact_kmeans_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    rows = [
        np.sort(np.round(rng.random(int(rng.integers(1, 11))), int(rng.integers(1, 4)))) for _ in range(16)
    ]
    xs, counts = padded(rows)
    ends = kmeans_1d_exact_sorted(xs, counts, torch.tensor([1, 2, 3, 4]).expand(len(rows), -1))
    for r, x in enumerate(rows):
        for g, k in enumerate((1, 2, 3, 4)):
            e = ends[r, g, :k]
            assert np.all(np.diff(np.concatenate(([0], e))) >= 0) and e[-1] == len(x)
            assert inertia(x, e) == pytest.approx(brute_force_inertia(x, k), abs=1e-12)
            cut_at = e[:-1][(e[:-1] > 0) & (e[:-1] < len(x))]
            assert np.all(x[cut_at - 1] < x[cut_at])  # equal values share a cluster


def test_exact_kmeans_is_never_above_sklearn_or_lloyd():
    rows = random_rows(n_rows=8, seed=4)
    xs, counts = padded(rows)
    ks = torch.tensor([2, 3, 4]).expand(len(rows), -1)
    exact, lloyd = kmeans_1d_exact_sorted(xs, counts, ks), kmeans_1d_sorted(xs, counts, ks)
    above = 0
    for r, x in enumerate(rows):
        for g, k in enumerate((2, 3, 4)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                best = KMeans(k, n_init=4, random_state=0).fit(x.reshape(-1, 1)).inertia_
            assert inertia(x, exact[r, g, :k]) <= best + 1e-12
            assert inertia(x, exact[r, g, :k]) <= inertia(x, lloyd[r, g, :k]) + 1e-12
            above += inertia(x, lloyd[r, g, :k]) > inertia(x, exact[r, g, :k]) + 1e-12
    assert above > 0  # Lloyd from quantiles stops above the optimum on some of these rows


def test_exact_levels_choose_k_by_silhouette_of_the_optimal_clusterings():
    """L* = argmax over k of sklearn's silhouette_score of the brute-force optimal partitions."""
    gen = torch.Generator().manual_seed(1)
    rel = torch.rand(12, 10, generator=gen, dtype=torch.float64)
    cand = torch.ones(12, 10, dtype=torch.bool)
    cand[:, 0] = False
    levels, n_levels = adaptive_levels(rel, cand, 2, 4, kmeans="exact")
    for r in range(12):
        x = np.sort(rel[r, 1:].numpy())
        scores = []
        for k in (2, 3, 4):
            ends = min(
                (np.array([*cuts, len(x)]) for cuts in itertools.combinations(range(1, len(x)), k - 1)),
                key=lambda e, x=x: inertia(x, e),
            )
            scores.append(silhouette_score(x.reshape(-1, 1), labels_from_ends(ends, len(x))))
        assert int(n_levels[r]) == 2 + int(np.argmax(scores)), r
        order = np.argsort(rel[r, 1:].numpy())
        assert np.all(np.diff(levels[r, 1:].numpy()[order]) <= 0)


def test_unknown_kmeans_is_named():
    with pytest.raises(ValueError, match="kmeans"):
        adaptive_levels(torch.rand(3, 3), torch.ones(3, 3, dtype=torch.bool), 2, 3, kmeans="elkan")
