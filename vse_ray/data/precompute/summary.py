"""The one-screen summary printed at the end of a precompute run."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PrecomputeSummary:
    """Counts, rejects, skipped relevance sources and per-stage timings of one run.

    Attributes:
        out: The output folder.
        images: Images stored per split.
        captions: Captions stored per split.
        rejects: Rejected images (``image_id``, ``split``, ``path``, ``reason``).
        processed: Rows computed in this run (0 for stages resumed from complete shards), per stage.
        seconds: Wall time per stage.
        skipped: Relevance matrices not written, with the reason.
        wall_seconds: Wall time of the whole run (stages may overlap).
    """

    out: str
    images: dict[str, int]
    captions: dict[str, int]
    rejects: list[dict]
    processed: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    wall_seconds: float = 0.0

    def throughput(self, stage: str) -> float:
        """Rows per second of ``stage`` in this run (0 when nothing was computed)."""
        seconds = self.seconds.get(stage, 0.0)
        return self.processed.get(stage, 0) / seconds if seconds > 0 else 0.0

    def format(self) -> str:
        lines = [f"precompute → {self.out}", f"{'split':<8}{'images':>10}{'captions':>10}{'rejects':>10}"]
        for split in self.images:
            n_rejects = sum(r["split"] == split for r in self.rejects)
            lines.append(
                f"{split:<8}{self.images[split]:>10}{self.captions.get(split, 0):>10}{n_rejects:>10}"
            )
        for stage, rows_name in (("images", "images"), ("captions", "captions")):
            done = self.processed.get(stage, 0)
            rate = f"{self.throughput(stage):.1f} {rows_name}/s" if done else "all shards already complete"
            lines.append(f"{stage:<9} {done:>7} computed in {self.seconds.get(stage, 0.0):6.1f} s  ({rate})")
        lines.append(
            f"relevance {self.seconds.get('relevance', 0.0):6.1f} s; total {self.wall_seconds:.1f} s (wall)"
        )
        lines += [f"skipped {name}: {reason}" for name, reason in self.skipped.items()]
        lines += [f"reject {r['split']}/{r['image_id']} {r['path']}: {r['reason']}" for r in self.rejects[:5]]
        if len(self.rejects) > 5:
            lines.append(f"... {len(self.rejects) - 5} more rejects in rejects.parquet")
        return "\n".join(lines)
