"""Forward + backward time of every vse_ray loss at B = 128, D = 1024, as ratios to VSE++ in the same run,
and the adaptive ladder's batched K-Means + Silhouette against per-query scikit-learn (the authors' way).

``--device cuda`` times the losses on the GPU, where the row kernels take their torch path (no host copy);
``ladder_auto_lloyd`` is the adaptive ladder with Lloyd's K-Means instead of the exact default. The
clustering section also counts the clusterings where Lloyd stops above the exact optimum and the queries
whose L* the exact K-Means changes.

Relevance is realistic: bag-of-words cosines of real Flickr30K captions (one caption of each of B images;
structured, in [0, 1]) for the S-BERT/SVD sources, and CIDEr-D of each caption against the 5 references of
each image for SAM; without the captions file, cosines of random topic-mixture vectors stand in.
The losses are timed round-robin (each repeat runs every loss once) and medians are reported, so that
changing machine load affects all of them alike.

    python benchmarks/bench_losses.py
    python benchmarks/bench_losses.py --threads 1 --repeats 200
    python benchmarks/bench_losses.py --threads 2
    python benchmarks/bench_losses.py --device cuda
    python benchmarks/bench_losses.py --row-kernels torch   # the GPU code path, timed on the CPU
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from sklearn.cluster import KMeans
from sklearn.metrics import silhouette_score

from vse_ray.losses import LOSS_NAMES, make_loss
from vse_ray.losses.kernels.backend import BACKENDS, row_kernel_backend
from vse_ray.losses.kernels.clustering import adaptive_levels, kmeans_1d_exact_sorted, kmeans_1d_sorted

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CAPTIONS = "../shared/data/f30k_test_caps.txt"
TARGET_RATIO = {"ladder_auto": 3.0, "ladder_auto_lloyd": 3.0}
DEFAULT_TARGET = 1.5
CLUSTER_SPEEDUP_TARGET = 300.0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--captions", default=DEFAULT_CAPTIONS, help="captions file, 5 per image, image order"
    )
    parser.add_argument("--batch", type=int, default=128, help="batch size B")
    parser.add_argument("--dim", type=int, default=1024, help="embedding size D")
    parser.add_argument(
        "--repeats", type=int, default=100, help="timed rounds; each round runs every loss once, in turn"
    )
    parser.add_argument("--ref-repeats", type=int, default=1, help="timed runs of the scikit-learn reference")
    parser.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    parser.add_argument("--device", default="cpu", help="device of the embeddings and relevance (cpu, cuda)")
    parser.add_argument(
        "--row-kernels",
        default="auto",
        choices=BACKENDS,
        help="auto: compiled loops for CPU tensors, torch elsewhere; torch: the GPU code path on any device",
    )
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def caption_groups(path: Path, per_image: int = 5) -> list[list[str]] | None:
    if not path.is_file():
        return None
    lines = [line.strip().lower() for line in path.read_text().splitlines() if line.strip()]
    return [lines[i : i + per_image] for i in range(0, len(lines) - per_image + 1, per_image)]


def relevance_matrices(args: argparse.Namespace, gen: torch.Generator) -> tuple[dict[str, torch.Tensor], str]:
    """{"sbert", "svd", "cider"} -> (B, B) float32 relevance, and a description of where it came from."""
    groups = caption_groups((REPO_ROOT / args.captions).resolve())
    if groups is None or len(groups) < args.batch:
        topics = torch.randn(8, 64, generator=gen)
        mix = torch.rand(args.batch, 8, generator=gen) ** 4
        vec = torch.nn.functional.normalize(
            mix @ topics + 0.3 * torch.randn(args.batch, 64, generator=gen), dim=1
        )
        cos = (vec @ vec.T).clamp(min=0)
        return {"sbert": cos, "svd": cos, "cider": 5 * cos}, "synthetic topic-mixture cosines"
    picks = torch.randperm(len(groups), generator=gen)[: args.batch].tolist()
    texts = [groups[i][0] for i in picks]
    vocab = {w: i for i, w in enumerate(sorted({w for t in texts for w in t.split()}))}
    bow = torch.zeros(args.batch, len(vocab))
    for row, text in enumerate(texts):
        for word in text.split():
            bow[row, vocab[word]] += 1
    bow = torch.nn.functional.normalize(bow, dim=1)
    cos = bow @ bow.T
    try:
        from vse_ray.relevance import cider_matrix

        cider = torch.from_numpy(cider_matrix(texts, [groups[i] for i in picks]).T.astype(np.float32))
        source = "CIDEr-D"
    except ImportError:
        cider, source = 5 * cos, "5 x bag-of-words cosine"
    return {"sbert": cos, "svd": cos, "cider": cider}, f"Flickr30K captions: bag-of-words cosine, {source}"


def round_robin_median_ms(
    fns: dict[str, Callable[[], object]],
    repeats: int,
    warmup: int = 5,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """Median ms of each function, timed in turn within every repeat so that load changes hit all alike.

    ``clock``: wall time by default; ``time.process_time`` counts only this process's CPU time, which other
    jobs on a shared machine do not inflate by taking the cores away (use it with one torch thread)."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = clock()
            fn()
            times[name].append(clock() - start)
    return {name: 1e3 * statistics.median(values) for name, values in times.items()}


def synchronised(fn: Callable[[], object], device: torch.device) -> Callable[[], object]:
    """``fn`` followed by a wait for the device's queued work, so that timings cover it (CUDA runs async)."""
    if device.type != "cuda":
        return fn
    return lambda: (fn(), torch.cuda.synchronize(device))


def inertia(x: np.ndarray, ends: np.ndarray) -> float:
    starts = np.concatenate(([0], ends[:-1]))
    return float(
        sum(((x[a:b] - x[a:b].mean()) ** 2).sum() for a, b in zip(starts, ends, strict=True) if b > a)
    )


def lloyd_against_exact(rel: torch.Tensor, l_min: int, l_max: int) -> str:
    """Clusterings (query x k) where Lloyd stops above the exact optimum, and queries whose L* moves."""
    cand = ~torch.eye(rel.shape[0], dtype=torch.bool)
    stacked, stacked_cand = torch.stack((rel, rel.T)).double(), torch.stack((cand, cand))
    rows = [
        row[keep].sort().values.numpy()
        for row, keep in zip(stacked.flatten(0, 1), stacked_cand.flatten(0, 1), strict=True)
    ]
    xs, counts = np.stack(rows), np.array([len(r) for r in rows])
    ks = np.tile(np.arange(l_min, l_max + 1), (len(rows), 1))
    lloyd, exact = kmeans_1d_sorted(xs, counts, ks), kmeans_1d_exact_sorted(xs, counts, ks)
    above = sum(
        inertia(x, lloyd[r, g, :k]) > inertia(x, exact[r, g, :k]) * (1 + 1e-12) + 1e-15
        for r, x in enumerate(xs)
        for g, k in enumerate(ks[r])
    )
    moved = adaptive_levels(stacked, stacked_cand, l_min, l_max, kmeans="lloyd")[1]
    moved = int((moved != adaptive_levels(stacked, stacked_cand, l_min, l_max, kmeans="exact")[1]).sum())
    return (
        f"  Lloyd above the exact optimum in {above} of {ks.size} clusterings; "
        f"L* changes for {moved} of {len(rows)} queries"
    )


def median_ms(
    fn: Callable[[], object], repeats: int, warmup: int = 5, clock: Callable[[], float] = time.perf_counter
) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = clock()
        fn()
        times.append(clock() - start)
    return 1e3 * statistics.median(times)


def sklearn_levels(rel: np.ndarray, l_min: int, l_max: int) -> None:
    """Per query and per k: KMeans + silhouette_score on the off-diagonal relevance (both directions)."""
    for matrix in (rel, rel.T):
        for q in range(matrix.shape[0]):
            x = np.delete(matrix[q], q).reshape(-1, 1)
            scores = []
            for k in range(l_min, l_max + 1):
                labels = KMeans(k, n_init=1, random_state=0).fit(x).labels_
                scores.append(silhouette_score(x, labels))
            int(np.argmax(scores))


def main() -> None:
    args = parse_args()
    with row_kernel_backend(args.row_kernels):
        run(args)


def run(args: argparse.Namespace) -> None:
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    gen = torch.Generator().manual_seed(args.seed)
    rel, source = relevance_matrices(args, gen)
    base = torch.randn(args.batch, args.dim, generator=gen)
    img = torch.nn.functional.normalize(base, dim=1).to(device).requires_grad_()
    txt = torch.nn.functional.normalize(base + torch.randn(args.batch, args.dim, generator=gen), dim=1)
    txt = txt.to(device).requires_grad_()
    print(
        f"B = {args.batch}, D = {args.dim}, device = {device}, row kernels = {args.row_kernels}, "
        f"torch threads = {torch.get_num_threads()}, relevance: {source}\n"
    )

    steps = {}
    losses = {name: make_loss(name).to(device) for name in LOSS_NAMES}
    losses["ladder_auto_lloyd"] = make_loss("ladder_auto", kmeans="lloyd").to(device)
    for name, loss in losses.items():
        relevance = rel[loss.relevance_source].to(device) if loss.relevance_source else None
        step = lambda loss=loss, relevance=relevance: loss(img, txt, relevance).backward()  # noqa: E731
        steps[name] = synchronised(step, device)
    times = round_robin_median_ms(steps, args.repeats)
    print(f"{'loss':<12} {'fwd+bwd ms':>10} {'x vsepp':>8} {'target':>7}  ok")
    for name, ms in times.items():
        ratio, target = ms / times["vsepp"], TARGET_RATIO.get(name, DEFAULT_TARGET)
        print(f"{name:<12} {ms:>10.3f} {ratio:>8.2f} {target:>6.1f}x  {'yes' if ratio <= target else 'NO'}")

    cand = ~torch.eye(args.batch, dtype=torch.bool, device=device)
    sbert = rel["sbert"].to(device)
    stacked_rel, stacked_cand = torch.stack((sbert, sbert.T)), torch.stack((cand, cand))
    levels = {
        kmeans: median_ms(
            synchronised(
                lambda kmeans=kmeans: adaptive_levels(stacked_rel, stacked_cand, 2, 4, kmeans=kmeans), device
            ),
            args.repeats,
        )
        for kmeans in ("exact", "lloyd")
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = median_ms(lambda: sklearn_levels(rel["sbert"].numpy(), 2, 4), args.ref_repeats, warmup=0)
    speedup = reference / levels["exact"]
    print(f"\nladder_auto levels, k = 2..4, both directions, {args.batch} queries each:")
    print(
        f"  exact {levels['exact']:.3f} ms | Lloyd {levels['lloyd']:.3f} ms "
        f"({levels['exact'] / levels['lloyd']:.1f}x) | per-query scikit-learn {reference:.0f} ms | "
        f"exact {speedup:.0f}x faster "
        f"(target >= {CLUSTER_SPEEDUP_TARGET:.0f}x: {'yes' if speedup >= CLUSTER_SPEEDUP_TARGET else 'NO'})"
    )
    print(lloyd_against_exact(rel["sbert"], 2, 4))


if __name__ == "__main__":
    main()
