"""The compiled K-Means / Silhouette / level kernels against the previous batched numpy implementation
(Lloyd), and against the torch path that other devices take."""

import numpy as np
import pytest
import torch

from tests.unit.losses._reference import silhouette_ref
from vse_ray.losses.kernels.backend import row_kernel_backend
from vse_ray.losses.kernels.clustering import (
    adaptive_levels,
    kmeans_1d_exact_sorted,
    kmeans_1d_sorted,
    silhouette_1d_sorted,
    torch_levels,
)
from vse_ray.losses.kernels.clustering.kmeans_1d import prefix_sums
from vse_ray.losses.kernels.clustering.silhouette_1d import pairwise_sum
from vse_ray.losses.kernels.clustering.torch_levels import exact_ends as torch_exact_ends
from vse_ray.losses.kernels.clustering.torch_levels import lloyd_ends as torch_lloyd_ends
from vse_ray.losses.kernels.clustering.torch_levels import silhouettes
from vse_ray.losses.kernels.distinct_rows import distinct_rows

# ---- reference: the batched numpy implementation the kernels replace (all rows and k at once) ----


def ref_prefix_sums(xs, counts):
    valid = np.arange(xs.shape[-1]) < counts[:, None]
    prefix = np.zeros((xs.shape[0], xs.shape[1] + 1))
    np.cumsum(np.where(valid, xs, 0.0), axis=-1, out=prefix[:, 1:])
    return prefix


def ref_row_search_keys(xs, counts):
    """Flat ascending keys fl(x + c_r) of all rows and the shifts c_r: one ``searchsorted`` for all rows."""
    n_rows, n = xs.shape
    filled = counts > 0
    lo = xs[filled, 0].min(initial=0.0)
    hi = xs[filled, counts[filled] - 1].max(initial=0.0)
    width = 4.0 * 2.0 ** np.frexp(hi - lo)[1] if hi > lo else 4.0
    origin = width * np.arange(n_rows)
    shift = origin - lo
    valid = np.arange(n) < counts[:, None]
    keys = np.where(valid, xs + shift[:, None], (origin + width / 2)[:, None])
    return keys.ravel(), shift


def ref_kmeans_1d_sorted(xs, counts, n_clusters, max_iter=100, prefix=None):
    """Lloyd on sorted rows: one searchsorted per step for all clusterings, converged ones leave the batch."""
    xs, counts, ks = np.asarray(xs, dtype=np.float64), np.asarray(counts), np.asarray(n_clusters)
    n_rows, n = xs.shape
    ks_by_group = ks.reshape(n_rows, -1).T
    n_groups, k_max = ks_by_group.shape[0], int(ks.max())
    k = ks_by_group.ravel()
    rows = np.tile(np.arange(n_rows), n_groups)
    last = counts[rows]
    ts = np.arange(k_max)[:, None]
    keys, shift = ref_row_search_keys(xs, counts)
    flat_xs = xs.ravel()
    flat_prefix = (ref_prefix_sums(xs, counts) if prefix is None else prefix).ravel()
    floats = np.empty((k_max + 1, len(k)))
    floats[:k_max] = np.where(ts >= k, np.inf, xs[rows, np.minimum((2 * ts + 1) * last // (2 * k), n - 1)])
    floats[k_max] = shift[rows]
    ints = np.empty((k_max + 4, len(k)), dtype=np.int64)
    prefix_row = rows * (n + 1)
    ints[0], ints[1 : k_max + 1] = prefix_row, prefix_row + last
    ints[k_max + 1], ints[k_max + 2], ints[k_max + 3] = rows, rows * n, prefix_row + last
    bounds_out = ints[: k_max + 1].copy()
    active = np.arange(len(k))
    for step in range(max_iter):
        centres, bounds = floats[:k_max], ints[: k_max + 1]
        mid = centres[:-1] + centres[1:]
        mid /= 2
        found = keys.searchsorted(mid + floats[k_max], side="right")
        over = flat_xs.take(found - 1) > mid
        while over.any():
            found -= over
            over = (flat_xs.take(found - 1) > mid) & (found > ints[k_max + 2])
        inner = np.minimum(found + ints[k_max + 1], ints[k_max + 3])
        changed = (inner != bounds[1:-1]).any(0)
        n_changed = np.count_nonzero(changed)
        if n_changed == 0:
            break
        if step > 0 and n_changed <= 0.8 * len(active):
            bounds_out[:, active] = bounds
            active, inner = active[changed], inner[:, changed]
            ints, floats = ints[:, changed], floats[:, changed]
            centres, bounds = floats[:k_max], ints[: k_max + 1]
        bounds[1:-1] = inner
        sizes = bounds[1:] - bounds[:-1]
        at = flat_prefix.take(bounds)
        np.divide(at[1:] - at[:-1], sizes, out=centres, where=sizes > 0)
    bounds_out[:, active] = ints[: k_max + 1]
    ends = (bounds_out[1:] - bounds_out[0]).reshape(k_max, n_groups, n_rows).transpose(2, 1, 0)
    return ends if ks.ndim == 2 else ends[:, 0]


def ref_silhouette_1d_sorted(xs, counts, ends, prefix=None):
    """Mean Silhouette of interval clusterings: per-point terms in place, summed per cluster by reduceat."""
    xs, counts, ends = np.asarray(xs, dtype=np.float64), np.asarray(counts), np.asarray(ends)
    n_rows, n = xs.shape
    grouped = ends.reshape(n_rows, -1, ends.shape[-1])
    prefix = ref_prefix_sums(xs, counts) if prefix is None else prefix
    starts = np.concatenate((np.zeros_like(grouped[..., :1]), grouped[..., :-1]), axis=-1)
    sizes = grouped - starts
    row_at = (np.arange(n_rows) * (n + 1))[:, None, None]
    p_start, p_end = prefix.take(starts + row_at), prefix.take(grouped + row_at)
    centres = (p_end - p_start) / np.maximum(sizes, 1)
    above = np.minimum.accumulate(np.where(sizes > 0, centres, np.inf)[..., ::-1], axis=-1)[..., ::-1]
    below = np.maximum.accumulate(np.where(sizes > 0, centres, -np.inf), axis=-1)
    next_above = np.concatenate((above[..., 1:], np.full_like(above[..., :1], np.inf)), axis=-1)
    next_below = np.concatenate((np.full_like(below[..., :1], -np.inf), below[..., :-1]), axis=-1)
    has_sil = (sizes > 1) & ~(np.isinf(next_above) & np.isinf(next_below))
    seg_sizes = sizes.copy()
    seg_sizes[..., -1] += n - grouped[..., -1]
    shape, repeats = grouped.shape[:-1] + (n,), seg_sizes.ravel()
    bounds, ends_sum, mates, centre_above, centre_below = (
        np.repeat(v.ravel(), repeats).reshape(shape)
        for v in ((starts + grouped).astype(np.float64), p_start + p_end, np.maximum(sizes - 1.0, 1.0))
        + (next_above, next_below)
    )
    pos = np.arange(n)
    x = np.where(pos < counts[:, None], xs, 0.0)[:, None, :]
    a = np.multiply(bounds, x, out=bounds)
    np.subtract(2.0 * (pos + 1) * x - 2.0 * prefix[:, None, 1:], a, out=a)
    np.add(a, ends_sum, out=a)
    noise = 64 * np.finfo(np.float64).eps * np.abs(prefix).max(-1)[:, None, None]
    np.copyto(a, 0.0, where=a <= noise)
    np.divide(a, mates, out=a)
    b = np.subtract(centre_above, x, out=centre_above)
    np.minimum(b, np.subtract(x, centre_below, out=centre_below), out=b)
    denom = np.maximum(np.maximum(a, b, out=mates), 5e-324, out=mates)
    sil = np.subtract(b, a, out=b)
    offsets = n * np.arange(sil.size // n).reshape(shape[:-1] + (1,))
    cuts = np.concatenate((starts, grouped[..., -1:]), axis=-1) + offsets
    with np.errstate(invalid="ignore", over="ignore"):
        np.divide(sil, denom, out=sil)
        per_cluster = np.add.reduceat(np.append(sil.ravel(), 0.0), cuts.ravel())
    per_cluster = per_cluster.reshape(cuts.shape)[..., :-1]
    scores = np.where(has_sil, per_cluster, 0.0).sum(-1) / np.maximum(counts, 1)[:, None]
    return scores.reshape(ends.shape[:-1])


def ref_distinct_rows(xs):
    finite = np.where(np.isfinite(xs), xs, -1.0)
    weights = np.cos(np.arange(xs.shape[1]))
    _, first, copy_of = np.unique(finite @ weights, return_index=True, return_inverse=True)
    if not np.array_equal(xs, xs[first[copy_of]]):
        everyone = np.arange(len(xs))
        return everyone, everyone
    return first, copy_of


def ref_adaptive_levels(relevance, candidates, l_min, l_max, max_iter=100):
    """Levels of all rows and k at once; equal rows clustered once; cluster = cluster starts reached."""
    lead, n_cols = relevance.shape[:-1], relevance.shape[-1]
    values = relevance.detach().to(dtype=torch.float64).numpy().reshape(-1, n_cols)
    mask = candidates.numpy().reshape(-1, n_cols)
    keyed = np.where(mask, values, np.inf)
    xs = np.sort(keyed, axis=-1)
    counts = mask.sum(-1)
    ks = np.arange(l_min, l_max + 1)
    n_rows = xs.shape[0]
    first, copy_of = ref_distinct_rows(xs)
    unique_xs, unique_counts = xs[first], counts[first]
    prefix = ref_prefix_sums(unique_xs, unique_counts)
    unique_ks = np.broadcast_to(ks, (len(first), len(ks)))
    unique_ends = ref_kmeans_1d_sorted(unique_xs, unique_counts, unique_ks, max_iter, prefix)
    ends = unique_ends[copy_of]
    scores = ref_silhouette_1d_sorted(unique_xs, unique_counts, unique_ends, prefix)[copy_of]
    scores[ks > counts[:, None]] = -np.inf
    best = scores.argmax(-1)
    clustered = np.isfinite(scores).any(-1)
    chosen_k = np.where(clustered, ks[best], 1)
    starts = np.where(clustered[:, None], ends[np.arange(n_rows), best, :-1], counts[:, None])
    first_values = np.take_along_axis(xs, np.minimum(starts, n_cols - 1), -1)
    first_values[starts >= counts[:, None]] = np.inf
    cluster = np.zeros(keyed.shape, dtype=np.int64)
    for t in range(first_values.shape[1]):
        cluster += keyed >= first_values[:, t : t + 1]
    levels = np.where(mask, chosen_k[:, None] - cluster, 0)
    return torch.from_numpy(levels).view(*lead, n_cols), torch.from_numpy(chosen_k).view(lead)


# ---- inputs ----


def relevance_rows(n_rows, n_cols, seed, decimals=None):
    """Relevance-like rows: a few tight groups, uniform noise and exact zeros; optionally rounded (ties)."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0, 1, (n_rows, 4))
    pick = rng.integers(0, 4, (n_rows, n_cols))
    rel = np.take_along_axis(centres, pick, 1) + rng.normal(0, 0.03, (n_rows, n_cols))
    rel[rng.random((n_rows, n_cols)) < 0.2] = rng.uniform(0, 1)
    rel[rng.random((n_rows, n_cols)) < 0.15] = 0.0
    return np.clip(rel if decimals is None else np.round(rel, decimals), 0, None)


def labels_from_ends(ends, n):
    return np.searchsorted(ends, np.arange(n), side="right")


def sorted_rows(rel, mask):
    xs = np.sort(np.where(mask, rel, np.inf), axis=-1)
    return xs, mask.sum(-1)


def random_mask(shape, seed, p_drop=0.1):
    mask = np.random.default_rng(seed).random(shape) >= p_drop
    mask[..., ::5, :3] = False  # some rows with few candidates
    mask[..., 7, :] = False  # a row without candidates
    mask[..., 9, 1:] = False  # a row with one candidate
    return mask


INPUTS = [(seed, decimals) for seed in range(4) for decimals in (None, 2, 1)]


# ---- tests ----


@pytest.mark.parametrize(("seed", "decimals"), INPUTS)
def test_adaptive_levels_equal_the_numpy_implementation(seed, decimals):
    rel = torch.from_numpy(relevance_rows(96, 40, seed, decimals))
    cand = torch.from_numpy(random_mask((96, 40), seed))
    for l_min, l_max in ((2, 4), (2, 2), (3, 6)):
        levels, n_levels = adaptive_levels(rel, cand, l_min, l_max, kmeans="lloyd")
        ref_levels, ref_n_levels = ref_adaptive_levels(rel, cand, l_min, l_max)
        assert torch.equal(n_levels, ref_n_levels) and torch.equal(levels, ref_levels)
    assert n_levels.unique().numel() > 1  # the comparison covers several chosen k


def test_adaptive_levels_of_a_symmetric_relevance_in_both_directions():
    half = relevance_rows(64, 64, seed=5, decimals=2)
    rel = torch.from_numpy(np.triu(half) + np.triu(half, 1).T)
    rel = torch.stack((rel, rel.T)).float()  # float32 input, equal rows in the two directions
    cand = ~torch.eye(64, dtype=torch.bool).expand(2, 64, 64)
    levels, n_levels = adaptive_levels(rel, cand, 2, 4, kmeans="lloyd")
    ref_levels, ref_n_levels = ref_adaptive_levels(rel, cand, 2, 4)
    assert levels.shape == (2, 64, 64) and n_levels.shape == (2, 64)
    assert torch.equal(n_levels, ref_n_levels) and torch.equal(levels, ref_levels)
    assert torch.equal(levels[0], levels[1])


@pytest.mark.parametrize(("seed", "decimals"), INPUTS)
def test_kmeans_and_silhouette_equal_the_numpy_implementation(seed, decimals):
    rel = relevance_rows(64, 50, seed, decimals)
    xs, counts = sorted_rows(rel, random_mask(rel.shape, seed))
    ks = np.random.default_rng(seed).integers(1, 7, (64, 3))
    ks = np.minimum(ks, np.maximum(counts, 1)[:, None])
    ends = kmeans_1d_sorted(xs, counts, ks, max_iter=100)
    assert np.array_equal(ends, ref_kmeans_1d_sorted(xs, counts, ks))
    sil = silhouette_1d_sorted(xs, counts, ends)
    assert np.array_equal(sil, ref_silhouette_1d_sorted(xs, counts, ends))  # bit for bit
    assert np.array_equal(prefix_sums(xs, counts), ref_prefix_sums(xs, counts))


@pytest.mark.parametrize("max_iter", [1, 2, 3, 7])
def test_kmeans_stops_after_max_iter_like_the_numpy_implementation(max_iter):
    rel = relevance_rows(32, 60, seed=11)
    xs, counts = sorted_rows(rel, np.ones(rel.shape, dtype=bool))
    ends = kmeans_1d_sorted(xs, counts, np.full((32, 2), [3, 5]), max_iter)
    assert np.array_equal(ends, ref_kmeans_1d_sorted(xs, counts, np.full((32, 2), [3, 5]), max_iter))


def test_silhouette_with_empty_clusters_equals_the_numpy_implementation():
    xs, counts = sorted_rows(relevance_rows(4, 12, seed=3, decimals=1), np.ones((4, 12), dtype=bool))
    ends = np.array(
        [[[0, 5, 12, 12], [5, 5, 9, 12]], [[3, 3, 3, 12], [12, 12, 12, 12]]] * 2
    )  # empty first, middle and last clusters, a single cluster
    assert np.array_equal(silhouette_1d_sorted(xs, counts, ends), ref_silhouette_1d_sorted(xs, counts, ends))


@pytest.mark.parametrize("n", [0, 1, 2, 7, 8, 9, 15, 16, 17, 127, 128, 129, 300, 1000])
def test_pairwise_sum_is_numpys_order(n):
    rng = np.random.default_rng(n)
    v = rng.normal(size=n + 2) * 10.0 ** rng.uniform(-8, 8, n + 2)  # widely spread: the order shows
    assert pairwise_sum(v, 1, n + 1) == np.add.reduce(v[1 : n + 1])
    assert v[1] + pairwise_sum(v, 2, n + 1) == np.add.reduceat(v, [1, n + 1])[0]


def test_pairwise_sum_order_matters_on_these_inputs():
    v = np.array([1.0] + [2.0**-53] * 8)  # a sequential sum loses every small term, a pairwise one none
    assert pairwise_sum(v, 0, 9) == np.add.reduce(v) != sum(v.tolist())


@pytest.mark.parametrize("seed", range(3))
def test_distinct_rows_equal_the_numpy_implementation(seed):
    rng = np.random.default_rng(seed)
    rows = np.round(rng.random((12, 6)), 1)
    rows[rng.random((12, 6)) < 0.3] = np.inf
    xs = rows[rng.integers(0, 12, 40)]  # 40 rows, at most 12 distinct
    first, copy_of = distinct_rows(xs)
    ref_first, ref_copy_of = ref_distinct_rows(xs)
    assert np.array_equal(first[copy_of], ref_first[ref_copy_of])  # each row's first equal row
    assert np.array_equal(first, np.sort(ref_first))
    nan_rows = np.vstack((xs[:3], np.full((2, 6), np.nan)))  # NaN rows equal nothing, themselves neither
    assert len(distinct_rows(nan_rows)[0]) == len(distinct_rows(xs[:3])[0]) + 2


def test_rows_with_equal_weighted_sums_stay_apart():
    xs = np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 0.0]]) / np.array([1.0, np.cos(1.0)])
    xs[1, 1] = 1.0  # cos(0) x0 + cos(1) x1 is 1 in every row, but row 1 differs
    first, copy_of = distinct_rows(xs)
    assert first.tolist() == [0, 1] and copy_of.tolist() == [0, 1, 0]


def test_a_rows_clustering_does_not_depend_on_the_other_rows():
    """The numpy version stopped all rows at once when no assignment changed in the first step."""
    constant = np.full((1, 31), 0.95)  # its mean rounds below 0.95: the first update moves a centre
    others = np.sort(relevance_rows(5, 31, seed=0), axis=-1)
    ks = np.array([[2, 3, 4]])
    alone = kmeans_1d_sorted(constant, [31], ks)
    together = kmeans_1d_sorted(np.vstack((constant, others)), np.full(6, 31), np.repeat(ks, 6, 0))
    assert np.array_equal(alone, together[:1])
    assert np.array_equal(
        together, ref_kmeans_1d_sorted(np.vstack((constant, others)), np.full(6, 31), np.repeat(ks, 6, 0))
    )
    assert not np.array_equal(alone, ref_kmeans_1d_sorted(constant, [31], ks))  # all ends at 31 there


def test_kmeans_keeps_the_bounds_of_an_emptied_lowest_cluster():
    """Repeated lowest values whose mean rounds below them empty cluster 0; the numpy version's boundary
    search then ran past the row start (end -1) and its Silhouette failed."""
    x = np.array([[0.3] * 27 + [0.8, 0.9, 0.9]])
    ends = kmeans_1d_sorted(x, [30], [[3]])
    assert ends.tolist() == [[[0, 27, 30]]]
    assert ref_kmeans_1d_sorted(x, np.array([30]), np.array([[3]])).min() == -1
    assert silhouette_1d_sorted(x, [30], ends)[0, 0] == pytest.approx(
        silhouette_ref(x[0].tolist(), labels_from_ends(ends[0, 0], 30).tolist()), abs=1e-12
    )


def test_prefix_sums_and_levels_of_rows_without_candidates():
    rel = torch.rand(3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    cand = torch.tensor([[False] * 5, [True] + [False] * 4, [True, True, False, True, False]])
    levels, n_levels = adaptive_levels(rel, cand, 2, 4, kmeans="lloyd")
    assert n_levels.tolist() == [1, 1, 2]
    assert levels[:2].tolist() == [[0] * 5, [1, 0, 0, 0, 0]] and sorted(levels[2].tolist()) == [0, 0, 1, 1, 2]
    assert torch.equal(levels, ref_adaptive_levels(rel, cand, 2, 4)[0])


# ---- the torch path (other devices), run on CPU tensors ----


@pytest.mark.parametrize("kmeans", ["exact", "lloyd"])
@pytest.mark.parametrize(("seed", "decimals"), [(0, None), (1, 2), (2, 1)])
def test_torch_path_gives_the_same_levels(kmeans, seed, decimals):
    """Tolerance: none on these inputs (the paths could part only where two clusterings or two k tie within
    float rounding)."""
    rel = torch.from_numpy(relevance_rows(96, 40, seed, decimals))
    cand = torch.from_numpy(random_mask((96, 40), seed))
    for l_min, l_max in ((2, 4), (3, 6)):
        compiled = adaptive_levels(rel, cand, l_min, l_max, kmeans=kmeans)
        with row_kernel_backend("torch"):
            torch_path = adaptive_levels(rel, cand, l_min, l_max, kmeans=kmeans)
        assert torch.equal(compiled[0], torch_path[0]) and torch.equal(compiled[1], torch_path[1])


def test_torch_path_clusterings_and_silhouettes_equal_the_kernels(monkeypatch):
    monkeypatch.setattr(torch_levels, "CHUNK_ELEMENTS", 31**2 * 7)  # the exact K-Means in chunks of 7 rows
    rel = relevance_rows(48, 30, seed=6, decimals=2)
    xs, counts = sorted_rows(rel, random_mask(rel.shape, 6))
    ks = [2, 3, 4]
    txs, tcounts = torch.from_numpy(xs), torch.from_numpy(counts)
    tprefix = torch.from_numpy(prefix_sums(xs, counts))
    exact = kmeans_1d_exact_sorted(xs, counts, np.tile(ks, (48, 1)))
    valid = np.array(ks)[None, :] <= counts[:, None]  # k above the count is meaningless on both paths
    assert np.array_equal(torch_exact_ends(txs, tcounts, ks).numpy()[valid], exact[valid])
    for g, k in enumerate(ks):
        lloyd = torch_lloyd_ends(txs, tcounts, k, 100, tprefix).numpy()
        assert np.array_equal(
            lloyd[valid[:, g]], kmeans_1d_sorted(xs, counts, np.full(48, k))[valid[:, g], :k]
        )
    sil = silhouettes(txs, tcounts, torch.from_numpy(exact), tprefix).numpy()
    np.testing.assert_allclose(sil, silhouette_1d_sorted(xs, counts, exact), rtol=0, atol=1e-12)
