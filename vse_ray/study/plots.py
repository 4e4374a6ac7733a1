"""The study's trade-off plot: CS@K against rsum, one point per validation epoch per run."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

TRADEOFF_KEYS = ("CS_at_100_i2t", "CS_at_1000_i2t", "CS_at_100_i2t_scene", "CS_at_1000_i2t_scene")
CS_KEY = re.compile(r"^CS_at_(\d+)_i2t(_scene)?$")


def tradeoff_keys(present: set[str]) -> list[str]:
    """TRADEOFF_KEYS that were logged; else the two largest-K image→text CS@K keys (small test splits)."""
    keys = [k for k in TRADEOFF_KEYS if k in present]
    if keys:
        return keys
    matches = sorted((m for k in present if (m := CS_KEY.match(k))), key=lambda m: int(m.group(1)))
    return [m.string for m in matches[-2:]]


def tradeoff_figure(histories: dict[str, list[list[dict[str, float]]]]) -> Figure | None:
    """One panel per CS@K key present; each row (loss or control) one colour, each run a line of epochs.

    Args:
        histories: row name -> its runs (one per seed) -> per-epoch validation metrics (`epoch`, `rsum`, ...).
    """
    keys = tradeoff_keys({k for runs in histories.values() for r in runs for e in r for k in e})
    if not keys:
        return None
    fig, axes = plt.subplots(1, len(keys), figsize=(5.2 * len(keys), 4.2), squeeze=False)
    colours = plt.get_cmap("tab10")
    for ax, key in zip(axes[0], keys, strict=True):
        for index, (row, runs) in enumerate(histories.items()):
            for seed, epochs in enumerate(runs):
                points = [(e["rsum"], e[key]) for e in epochs if "rsum" in e and key in e]
                if not points:
                    continue
                xs, ys = zip(*points, strict=True)
                ax.plot(
                    xs, ys, "-o", ms=3, lw=0.8, color=colours(index % 10), label=row if seed == 0 else None
                )
        ax.set_xlabel("validation rsum")
        ax.set_ylabel(f"validation {key}")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle("Coherence against recall, one point per epoch (further right and up is better)")
    fig.tight_layout()
    return fig
