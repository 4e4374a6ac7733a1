"""Whole training step per loss (GRU + projection + loss, forward + backward + Adam, plus building the batch
relevance the loss needs) at B = 128 with the VSE++ dims, as ratios to VSE++ in the same run (target ≤ 1.3×).
Then the model: a VSE∞ step on R = 36 region features (B, 36, 2048) against a VSE++ step on pooled features,
both with the VSE++ loss, the same batch and embedding size (target ≤ 1.5×).

Captions come from the Flickr30K file when present (5 per image: the batch takes one caption of each of B
images as hypotheses and all 5 as CIDEr references); otherwise random word sequences stand in.

    python benchmarks/bench_train_step.py
    python benchmarks/bench_train_step.py --repeats 20 --dim 256 --word-dim 128
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from bench_losses import round_robin_median_ms

from vse_ray.data.split_data import ImageStore
from vse_ray.losses import LOSS_NAMES, make_loss
from vse_ray.models import build_model
from vse_ray.relevance import tokenize
from vse_ray.relevance.cider_doc_freq import cider_doc_freq
from vse_ray.train.batches import BatchBuilder
from vse_ray.train.engine import train_step

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CAPTIONS = "../shared/data/f30k_test_caps.txt"
TARGET = 1.3
MODEL_TARGET = 1.5


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--captions", default=DEFAULT_CAPTIONS, help="captions file, 5 per image, image order"
    )
    parser.add_argument("--batch", type=int, default=128, help="batch size B")
    parser.add_argument("--dim", type=int, default=1024, help="joint embedding / GRU size D")
    parser.add_argument("--word-dim", type=int, default=300, help="word embedding size")
    parser.add_argument("--feature-dim", type=int, default=2048, help="image feature size (ResNet-152)")
    parser.add_argument("--regions", type=int, default=36, help="regions per image for the VSE∞ step")
    parser.add_argument("--repeats", type=int, default=10, help="timed steps per loss")
    parser.add_argument("--models-only", action="store_true", help="time only the VSE∞ / VSE++ comparison")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def caption_groups(path: Path, n_images: int, rng: np.random.Generator) -> list[list[str]]:
    """n_images groups of 5 tokenised captions: from the file, or random 8-15 word sequences."""
    if path.is_file():
        lines = [tokenize(line) for line in path.read_text().splitlines() if line.strip()]
        groups = [lines[i : i + 5] for i in range(0, len(lines) - 4, 5)]
        return [groups[i] for i in rng.choice(len(groups), n_images, replace=False)]
    words = [f"w{i}" for i in range(2000)]
    return [[" ".join(rng.choice(words, rng.integers(8, 16))) for _ in range(5)] for _ in range(n_images)]


def batch_rows(groups: list[list[str]], args: argparse.Namespace, rng: np.random.Generator) -> dict:
    """One batch as a dict of numpy columns, as Ray Data hands it to the worker."""
    vocab: dict[str, int] = {}
    texts = [g[0] for g in groups]
    tokens = [
        np.array([vocab.setdefault(w, len(vocab) + 4) for w in t.split()], dtype=np.int64) for t in texts
    ]
    unit = lambda x: (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)  # noqa: E731
    return {
        "image_id": np.arange(args.batch, dtype=np.int64),
        "tokens": np.array(tokens, dtype=object),
        "text": np.array(texts, dtype=object),
        "sbert": unit(rng.normal(size=(args.batch, 384))),
        "svd": unit(rng.normal(size=(args.batch, 400))),
    }


def make_step(
    name: str, rows: dict, groups: list[list[str]], args: argparse.Namespace, model_name: str = "vsepp"
) -> Callable[[], None]:
    """A closure running one relevance build + training step for loss `name` on its own model copy
    (VSE++ on pooled features, or VSE∞ on `args.regions` regions per image)."""
    torch.manual_seed(args.seed)
    shape = (
        (args.batch, args.feature_dim)
        if model_name == "vsepp"
        else (args.batch, args.regions, args.feature_dim)
    )
    features = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    loss = make_loss(name)
    refs = dict(enumerate(groups))
    builder = BatchBuilder(
        ImageStore(np.arange(args.batch), features), loss.relevance_source, refs, cider_doc_freq(groups)
    )
    model = build_model(
        model_name,
        vocab_size=20_000,
        feature_dim=args.feature_dim,
        word_dim=args.word_dim,
        embed_dim=args.dim,
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-4)
    return lambda: train_step(model, loss, optimizer, builder(rows), 2.0)


def main() -> None:
    args = parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)
    path = (REPO_ROOT / args.captions).resolve()
    groups = caption_groups(path, args.batch, rng)
    rows = batch_rows(groups, args, rng)
    threads = torch.get_num_threads()
    print(f"B={args.batch} D={args.dim} word={args.word_dim} features={args.feature_dim} threads={threads}")
    print(f"captions: {path if path.is_file() else 'random words (file not found)'}")
    if not args.models_only:
        steps = {name: make_step(name, rows, groups, args) for name in LOSS_NAMES}
        medians = round_robin_median_ms(steps, args.repeats, warmup=1)  # one round warms up allocators
        print(f"{'loss':>12}  {'ms/step':>8}  {'× vsepp':>8}  target ≤ {TARGET}")
        for name, ms in medians.items():
            ratio = ms / medians["vsepp"]
            flag = "" if ratio <= TARGET else "  (over target)"
            print(f"{name:>12}  {ms:8.1f}  {ratio:8.2f}{flag}")
    models = {m: make_step("vsepp", rows, groups, args, m) for m in ("vsepp", "vse_inf")}
    medians = round_robin_median_ms(models, args.repeats, warmup=1)
    ratio = medians["vse_inf"] / medians["vsepp"]
    print(
        f"model step (loss vsepp): vsepp {medians['vsepp']:.1f} ms on ({args.batch}, {args.feature_dim}), "
        f"vse_inf {medians['vse_inf']:.1f} ms on ({args.batch}, {args.regions}, {args.feature_dim}): "
        f"{ratio:.2f}× (target ≤ {MODEL_TARGET})"
    )


if __name__ == "__main__":
    main()
