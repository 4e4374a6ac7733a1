"""Command lines of a tiny sweep and a tiny study on the tiny precompute folder (the lifecycle tests)."""

from __future__ import annotations

from pathlib import Path

SPACE = """
loss: lseh
params:
  lr: {loguniform: [1.0e-4, 1.0e-2]}
"""
TINY = ["--set", "batch_size=16", "--set", "word_dim=16", "--set", "embed_dim=32"]
STUDY = """
name: tiny
baseline: vsepp
seeds: 1
warmup_epochs: 1
epochs: {epochs}
data: {{data_dir: {data_dir}}}
train: {{batch_size: 16, word_dim: 16, embed_dim: 32, cs_ks: [5, 10], ncs_ks: [1, 5]}}
losses:
{losses}
resources: {{concurrent: 1}}
"""


def sweep_args(data_dir: Path, tmp_path: Path, *args: str) -> list[str]:
    """``vse-ray sweep`` of ``SPACE`` named ``tiny`` into ``tmp_path/out`` (its space file written there);
    ``args`` are added."""
    space = tmp_path / "space.yaml"
    space.write_text(SPACE)
    return [
        *("sweep", "--space", str(space), "--data-dir", str(data_dir), "--name", "tiny"),
        *("--output-dir", str(tmp_path / "out"), "--scheduler", "fifo", *TINY, *args),
    ]


def study_file(data_dir: Path, tmp_path: Path, epochs: int = 1, losses: tuple[str, ...] = ("vsepp",)) -> Path:
    """``tmp_path/tiny.yaml``: study ``tiny`` (vsepp the baseline, one seed, a one-epoch warm-up)."""
    path = tmp_path / "tiny.yaml"
    listed = "\n".join(f"  {loss}: {{}}" for loss in losses)
    path.write_text(STUDY.format(data_dir=data_dir, epochs=epochs, losses=listed))
    return path
