"""The demo's comparison table and the paper-claim checks computed from it."""

from __future__ import annotations

import math
from collections.abc import Sequence

from vse_ray.reporting import Column, metric_column, render_table

COLUMNS = (
    ("R@1 i2t", "R_at_1_i2t"),
    ("R@5 i2t", "R_at_5_i2t"),
    ("R@10 i2t", "R_at_10_i2t"),
    ("R@1 t2i", "R_at_1_t2i"),
    ("R@5 t2i", "R_at_5_t2i"),
    ("R@10 t2i", "R_at_10_t2i"),
    ("rsum", "rsum"),
    ("CS@100 i2t", "CS_at_100_i2t"),
    ("CS@100 t2i", "CS_at_100_t2i"),
    ("CS@1000 i2t", "CS_at_1000_i2t"),
    ("NCS@10 i2t", "NCS_at_10_i2t"),
    ("NCS@10 t2i", "NCS_at_10_t2i"),
    ("mAP i2t", "mAP_i2t"),
    ("mAP@R i2t", "ECCV_mAP_at_R_i2t"),
)


def comparison_table(
    results: dict[str, dict[str, float]], chance: dict[str, float] | None = None, fmt: str = "text"
) -> str:
    """One row per loss (plus a chance row) and the ``COLUMNS`` some result has, all kept (no width limit)."""
    rows = [{"loss": name, **metrics} for name, metrics in results.items()]
    if chance:
        rows.append({"loss": "(chance)", **chance})
    columns = [metric_column(key, title) for title, key in COLUMNS if any(key in r for r in rows)]
    return render_table(rows, [Column("loss"), *columns], fmt, width=None)


def chance_levels(n_images: int, n_captions: int, ks: Sequence[int] = (1, 5, 10)) -> dict[str, float]:
    """R^V@K of a random ranking (percent): i2t with c captions per image, t2i with one true image."""
    per_image = n_captions / n_images
    out = {}
    for k in ks:
        miss = math.prod((n_captions - per_image - j) / (n_captions - j) for j in range(k))
        out[f"R_at_{k}_i2t"] = 100 * (1 - miss)
        out[f"R_at_{k}_t2i"] = 100 * k / n_images
    out["rsum"] = sum(out.values())
    return out


def claim_checks(results: dict[str, dict[str, float]], baseline: str = "vsepp") -> list[str]:
    """Plain statements of how each graded-relevance loss compares with VSE++ on CS@K and rsum."""
    base = results.get(baseline)
    if base is None:
        return [f"no {baseline} run: claims not checked"]
    lines = []
    for name, m in results.items():
        if name == baseline:
            continue
        cs = [k for k in ("CS_at_100_i2t", "CS_at_100_t2i") if k in m and k in base]
        deltas = ", ".join(f"{k} {m[k] - base[k]:+.3f}" for k in cs)
        lines.append(f"{name:>12} vs {baseline}: rsum {m['rsum'] - base['rsum']:+.1f}; {deltas}")
    return lines
