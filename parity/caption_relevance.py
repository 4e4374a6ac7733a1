"""Does the meaning of the synthetic captions, not their template, drive S-BERT? Embedded set vs Flickr30K.

Three measures on the test split of the synthetic dataset (captions written from the scene description),
side by side with the real Flickr30K test captions (5 per image), with the same Sentence-BERT model:

- Spearman(S-BERT caption cosine, scene similarity) over random pairs of captions of different images
  (embedded only: Flickr30K has no scene descriptions);
- the median and 90th percentile of the S-BERT cosine between captions of different images;
- the same-image rate among each caption's 4 nearest S-BERT neighbours (itself excluded);
- the share of different-image pairs at or above the ladder paper's θ = 0.40;
- for the embedded set, the cosines split by whether the two scenes share an object kind: the p90 of all pairs
  falls among the kind-sharing pairs whenever more than 10 % of pairs share a kind.

    python parity/caption_relevance.py                       # 1,000 test images, as F30K test
    python parity/caption_relevance.py --f30k PATH --n-images 1000 --pairs 200000
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr

from vse_ray.data.synthetic.dataset import generate_synthetic
from vse_ray.data.synthetic.scene import scene_descriptor
from vse_ray.relevance import DEFAULT_SENTENCE_MODEL, SentenceEncoder, scene_similarity

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_F30K = "../shared/data/f30k_test_caps.txt"
NEIGHBOURS = 4
LADDER_THETA = 0.40


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--f30k", default=DEFAULT_F30K, help="Flickr30K captions file, 5 per image in order")
    parser.add_argument("--n-images", type=int, default=1000, help="synthetic test images (F30K test: 1,000)")
    parser.add_argument("--pairs", type=int, default=200_000, help="random different-image caption pairs")
    parser.add_argument("--seed", type=int, default=0, help="synthetic dataset seed (and the pair sample's)")
    parser.add_argument("--sbert-model", default=DEFAULT_SENTENCE_MODEL)
    return parser.parse_args()


def different_image_pairs(owner: np.ndarray, n_pairs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A seeded sample of caption index pairs (a, b) whose captions belong to different images."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, len(owner), 2 * n_pairs)
    b = rng.integers(0, len(owner), 2 * n_pairs)
    keep = owner[a] != owner[b]
    return a[keep][:n_pairs], b[keep][:n_pairs]


def neighbour_rate(vectors: np.ndarray, owner: np.ndarray, k: int = NEIGHBOURS) -> float:
    """Share of each caption's k nearest neighbours (cosine, itself excluded) that describe its image."""
    unit = torch.from_numpy(vectors)
    hits = 0
    for start in range(0, len(unit), 1024):
        sims = unit[start : start + 1024] @ unit.T
        rows = torch.arange(start, min(start + 1024, len(unit)))
        sims[rows - start, rows] = -float("inf")
        top = sims.topk(k, dim=1).indices.numpy()
        hits += int((owner[top] == owner[rows.numpy(), None]).sum())
    return hits / (len(unit) * k)


def measures(
    vectors: np.ndarray, owner: np.ndarray, pairs: tuple[np.ndarray, np.ndarray]
) -> dict[str, float]:
    a, b = pairs
    cosines = np.einsum("ij,ij->i", vectors[a], vectors[b])
    return {
        "median": float(np.median(cosines)),
        "p90": float(np.quantile(cosines, 0.9)),
        "nn_rate": neighbour_rate(vectors, owner),
        "above_theta": float((cosines >= LADDER_THETA).mean()),
        "cosines": cosines,
    }


def main() -> None:
    args = _parse_args()
    encoder = SentenceEncoder(args.sbert_model)
    rows: dict[str, dict[str, float]] = {}

    start = time.perf_counter()
    data = generate_synthetic(0, 0, args.n_images, seed=args.seed, render=False)
    texts = [c for caps in data.captions for c in caps]
    owner = np.repeat(np.arange(args.n_images), [len(c) for c in data.captions])
    vectors = encoder.encode(texts)
    pairs = different_image_pairs(owner, args.pairs, args.seed)
    embedded = measures(vectors, owner, pairs)
    descriptors = torch.from_numpy(np.stack([scene_descriptor(s) for s in data.scenes]))
    scene = scene_similarity(descriptors, descriptors).numpy()[owner[pairs[0]], owner[pairs[1]]]
    cosines = embedded.pop("cosines")
    embedded["spearman"] = float(spearmanr(cosines, scene).statistic)
    kinds = [{group.shape for group in s.groups} for s in data.scenes]
    shared = np.array(
        [bool(kinds[i] & kinds[j]) for i, j in zip(owner[pairs[0]], owner[pairs[1]], strict=True)]
    )
    rows["embedded"] = embedded
    print(f"embedded: {len(texts)} captions of {args.n_images} images ({time.perf_counter() - start:.0f} s)")
    print("  e.g. " + " | ".join(data.captions[0]))
    for name, mask in (("sharing an object kind", shared), ("sharing none", ~shared)):
        print(
            f"  pairs {name}: {mask.mean():.1%}, cosine median {np.median(cosines[mask]):.3f}, "
            f"p90 {np.quantile(cosines[mask], 0.9):.3f}"
        )

    f30k = (REPO_ROOT / args.f30k) if not Path(args.f30k).is_absolute() else Path(args.f30k)
    if f30k.is_file():
        lines = [line.strip() for line in f30k.read_text().splitlines() if line.strip()]
        f_owner = np.arange(len(lines)) // 5
        f_vectors = encoder.encode(lines)
        rows["flickr30k"] = measures(
            f_vectors, f_owner, different_image_pairs(f_owner, args.pairs, args.seed)
        )
        rows["flickr30k"].pop("cosines")
        rows["flickr30k"]["spearman"] = float("nan")
        print(f"flickr30k: {len(lines)} captions of {len(lines) // 5} images from {f30k}")
    else:
        print(f"flickr30k: {f30k} not found; embedded only")

    header = ("Spearman(sbert, scene)", "median cos", "p90 cos", "same-image in 4-NN", "cos >= 0.40")
    print(f"\n{'':10s} {header[0]:>23s} {header[1]:>11s} {header[2]:>8s} {header[3]:>19s} {header[4]:>12s}")
    for name, row in rows.items():
        spearman = "n/a" if np.isnan(row["spearman"]) else f"{row['spearman']:.3f}"
        print(
            f"{name:10s} {spearman:>23s} {row['median']:11.3f} {row['p90']:8.3f} {row['nn_rate']:19.3f}"
            f" {row['above_theta']:12.1%}"
        )
    if "flickr30k" in rows:
        e, f = rows["embedded"], rows["flickr30k"]
        print(
            f"\ntargets: Spearman >= 0.6: {e['spearman'] >= 0.6}; "
            f"median within 0.05 of F30K: {abs(e['median'] - f['median']) <= 0.05}; "
            f"p90 within 0.05: {abs(e['p90'] - f['p90']) <= 0.05}; "
            f"4-NN rate >= F30K: {e['nn_rate'] >= f['nn_rate']}"
        )


if __name__ == "__main__":
    main()
