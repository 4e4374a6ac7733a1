"""Retrieval examples: a few queries, their top items with relevance, ground truth marked."""

from __future__ import annotations

import textwrap

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from vse_ray.data.store.split_data import SplitData  # noqa: E402
from vse_ray.relevance.sources import SOURCES  # noqa: E402

# The relevance shown beside each retrieved item: the first stored source that real data can have.
PREFERRED_SOURCES = tuple(name for name, source in SOURCES.items() if not source.synthetic_only)


def _relevance(data: SplitData) -> tuple[str, np.ndarray | None]:
    for name in PREFERRED_SOURCES:
        if name in data.relevance:
            return name, data.relevance[name]
    return "", None


def _show_image(ax: plt.Axes, pixels: np.ndarray | None, index: int, label: str) -> None:
    if pixels is not None:
        ax.imshow(pixels[index])
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(label, fontsize=7)


def plot_image_to_text(
    sims: np.ndarray, data: SplitData, pixels: np.ndarray | None, n_queries: int = 3, top: int = 5
) -> Figure:
    """Each row: a query image and its top captions with score, relevance and ✓ for ground truth."""
    source, rel = _relevance(data)
    img_of_cap = data.img_of_cap
    fig, axes = plt.subplots(n_queries, 2, figsize=(10, 2.2 * n_queries), width_ratios=[1, 4], squeeze=False)
    for row, query in enumerate(range(min(n_queries, sims.shape[0]))):
        _show_image(axes[row, 0], pixels, query, f"image {int(data.images.image_ids[query])}")
        lines = []
        for rank, cap in enumerate(np.argsort(-sims[query])[:top], start=1):
            mark = "✓" if img_of_cap[cap] == query else " "
            degree = f" {source}={rel[query, cap]:.2f}" if rel is not None else ""
            text = textwrap.shorten(data.texts[cap], 70)
            lines.append(f"{rank}. {mark} s={sims[query, cap]:.2f}{degree}  {text}")
        axes[row, 1].axis("off")
        axes[row, 1].text(0, 0.5, "\n".join(lines), va="center", fontsize=7, family="monospace")
    fig.suptitle("image → text: top captions (✓ ground truth)", fontsize=9)
    fig.tight_layout()
    return fig


def plot_text_to_image(
    sims: np.ndarray, data: SplitData, pixels: np.ndarray | None, n_queries: int = 3, top: int = 5
) -> Figure:
    """Each row: a query caption and its top images, titled with score, relevance and ✓ for ground truth."""
    source, rel = _relevance(data)
    img_of_cap = data.img_of_cap
    queries = np.linspace(0, sims.shape[1] - 1, n_queries).astype(int)
    fig, axes = plt.subplots(n_queries, top, figsize=(2 * top, 2.4 * n_queries), squeeze=False)
    for row, cap in enumerate(queries):
        for col, img in enumerate(np.argsort(-sims[:, cap])[:top]):
            mark = "✓ " if img == img_of_cap[cap] else ""
            degree = f"\n{source}={rel[img, cap]:.2f}" if rel is not None else ""
            _show_image(axes[row, col], pixels, img, f"{mark}s={sims[img, cap]:.2f}{degree}")
        axes[row, 0].set_ylabel(textwrap.fill(textwrap.shorten(data.texts[cap], 60), 22), fontsize=7)
    fig.suptitle("text → image: top images (✓ ground truth)", fontsize=9)
    fig.tight_layout()
    return fig


def plot_retrieval_examples(
    sims: np.ndarray, data: SplitData, split: str, pixels: np.ndarray | None = None
) -> dict[str, Figure]:
    """Both directions; `pixels` (n_images, H, W, 3) draws the images (default: the split's raw images)."""
    pixels = pixels if pixels is not None else data.images.pixels
    return {
        f"{split}_examples_i2t": plot_image_to_text(sims, data, pixels),
        f"{split}_examples_t2i": plot_text_to_image(sims, data, pixels),
    }
