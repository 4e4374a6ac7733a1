"""Run figures: metric@K curves, training curves, batch relevance histogram (ladder Fig. 6)."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

import numpy as np
from matplotlib.figure import Figure  # not pyplot: a figure of its own, saved without a GUI backend

from vse_ray.relevance.histogram import RelevanceHistogram

DIRECTIONS = {"i2t": "image → text", "t2i": "text → image"}


def k_series(metrics: dict[str, float], name: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Group keys `<name>_at_<K>_<dir><suffix>` into {"<dir><suffix>": (Ks sorted, values)}."""
    pattern = re.compile(rf"^{re.escape(name)}_at_(\d+)_(i2t|t2i)(.*)$")
    points: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for key, value in metrics.items():
        match = pattern.match(key)
        if match:
            points[match.group(2) + match.group(3)].append((int(match.group(1)), float(value)))
    series = {}
    for label, pts in points.items():
        ks, values = zip(*sorted(pts), strict=True)
        series[label] = (np.array(ks), np.array(values))
    return series


def plot_metric_at_k(metrics: dict[str, float], name: str, title: str) -> Figure | None:
    """`name`@K against K, one line per direction (and variant); None when no such key exists."""
    series = k_series(metrics, name)
    if not series:
        return None
    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    for label, (ks, values) in sorted(series.items()):
        ax.plot(ks, values, marker="o", label=DIRECTIONS.get(label[:3], label[:3]) + label[3:])
    ax.set_xscale("log")
    ax.set(xlabel="K", ylabel=f"{name}@K", title=title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return fig


def plot_training_curves(history: list[dict[str, Any]]) -> Figure:
    """Train loss and validation rsum against epoch."""
    epochs = [int(m["epoch"]) for m in history]
    fig = Figure(figsize=(10, 4))
    left, right = fig.subplots(1, 2)
    left.plot(epochs, [m["train_loss"] for m in history], marker="o")
    left.set(xlabel="epoch", ylabel="train loss", title="Training loss")
    right.plot(epochs, [m["rsum"] for m in history], marker="o", color="tab:green")
    right.set(xlabel="epoch", ylabel="rsum (val)", title="Validation rsum")
    for ax in (left, right):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def plot_relevance_histogram(hist: RelevanceHistogram) -> Figure:
    """Distribution of the entries of the batch relevance matrices seen in training."""
    edges = hist.edges
    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    ax.bar(edges[:-1], hist.counts, width=np.diff(edges), align="edge", edgecolor="white")
    ax.set(
        xlabel=f"relevance degree ({hist.source})",
        ylabel="count",
        title="Relevance degrees in training batches",
    )
    fig.tight_layout()
    return fig
