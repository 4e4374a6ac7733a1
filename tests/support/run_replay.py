"""Replay a recorded run of the official VSE∞ code through vse_ray's own training engine.

A recording (`tests/fixtures/official/vse_inf_run_replay.npz`, see the README there) holds a precomp dataset
as the official code reads it (`{split}_ims.npy`, `{split}_caps.txt`, its vocabulary JSON), the initial
weights the official code drew, and every training step's draws: the caption indices of the batch, each
image's region-drop keep mask and the token ids fed. `write_store` turns the dataset into a vse_ray data
folder with vse_ray's own caption tokenizer and vocabulary reader; `ReplayBatches` is a batch source that
deals the recorded batches, with their masks as the rows' ``region_keep`` column; `official_start` is the
epoch-0 state of the official initial weights. Everything else (batch building, model, loss, warm-up
switch, optimiser, validation) is vse_ray's.

A recording made with the official caption augmentation (`caption_aug` in its meta) is replayed with the
augmented token ids the official run drew (vse_ray's own augmentation off), and its vocabulary gets `<mask>`
after the words, as the official `train.py` adds it, so that the model has the official `<mask>` row.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

from tests.support.local_reporter import LocalReporter
from tests.support.tiny_store import region_table
from vse_ray.checkpoint_files import load_checkpoint
from vse_ray.data.precompute.official_vocab import ReleasedTokenizer, read_vocab_file
from vse_ray.data.precompute.vocab import encode
from vse_ray.data.store.verify import describe_folder
from vse_ray.models import build_model, official_names
from vse_ray.special_tokens import MASK
from vse_ray.train.config import TrainConfig
from vse_ray.train.epoch_loop import WorkerContext, run_training
from vse_ray.train.optim import build_optimizer

CAPTIONS_PER_IMAGE = 5
SPLITS = {"train": "train", "dev": "val"}  # official file prefix → vse_ray split


class Recording:
    """The arrays of a recording, grouped by prefix."""

    def __init__(self, path: Path) -> None:
        with np.load(path) as data:
            self.arrays = {k: data[k] for k in data.files}
        self.meta = json.loads(str(self.arrays["meta"]))
        self.epoch_steps = [int(s) for s in self.arrays["epoch_steps"]]

    def group(self, prefix: str) -> dict[str, np.ndarray]:
        return {k.split("/", 1)[1]: v for k, v in self.arrays.items() if k.startswith(prefix + "/")}

    def epoch_losses(self) -> list[float]:
        """The official mean training loss of each epoch."""
        losses, bounds = self.arrays["losses"], [0, *self.epoch_steps]
        return [float(losses[a:b].mean()) for a, b in zip(bounds, bounds[1:], strict=False)]


def write_store(rec: Recording, root: Path) -> Path:
    """A vse_ray data folder holding the recording's train and dev splits (dev as val)."""
    data = rec.group("data")
    vocab_file = root / "released_vocab.json"
    root.mkdir(parents=True)
    vocab_file.write_text(str(data["vocab_json"]))
    vocab = read_vocab_file(vocab_file)
    if rec.meta["caption_aug"]:
        vocab[MASK] = max(vocab.values()) + 1
    tokenize = ReleasedTokenizer()
    first_image = first_caption = 0
    for prefix, split in SPLITS.items():
        features = data[f"{prefix}_ims"]
        texts = str(data[f"{prefix}_caps"]).splitlines()
        n_images, n_captions = len(features), len(texts)
        assert n_captions == CAPTIONS_PER_IMAGE * n_images
        image_ids = np.arange(first_image, first_image + n_images, dtype=np.int64)
        captions = pa.table(
            {
                "caption_id": np.arange(first_caption, first_caption + n_captions, dtype=np.int64),
                "image_id": np.repeat(image_ids, CAPTIONS_PER_IMAGE),
                "split": [split] * n_captions,
                "text": texts,
                "tokens": pa.array([encode(tokenize(t), vocab) for t in texts], type=pa.list_(pa.int32())),
            }
        )
        for kind in ("features", "captions"):
            (root / kind / f"split={split}").mkdir(parents=True)
        table = region_table(image_ids, split, features, "float32")
        with pa.ipc.new_file(root / "features" / f"split={split}" / "part-00000000.arrow", table.schema) as w:
            w.write_table(table.combine_chunks(), max_chunksize=n_images)
        pq.write_table(captions, root / "captions" / f"split={split}" / "part-0.parquet")
        first_image, first_caption = first_image + n_images, first_caption + n_captions
    (root / "vocab.json").write_text(json.dumps(vocab))
    regions, dim = data["train_ims"].shape[1:]
    dims = {"feature": int(dim), "feature_shape": [int(regions), int(dim)], "regions": int(regions)}
    manifest = {**describe_folder(root), "dataset": "replay", "dims": dims, "vocab_size": len(vocab)}
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


class ReplayBatches:
    """The recorded batches in their order, each caption row with the regions its image kept."""

    def __init__(self, rec: Recording, table: pa.Table) -> None:
        self.rec = rec
        self.columns = {name: table[name].to_numpy(zero_copy_only=False) for name in table.column_names}
        # official caption index = line of train_caps.txt = vse_ray caption_id of the train split
        self.row_of = {int(c): i for i, c in enumerate(self.columns["caption_id"])}
        self.fed: list[dict[str, np.ndarray]] = []

    def epoch_batches(self, epoch: int) -> Iterator[dict[str, Any]]:
        bounds = [0, *self.rec.epoch_steps]
        for step in range(bounds[epoch - 1], bounds[epoch]):
            drawn = self.rec.group(f"step{step}")
            rows = np.array([self.row_of[int(i)] for i in drawn["ids"]])
            batch = {name: column[rows] for name, column in self.columns.items()}
            self.fed.append(
                {"tokens": batch["tokens"], "official": drawn["tokens"], "lengths": drawn["lengths"]}
            )
            if self.rec.meta["caption_aug"]:  # the augmented ids the official run drew
                batch["tokens"] = np.empty(len(rows), dtype=object)
                for i, (ids, n) in enumerate(zip(drawn["tokens"], drawn["lengths"], strict=True)):
                    batch["tokens"][i] = ids[:n]
            yield {**batch, "region_keep": list(drawn["keep"])}


def replay_config(rec: Recording, data_dir: Path, output_dir: Path) -> TrainConfig:
    """The recorded run's settings as vse_ray training options."""
    meta = rec.meta
    return TrainConfig(
        data_dir=str(data_dir),
        model="vse_inf",
        model_params={"region_drop": 0.2},
        loss="vsepp",
        loss_params={"margin": 0.2},
        warmup_loss="vse0",
        warmup_params={"margin": 0.2},
        warmup_epochs=1,
        epochs=int(meta["epochs"]),
        batch_size=128,
        optimizer="adam" if meta["adam"] else "adamw",
        lr=float(meta["lr"]),
        weight_decay=0.0 if meta["adam"] else 0.01,  # torch's AdamW default, which the official code keeps
        grad_clip=2.0,
        negatives="diagonal",
        word_dim=int(meta["word_dim"]),
        embed_dim=int(meta["embed"]),
        output_dir=str(output_dir),
    ).validate()


def official_start(rec: Recording, cfg: TrainConfig, model_args: dict[str, Any]) -> dict[str, Any]:
    """The epoch-0 state of a run from the official initial weights (every tensor, the `<mask>` row
    included: vse_ray's VSE∞ holds it with or without caption augmentation), with a fresh optimiser and
    schedule."""
    model = build_model(cfg.model, **model_args)
    state = model.state_dict()
    for name, value in rec.group("init").items():
        key = official_names.VSE_INF_BIGRU.ours(name)
        if key is not None:
            state[key] = torch.from_numpy(value)
    model.load_state_dict(state)
    optimizer, scheduler = build_optimizer(cfg, model)
    return {
        "epoch": 0,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "history": [],
    }


def replay_run(
    rec: Recording, cfg: TrainConfig, train_captions: pa.Table, start: dict[str, Any], folder: Path
) -> tuple[LocalReporter, ReplayBatches]:
    """vse_ray's engine from `start`, fed the recording's draws, checkpoints copied to `folder`."""
    reporter, batches = LocalReporter(folder), ReplayBatches(rec, train_captions)
    run_training(cfg.checked(), reporter, start, WorkerContext(batches, torch.device("cpu")))
    return reporter, batches


def relative_diff(ours: np.ndarray, theirs: np.ndarray) -> float:
    """max |ours − theirs| / max |theirs|: how far one weight tensor is from another, relative to its size."""
    return float(np.abs(ours - theirs).max() / max(np.abs(theirs).max(), 1e-30))


def _perturbed(start: dict[str, Any], seed: int) -> dict[str, Any]:
    """`start` with every floating-point weight multiplied by (1 + 1e-7·N(0, 1)): a rounding-size change."""
    draw = torch.Generator().manual_seed(seed)
    model = {
        name: value * (1 + 1e-7 * torch.randn(value.shape, generator=draw, dtype=value.dtype))
        if value.is_floating_point()
        else value
        for name, value in start["model"].items()
    }
    return {**start, "model": model}


def rounding_copies(
    rec: Recording,
    cfg: TrainConfig,
    train_captions: pa.Table,
    start: dict[str, Any],
    replayed: LocalReporter,
    copies: int,
    skip: tuple[str, ...],
) -> dict[str, np.ndarray]:
    """What rounding alone does to the replayed run on this machine: the run again from `copies` perturbed
    starts (`_perturbed`), per epoch: the largest relative difference of the mean loss and of the weights
    (max |a − b| / max |b| per tensor, `skip` left out) from `replayed`, and the range of the validation rsum
    over the replay and its copies (`rsum_low`, `rsum_high`, `rsum_spread`)."""
    epochs = len(replayed.history)
    loss_diff, weight_diff = np.zeros(epochs), np.zeros(epochs)
    rsums = [[m["rsum"] for m in replayed.history]]
    with tempfile.TemporaryDirectory() as folder:
        for k in range(1, copies + 1):
            reporter, _ = replay_run(
                rec, cfg, train_captions, _perturbed(start, k), Path(folder) / f"copy{k}"
            )
            rsums.append([m["rsum"] for m in reporter.history])
            for e, (ours, base) in enumerate(zip(reporter.history, replayed.history, strict=True)):
                loss_diff[e] = max(
                    loss_diff[e], abs(ours["train_loss"] - base["train_loss"]) / base["train_loss"]
                )
                a = load_checkpoint(reporter.checkpoints[e])["model"]
                b = load_checkpoint(replayed.checkpoints[e])["model"]
                for name in b:
                    if name not in skip and b[name].is_floating_point() and b[name].ndim > 0:
                        weight_diff[e] = max(weight_diff[e], relative_diff(a[name].numpy(), b[name].numpy()))
    table = np.array(rsums)
    low, high = table.min(axis=0), table.max(axis=0)
    return {
        "loss_diff": loss_diff,
        "weight_diff": weight_diff,
        "rsum_low": low,
        "rsum_high": high,
        "rsum_spread": high - low,
    }
