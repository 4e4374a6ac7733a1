"""Run artifacts: figures attached to a run."""

from __future__ import annotations

import tempfile
from pathlib import Path

from matplotlib.figure import Figure
from mlflow import MlflowClient


def log_figures(
    client: MlflowClient, run_id: str, figures: dict[str, Figure | None], artifact_path: str
) -> None:
    """Save each figure as `<artifact_path>/<name>.png` (None entries are skipped) and close it."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, fig in figures.items():
            if fig is None:
                continue
            fig.savefig(Path(tmp) / f"{name}.png", dpi=110)
            if fig.canvas.manager is not None:  # a pyplot figure, kept by pyplot until closed
                import matplotlib.pyplot as plt

                plt.close(fig)
        client.log_artifacts(run_id, tmp, artifact_path)
