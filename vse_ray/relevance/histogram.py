"""Histogram of the relevance degrees seen in training batches (ladder paper Fig. 6)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from vse_ray.relevance.sources import SOURCES

SOURCE_RANGE = {name: source.value_range for name, source in SOURCES.items() if source.trains}


class RelevanceHistogram:
    """Fixed-bin counts of every entry of every batch relevance matrix (outliers go to the edge bins)."""

    def __init__(self, source: str, bins: int = 50, counts: list[int] | None = None):
        if source not in SOURCE_RANGE:
            raise ValueError(f"source: must be one of {tuple(SOURCE_RANGE)}, got {source!r}")
        self.source, self.bins = source, bins
        self.low, self.high = SOURCE_RANGE[source]
        self.counts = np.zeros(bins, dtype=np.int64) if counts is None else np.asarray(counts, dtype=np.int64)

    @property
    def edges(self) -> np.ndarray:
        return np.linspace(self.low, self.high, self.bins + 1)

    def add(self, relevance: torch.Tensor) -> None:
        values = relevance.detach().float().clamp(self.low, self.high).flatten().cpu()
        self.counts += (
            torch.histc(values, bins=self.bins, min=self.low, max=self.high).numpy().astype(np.int64)
        )

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "bins": self.bins, "counts": self.counts.tolist()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RelevanceHistogram:
        return cls(d["source"], int(d["bins"]), d["counts"])
