"""Training batches: caption rows (shuffled, sharded) → tensors + the exact B×B relevance of the loss."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import torch

from vse_ray.arrow_columns import ColumnRows, list_column
from vse_ray.data.store.readers import table_schema
from vse_ray.data.store.split_data import ImageStore, pad_tokens
from vse_ray.models.base import AugmentIds
from vse_ray.relevance import CiderReferences, CiderVectors
from vse_ray.relevance.sources import CIDER_COLUMNS, RelevanceSource, training_source
from vse_ray.train.region_drop import draw_region_keep

BATCH_COLUMNS = ("caption_id", "image_id", "tokens", "text")


def train_columns(relevance_source: str | None) -> list[str]:
    """Caption columns a training batch needs for a loss with this relevance source."""
    source = training_source(relevance_source)
    extra = [c for c in source.columns if c not in BATCH_COLUMNS] if source else []
    return [*BATCH_COLUMNS, *extra]


def check_train_columns(data_dir: str, relevance_source: str | None) -> None:
    """ValueError naming the train captions folder when it lacks a column this relevance source needs."""
    folder = Path(data_dir) / "captions" / "split=train"
    if next(folder.glob("part-*.*"), None) is None:
        raise ValueError(f"{folder}: no train captions; run precompute first")
    have = set(table_schema(data_dir, "captions", "train").names)
    missing = [c for c in train_columns(relevance_source) if c not in have]
    if missing:
        source = training_source(relevance_source)
        raise ValueError(
            f"{folder}: no {missing[0]!r} column, needed by relevance_source {relevance_source!r}"
            + (" (only the embedded dataset has it)" if source and source.synthetic_only else "")
            + (
                " (a folder from before precompute stored CIDEr-D vectors: re-run it into a new folder)"
                if missing[0] in CIDER_COLUMNS
                else ""
            )
        )


class BatchSource(Protocol):
    """Yields the batches (dict of numpy columns) of one epoch for this worker."""

    def epoch_batches(self, epoch: int) -> Iterable[dict[str, Any]]: ...


class TableBatches:
    """A seeded permutation of the whole split per epoch, dealt `rank::world_size`, equal batch counts.

    Worker r's k-th batch holds the rows of positions ≡ r (mod W) in the k-th block of W·B rows of the
    permutation, so the global batches (the union over workers) are the same for any number of workers W
    at the same global batch size W·B.

    Args:
        table: Caption rows (at least `train_columns(...)`).
        batch_size: Pairs per batch per worker; the last partial batch is dropped.
        seed: Base seed; epoch e draws from the stream (seed, e): runs with the same seed see the same
            batches, and seeds s and s + 1 share no epoch order.
        rank: This worker's rank.
        world_size: Number of workers.
    """

    def __init__(self, table: pa.Table, batch_size: int, seed: int, rank: int = 0, world_size: int = 1):
        self.columns = {name: ColumnRows(table[name]) for name in table.column_names}
        self.num_rows, self.batch_size, self.seed = table.num_rows, batch_size, seed
        self.rank, self.world_size = rank, world_size
        if self.num_rows // world_size < batch_size:
            raise ValueError(
                f"batch_size {batch_size} exceeds the {self.num_rows // world_size} rows per worker"
            )

    @property
    def steps_per_epoch(self) -> int:
        """Batches per epoch (the same on every worker)."""
        return (self.num_rows // self.world_size) // self.batch_size

    def epoch_batches(self, epoch: int) -> Iterator[dict[str, Any]]:
        perm = np.random.default_rng([self.seed, epoch]).permutation(self.num_rows)
        per_worker = self.num_rows // self.world_size
        mine = perm[self.rank :: self.world_size][:per_worker]
        for start in range(0, per_worker - self.batch_size + 1, self.batch_size):
            idx = mine[start : start + self.batch_size]
            yield {name: col[idx] for name, col in self.columns.items()}


@dataclass(frozen=True)
class DeviceRelevance:
    """A batch's relevance left to build on the training device: the source and its `batch_inputs`."""

    source: RelevanceSource
    inputs: Any

    def on(self, device: torch.device) -> torch.Tensor:
        """The (B, B) float32 matrix, computed on `device`."""
        return self.source.batch_matrix(self.inputs, device).float()


@dataclass
class TrainBatch:
    """Tensors of one step: images/features (region features as stored, float16 or float32), padded tokens,
    lengths, image ids, (B, B) relevance or None, and the (B, R) regions each image keeps (region drop) or
    None (all). `pending`: the relevance to build where `to` moves the batch (a GPU), instead of `relevance`.

    Under global-batch gathering (W workers) `image_ids` and `relevance` span the W·B gathered pairs."""

    images: torch.Tensor
    tokens: torch.Tensor
    lengths: torch.Tensor
    image_ids: torch.Tensor | None
    relevance: torch.Tensor | None
    region_keep: torch.Tensor | None = None
    pending: DeviceRelevance | None = None

    def to(self, device: torch.device, non_blocking: bool = False) -> TrainBatch:
        """The batch on `device`, its pending relevance built there."""
        moved = self._map(lambda t: t.to(device, non_blocking=non_blocking))
        if self.pending is not None:
            moved.relevance, moved.pending = self.pending.on(device), None
        return moved

    def pin_memory(self) -> TrainBatch:
        """The batch in page-locked host memory, so that `to(cuda, non_blocking=True)` overlaps the copy."""
        return self._map(torch.Tensor.pin_memory)

    def _map(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> TrainBatch:
        """A batch of `fn` of each tensor (None stays None; `pending` is kept as it is)."""
        mapped: dict[str, Any] = {
            k: (fn(v) if isinstance(v, torch.Tensor) else v) for k, v in vars(self).items()
        }
        return TrainBatch(**mapped)


def cider_references(table: pa.Table) -> CiderReferences:
    """The stored CIDEr-D vectors of ``table``'s captions, each image's captions its reference set."""
    indptr, ngrams = list_column(table["cider_ngrams"])
    _, tfidf = list_column(table["cider_tfidf"])
    norms = list_column(table["cider_norms"])[1].reshape(table.num_rows, -1)
    vectors = CiderVectors(
        indptr=indptr,
        ngrams=ngrams.astype(np.int64, copy=False),
        tfidf=tfidf.astype(np.float64, copy=False),
        norms=norms.astype(np.float64, copy=False),
        length=table["cider_length"].to_numpy().astype(np.int64),
    )
    return CiderReferences(vectors, table["caption_id"].to_numpy(), table["image_id"].to_numpy())


class BatchBuilder:
    """Turns a dict of numpy columns into a `TrainBatch`, building the loss's relevance exactly per batch.

    Args:
        images: Image side of the training split.
        relevance_source: `loss.relevance_source` ("sbert", "svd", "cider", "scene" or None).
        references: The train captions' CIDEr-D vectors by caption and image (needed for "cider").
        caption_ids: ``(tokens, texts, augment) → ids`` the model reads (``RetrievalModel.caption_ids``);
            None: the stored vocabulary tokens.
        region_drop: Share of each training image's regions to drop (``RetrievalModel.region_drop``): each
            batch then carries the (B, R) kept regions, drawn with `draw_region_keep`, or taken from the rows'
            ``region_keep`` column when a batch source supplies one (a recorded run).
    """

    def __init__(
        self,
        images: ImageStore,
        relevance_source: str | None,
        references: CiderReferences | None = None,
        caption_ids: Callable[..., list[np.ndarray]] | None = None,
        region_drop: float = 0.0,
    ):
        self.spec = training_source(relevance_source)
        if self.spec is not None and self.spec.needs_references and references is None:
            raise ValueError(f"references: required for relevance_source {relevance_source!r}")
        self.images, self.source = images, relevance_source
        self.references = references if self.spec is not None and self.spec.needs_references else None
        self.caption_ids = caption_ids
        self.region_drop = region_drop

    def __call__(
        self,
        batch: dict[str, Any],
        global_batch: dict[str, Any] | None = None,
        augment: AugmentIds | None = None,
        region_rng: np.random.Generator | None = None,
        relevance_on_device: bool = False,
    ) -> TrainBatch:
        """`global_batch`: every worker's rows in rank order (`gather_rows`); image ids and relevance then
        span it, while images and tokens stay this worker's. `augment`: caption augmentation of the ids
        the model reads (training). `region_rng`: the stream of the region drop's draws (training).
        `relevance_on_device`: leave the relevance matrix `pending`, built where `TrainBatch.to` moves
        the batch (a GPU builds CIDEr-D in a few dozen kernels; the host takes ~10 ms a batch)."""
        image_ids = np.array(batch["image_id"], dtype=np.int64)
        scope = batch if global_batch is None else global_batch
        scope_ids = np.array(scope["image_id"], dtype=np.int64)
        ids = [np.asarray(t, dtype=np.int64) for t in batch["tokens"]]
        if self.caption_ids is not None:
            ids = self.caption_ids(ids, [str(t) for t in batch["text"]], augment)
        elif augment is not None:
            ids = augment(ids)
        tokens, lengths = pad_tokens(ids)
        pending = (
            DeviceRelevance(self.spec, self.spec.batch_inputs(scope, scope_ids, self.references))
            if self.spec is not None
            else None
        )
        relevance = None
        if pending is not None and not relevance_on_device:
            relevance, pending = pending.on(torch.device("cpu")), None
        return TrainBatch(
            images=self.images.stored_tensor(image_ids),
            tokens=tokens,
            lengths=lengths,
            image_ids=torch.from_numpy(scope_ids),
            relevance=relevance,
            region_keep=self._region_keep(batch, len(image_ids), region_rng),
            pending=pending,
        )

    def _region_keep(
        self, batch: dict[str, Any], n: int, rng: np.random.Generator | None
    ) -> torch.Tensor | None:
        if "region_keep" in batch:
            return torch.from_numpy(np.stack(list(batch["region_keep"])).astype(bool))
        if self.region_drop <= 0 or rng is None:
            return None
        return torch.from_numpy(draw_region_keep(n, self.images.values.shape[1], self.region_drop, rng))
