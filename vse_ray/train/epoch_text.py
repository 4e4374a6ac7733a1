"""The console text of a finished epoch (`vse-ray train`'s epoch lines, a Tune trial's progress), Ray-free."""

from __future__ import annotations

from typing import Any

COLLAPSE_WARNING = (
    "warning: epoch {epoch}: the loss sits at its collapse value (2·B·margin: the hardest negative scores as "
    "the positive); warm up first, e.g. --warmup-epochs 2 (sum of hinges) or longer"
)


def epoch_summary(metrics: dict[str, Any]) -> str:
    """``val rsum …, train loss …`` of one reported epoch (a train run's or a Tune trial's)."""
    rsum = f"val rsum {metrics['rsum']:.1f}" if "rsum" in metrics else "no validation"
    loss = f", train loss {metrics['train_loss']:.4f}" if "train_loss" in metrics else ""
    return f"{rsum}{loss}"


def epoch_lines(metrics: dict[str, Any], epochs: int, seconds: float) -> list[str]:
    """The console lines of one reported epoch: ``epoch e/E: val rsum …, train loss …, … s``, then the
    collapse warning when the epoch's loss sat at its collapse value."""
    epoch = int(metrics["epoch"])
    lines = [f"epoch {epoch}/{epochs}: {epoch_summary(metrics)}, {seconds:.1f} s"]
    if metrics.get("collapsed"):
        lines.append(COLLAPSE_WARNING.format(epoch=epoch))
    return lines
