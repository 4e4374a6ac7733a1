"""One split of a precompute folder as training and evaluation read it: image side, captions, relevance.

Pooled features and pixels are held in memory; region features are read by row from their shards
(:class:`~vse_ray.data.store.region_rows.RegionRows`), so no process holds a whole split of regions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch

from vse_ray.data.store.pixel_budget import open_image
from vse_ray.data.store.readers import (
    load_captions,
    load_features,
    load_relevance,
    read_features_table,
    relevance_sources,
)
from vse_ray.data.store.region_rows import RegionRows
from vse_ray.relevance.sources import RELEVANCE_SOURCES


@dataclass
class ImageStore:
    """Image side of a split in stored order, one row per id: features (n, D), uint8 pixels (n, H, W, 3), or
    region features (n, R, D) as an in-memory array or a :class:`RegionRows` reader."""

    image_ids: np.ndarray
    values: np.ndarray | RegionRows

    def __post_init__(self) -> None:
        self._order = np.argsort(self.image_ids, kind="stable")
        self._sorted = self.image_ids[self._order]

    @property
    def raw(self) -> bool:
        return self.values.ndim == 4

    @property
    def pixels(self) -> np.ndarray | None:
        """The (N, H, W, 3) images of a store of raw pixels; None for features."""
        return self.values if isinstance(self.values, np.ndarray) and self.values.ndim == 4 else None

    @property
    def layout(self) -> str:
        """The model input this store gives: "pooled", "regions" or "pixels" (see vse_ray.models.base)."""
        return {2: "pooled", 3: "regions", 4: "pixels"}[self.values.ndim]

    def rows(self, image_ids: np.ndarray, what: str = "image_id") -> np.ndarray:
        """Row index of each id; ValueError naming the first id that the split does not hold."""
        image_ids = np.asarray(image_ids, dtype=np.int64)
        pos = np.searchsorted(self._sorted, image_ids).clip(max=len(self._sorted) - 1)
        missing = self._sorted[pos] != image_ids
        if missing.any():
            raise ValueError(f"{what} {int(image_ids[missing.argmax()])} has no image row in the split")
        return self._order[pos]

    def tensor(self, image_ids: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(self.values[self.rows(image_ids)]))

    def stored_tensor(self, image_ids: np.ndarray) -> torch.Tensor:
        """Like `tensor`, with region shards' float16 kept: half the bytes to read, pin and copy to a GPU."""
        if isinstance(self.values, RegionRows):
            return torch.from_numpy(self.values.stored(self.rows(image_ids)))
        return self.tensor(image_ids)

    def tensor_rows(self, rows: slice) -> torch.Tensor:
        """Stored rows `rows` (in split order) as a tensor."""
        return torch.from_numpy(np.ascontiguousarray(self.values[rows]))


def decode_png_column(column: pa.ChunkedArray) -> np.ndarray:
    """PNG bytes column → uint8 (n, H, W, 3); each image's size checked against the pixel budget first."""
    images = [open_image(png, f"stored image {k}") for k, png in enumerate(column.to_pylist())]
    return np.stack([np.asarray(image.convert("RGB")) for image in images])


def load_image_store(data_dir: str, split: str, raw: bool) -> ImageStore:
    """Precomputed features, or (raw=True) the decoded PNG `image` column of `features/split=<split>`."""
    path = Path(data_dir) / "features" / f"split={split}"
    if not raw and any(path.glob("part-*.arrow")):
        rows = RegionRows(path)
        return ImageStore(rows.image_ids, rows)
    if not raw:
        image_ids, features = load_features(data_dir, split)
        return ImageStore(image_ids, np.asarray(features, dtype=np.float32))
    try:
        table = read_features_table(data_dir, split, ["image_id", "image"])
    except ValueError:
        table = None
    if table is None or table.num_rows == 0:
        raise ValueError(f"{path}: no raw images; re-run precompute keeping images to fine-tune the CNN")
    return ImageStore(table["image_id"].to_numpy().astype(np.int64), decode_png_column(table["image"]))


def pad_tokens(tokens: list[np.ndarray] | np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """List of token-id sequences → (B, L) int64 padded with 0, (B,) lengths."""
    seqs = [np.asarray(t, dtype=np.int64) for t in tokens]
    lengths = np.array([max(len(s), 1) for s in seqs], dtype=np.int64)
    out = np.zeros((len(seqs), int(lengths.max())), dtype=np.int64)
    for row, s in enumerate(seqs):
        out[row, : len(s)] = s
    return torch.from_numpy(out), torch.from_numpy(lengths)


@dataclass
class SplitData:
    """A val/test split: images, captions (sorted by caption_id), and its stored relevance matrices."""

    images: ImageStore
    tokens: list[np.ndarray]
    caption_ids: np.ndarray
    caption_image_ids: np.ndarray
    texts: list[str]
    relevance: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def img_of_cap(self) -> np.ndarray:
        """Row of each caption's image in `images` (the ground truth of R@K)."""
        return self.images.rows(self.caption_image_ids, what="caption image_id")


def load_split(
    data_dir: str,
    split: str,
    raw: bool,
    sources: tuple[str, ...] = RELEVANCE_SOURCES,
    images: int = 0,
    image_store: ImageStore | None = None,
) -> SplitData:
    """Load a val/test split in memory (up to 5K images × 25K captions): the first `images` images in
    stored order with their captions and the rows of their relevance (all when 0 or at least the split's
    size; the reference code validates on the first 1,000 dev images). Only those rows are read: COCO's
    5,000 dev images have 0.5 GB of relevance a source. `image_store`: the split's image side in stored
    order from elsewhere (a frozen tower's cached embeddings), read instead of the stored features."""
    captions = load_captions(data_dir, split)
    store = load_image_store(data_dir, split, raw) if image_store is None else image_store
    rows, keep = None, None
    if 0 < images < len(store.image_ids):
        rows = images
        store = ImageStore(store.image_ids[:images], np.asarray(store.values[:images]))
        keep = np.flatnonzero(np.isin(captions["image_id"].to_numpy(), store.image_ids))
        captions = captions.take(pa.array(keep))
    stored = set(relevance_sources(data_dir, split))
    relevance = {
        name: load_relevance(data_dir, split, name, rows=rows, columns=keep)
        for name in sources
        if name in stored
    }
    split_data = SplitData(
        images=store,
        tokens=[np.asarray(t, dtype=np.int64) for t in captions["tokens"].to_pylist()],
        caption_ids=captions["caption_id"].to_numpy().astype(np.int64),
        caption_image_ids=captions["image_id"].to_numpy().astype(np.int64),
        texts=captions["text"].to_pylist(),
        relevance=relevance,
    )
    n_img, n_cap = len(split_data.images.image_ids), len(split_data.tokens)
    for name, matrix in relevance.items():
        if matrix.shape != (n_img, n_cap):
            raise ValueError(f"relevance/{split}/{name}: shape {matrix.shape} != ({n_img}, {n_cap})")
    return split_data
