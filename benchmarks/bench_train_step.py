"""Whole training step per loss (GRU + projection + loss, forward + backward + Adam, plus building the batch
relevance the loss needs) at B = 128 with the VSE++ dims, as ratios to VSE++ in the same run (target ≤ 1.3×).
Then the model: a VSE∞ step on R = 36 region features (B, 36, 2048) against a VSE++ step on pooled features,
both with the VSE++ loss, the same batch and embedding size (target ≤ 1.5×); `--region-models cvse` also times
those region models on the same batch, as ratios to VSE∞.

Captions come from the Flickr30K file when present (5 per image: the batch takes one caption of each of B
images as hypotheses and all 5 as CIDEr references); otherwise random word sequences stand in. Their CIDEr-D
vectors are made once, as precompute stores them; the SAM step builds its relevance from them.

    python benchmarks/bench_train_step.py
    python benchmarks/bench_train_step.py --repeats 20 --dim 256 --word-dim 128
    python benchmarks/bench_train_step.py --losses sam --no-models     # SAM against VSE++ only
    python benchmarks/bench_train_step.py --loss-model vse_inf --no-models  # every loss on VSE∞ (≤ 1.15×)

`--ddp-workers W` times the VSE++ step instead as W Ray Train workers (Gloo DDP, B/W rows each, embeddings
gathered into the global batch) on a local one-node Ray of W CPUs; with `--cluster-address` also on that
running cluster (workers spread over its nodes, 1 CPU each), printing the cluster / one-node ratio (≤ 1.2×):

    python benchmarks/bench_train_step.py --ddp-workers 2 --cluster-address 10.0.0.1:6379
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import torch
from bench_losses import round_robin_median_ms, synchronised

from vse_ray.data.store.split_data import ImageStore
from vse_ray.losses import LOSS_NAMES, make_loss
from vse_ray.models import build_model
from vse_ray.relevance import CiderReferences, CiderVectors, cider_doc_freq, tokenize
from vse_ray.train.batches import BatchBuilder
from vse_ray.train.config import TrainConfig
from vse_ray.train.epoch_loop import WorkerContext, host_batch, train_one_epoch, train_step
from vse_ray.train.gather import gather_rows, relevance_columns

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CAPTIONS = "../shared/data/f30k_test_caps.txt"
TARGET = 1.3
REGION_LOSS_TARGET = 1.15  # on VSE∞ the loss is a smaller share of the step
MODEL_TARGET = 1.5
CLUSTER_TARGET = 1.2


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
    parser.add_argument(
        "--losses", nargs="+", choices=LOSS_NAMES, default=list(LOSS_NAMES), help="losses to time (and vsepp)"
    )
    parser.add_argument("--no-models", action="store_true", help="skip the VSE∞ / VSE++ comparison")
    parser.add_argument(
        "--loss-model",
        default="vsepp",
        help="the model every loss's step trains (vsepp on pooled features; vse_inf on regions)",
    )
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall time, or this process's CPU time (on a shared machine; with --threads 1)",
    )
    parser.add_argument(
        "--region-models",
        nargs="*",
        default=[],
        help="also time these region models (e.g. cvse) against VSE∞",
    )
    parser.add_argument(
        "--epoch-loop",
        type=int,
        default=0,
        metavar="STEPS",
        help="time each loss as STEPS steps of the epoch loop (`train_one_epoch`: the next batch and its "
        "relevance are built on its thread while a step runs), not one step with its batch built in line",
    )
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--device", default="cpu", help="device of the model and batch (cpu, cuda)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ddp-workers", type=int, default=0, help="time a W-worker Ray Train DDP step")
    parser.add_argument(
        "--cluster-address",
        help="with --ddp-workers: also time it on this running cluster (e.g. 10.0.0.1:6379), workers spread",
    )
    parser.add_argument("--one-ddp", choices=("local", "cluster"), help=argparse.SUPPRESS)
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
        "caption_id": np.arange(args.batch, dtype=np.int64) * 5,  # caption 5b + k is caption k of image b
        "image_id": np.arange(args.batch, dtype=np.int64),
        "tokens": np.array(tokens, dtype=object),
        "text": np.array(texts, dtype=object),
        "sbert": unit(rng.normal(size=(args.batch, 384))),
        "svd": unit(rng.normal(size=(args.batch, 400))),
    }


class SameRows:
    """A batch source whose every epoch is `steps` batches of the same rows."""

    def __init__(self, rows: dict, steps: int):
        self.rows, self.steps = rows, steps

    def epoch_batches(self, epoch: int) -> Iterator[dict]:
        return itertools.repeat(self.rows, self.steps)


def make_step(
    name: str,
    rows: dict,
    groups: list[list[str]],
    args: argparse.Namespace,
    model_name: str = "vsepp",
    rank: int = 0,
    world_size: int = 1,
) -> Callable[[], None]:
    """A closure running one relevance build + training step for loss `name` on its own model copy
    (VSE++ on pooled features, or a region model such as VSE∞ on `args.regions` regions per image). With
    `world_size` > 1 it is DDP rank `rank`'s step on its `rows`: rows and embeddings are gathered into the
    global batch."""
    torch.manual_seed(args.seed)
    shape = (
        (args.batch, args.feature_dim)
        if model_name == "vsepp"
        else (args.batch, args.regions, args.feature_dim)
    )
    features = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    loss = make_loss(name)
    vectors = CiderVectors.from_texts([c for g in groups for c in g], cider_doc_freq(groups))
    n_captions = 5 * len(groups)
    refs = CiderReferences(vectors, np.arange(n_captions), np.arange(n_captions) // 5)
    builder = BatchBuilder(ImageStore(np.arange(args.batch), features), loss.relevance_source, refs)
    model = build_model(
        model_name,
        vocab_size=20_000,
        feature_dim=args.feature_dim,
        word_dim=args.word_dim,
        embed_dim=args.dim,
    )
    device = torch.device(getattr(args, "device", "cpu"))
    model, loss = model.to(device), loss.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-4)
    if getattr(args, "epoch_loop", 0):
        cfg = TrainConfig(data_dir=".", model=model_name, loss=name, batch_size=args.batch)
        ctx = WorkerContext(SameRows(rows, args.epoch_loop), device)
        epoch = lambda: train_one_epoch(cfg, 1, model, loss, optimizer, builder, ctx, None)  # noqa: E731
        return synchronised(epoch, device)
    if world_size == 1:
        batch = lambda: host_batch(builder, rows, None, None, None, device).to(device)  # noqa: E731
        step = lambda: train_step(model, loss, optimizer, batch(), 2.0)  # noqa: E731
        return synchronised(step, device)
    net, columns = torch.nn.parallel.DistributedDataParallel(model), relevance_columns(loss.relevance_source)
    return lambda: train_step(
        net, loss, optimizer, builder(rows, gather_rows(rows, columns, world_size)), 2.0, rank, world_size
    )


def _ddp_worker(config: dict) -> None:  # pragma: no cover, runs inside Ray Train workers
    """Rank r times its step on rows r·B/W .. (r+1)·B/W of the batch every rank draws alike."""
    import ray.train

    args = argparse.Namespace(**config)
    context = ray.train.get_context()
    rank, world = context.get_world_rank(), context.get_world_size()
    rng = np.random.default_rng(args.seed)
    groups = caption_groups((REPO_ROOT / args.captions).resolve(), args.batch, rng)
    rows = batch_rows(groups, args, rng)
    share = args.batch // world
    mine = {k: v[rank * share : (rank + 1) * share] for k, v in rows.items()}
    step = make_step("vsepp", mine, groups, args, rank=rank, world_size=world)
    ms = round_robin_median_ms({"ddp": step}, args.repeats, warmup=2)["ddp"]
    nodes: list[str | None] = [None] * world
    torch.distributed.all_gather_object(nodes, ray.get_runtime_context().get_node_id())
    metrics = {"ms": ms, "nodes": len(set(nodes)), "threads": torch.get_num_threads()}
    with tempfile.TemporaryDirectory() as folder:  # Train V2 keeps only checkpointed reports in its Result
        checkpoint = ray.train.Checkpoint.from_directory(folder) if rank == 0 else None
        ray.train.report(metrics, checkpoint=checkpoint)


def ddp_step_ms(args: argparse.Namespace) -> dict:
    """Median ms of a W-worker DDP step (and how many nodes its workers ran on), on a local Ray of W CPUs or
    (`--one-ddp cluster`) on the cluster."""
    import ray
    import ray.train
    from ray.train.torch import TorchTrainer

    here = os.pathsep.join([str(REPO_ROOT / "benchmarks"), str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])
    runtime_env = {"env_vars": {"PYTHONPATH": here}}  # the workers import this file's helpers
    where = (
        {"address": args.cluster_address}
        if args.one_ddp == "cluster"
        else {"num_cpus": args.ddp_workers, "include_dashboard": False}
    )
    ray.init(log_to_driver=False, runtime_env=runtime_env, **where)
    keys = ("captions", "batch", "dim", "word_dim", "feature_dim", "regions", "repeats", "seed")
    with tempfile.TemporaryDirectory(prefix="bench_ddp_") as storage:
        result = TorchTrainer(
            _ddp_worker,
            train_loop_config={k: getattr(args, k) for k in keys},
            scaling_config=ray.train.ScalingConfig(
                num_workers=args.ddp_workers, resources_per_worker={"CPU": 1}, placement_strategy="SPREAD"
            ),
            run_config=ray.train.RunConfig(name="bench_ddp", storage_path=storage),
        ).fit()
    ray.shutdown()
    return {k: result.metrics[k] for k in ("ms", "nodes", "threads")}


def _ddp_child(args: argparse.Namespace, where: str) -> dict:
    """`ddp_step_ms` in a fresh process (one Ray driver each); its JSON result."""
    cmd = [sys.executable, __file__, "--one-ddp", where, "--ddp-workers", str(args.ddp_workers)]
    cmd += ["--batch", str(args.batch), "--dim", str(args.dim), "--word-dim", str(args.word_dim)]
    cmd += ["--feature-dim", str(args.feature_dim), "--repeats", str(args.repeats)]
    cmd += ["--seed", str(args.seed), "--captions", args.captions]
    cmd += ["--cluster-address", args.cluster_address] if where == "cluster" else []
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def compare_ddp(args: argparse.Namespace) -> None:
    """The DDP step on one node, and on the cluster when given: ms per step and their ratio."""
    print(f"VSE++ DDP step, B={args.batch} over {args.ddp_workers} workers (1 CPU each), D={args.dim}")
    runs = {"one node": _ddp_child(args, "local")}
    if args.cluster_address:
        runs["cluster"] = _ddp_child(args, "cluster")
    for name, run in runs.items():
        placement = f"workers on {run['nodes']} node(s), {run['threads']} torch thread(s) each"
        print(f"{name:>9}: {run['ms']:8.1f} ms/step  ({placement})")
    if "cluster" in runs:
        ratio = runs["cluster"]["ms"] / runs["one node"]["ms"]
        print(f"cluster / one node: {ratio:.2f}× (target ≤ {CLUSTER_TARGET})")


def main() -> None:
    args = parse_args()
    if args.one_ddp:
        print(json.dumps(ddp_step_ms(args)))
        return
    if args.ddp_workers:
        compare_ddp(args)
        return
    if args.threads:
        torch.set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)
    path = (REPO_ROOT / args.captions).resolve()
    groups = caption_groups(path, args.batch, rng)
    rows = batch_rows(groups, args, rng)
    threads = torch.get_num_threads()
    print(
        f"B={args.batch} D={args.dim} word={args.word_dim} features={args.feature_dim} threads={threads} "
        f"device={args.device} clock={args.clock}"
    )
    print(f"captions: {path if path.is_file() else 'random words (file not found)'}")
    if not args.models_only:
        names = ["vsepp", *(name for name in args.losses if name != "vsepp")]
        steps = {name: make_step(name, rows, groups, args, args.loss_model) for name in names}
        clock = time.process_time if args.clock == "cpu" else time.perf_counter
        medians = round_robin_median_ms(steps, args.repeats, warmup=1, clock=clock)  # 1 round warms up
        if args.epoch_loop:
            medians = {name: ms / args.epoch_loop for name, ms in medians.items()}
        target = TARGET if args.loss_model == "vsepp" else REGION_LOSS_TARGET
        how = f"epoch loop, {args.epoch_loop} steps a run" if args.epoch_loop else "batch built in line"
        print(f"model {args.loss_model} ({how})")
        print(f"{'loss':>12}  {'ms/step':>8}  {'× vsepp':>8}  target ≤ {target}")
        for name, ms in medians.items():
            ratio = ms / medians["vsepp"]
            flag = "" if ratio <= target else "  (over target)"
            print(f"{name:>12}  {ms:8.1f}  {ratio:8.2f}{flag}")
    if args.no_models:
        return
    models = {m: make_step("vsepp", rows, groups, args, m) for m in ("vsepp", "vse_inf", *args.region_models)}
    medians = round_robin_median_ms(models, args.repeats, warmup=1)
    ratio = medians["vse_inf"] / medians["vsepp"]
    print(
        f"model step (loss vsepp): vsepp {medians['vsepp']:.1f} ms on ({args.batch}, {args.feature_dim}), "
        f"vse_inf {medians['vse_inf']:.1f} ms on ({args.batch}, {args.regions}, {args.feature_dim}): "
        f"{ratio:.2f}× (target ≤ {MODEL_TARGET})"
    )
    for name in args.region_models:
        print(
            f"{name} {medians[name]:.1f} ms on the same batch: {medians[name] / medians['vse_inf']:.2f}× VSE∞"
        )


if __name__ == "__main__":
    main()
