"""A released checkpoint saved as a vse_ray training checkpoint, which `vse-ray evaluate --run` reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vse_ray.checkpoint_files import save_checkpoint
from vse_ray.models import model_class
from vse_ray.official import ReleasedFormat, read_released
from vse_ray.train.config import TrainConfig

SHARED_ARGS = ("vocab_size", "feature_dim", "word_dim", "embed_dim")


def import_released(
    fmt: ReleasedFormat, path: str | Path, output_dir: str | Path, data_dir: str = "", **flags: Any
) -> Path:
    """Convert the released checkpoint `path` of format `fmt` into ``<output_dir>/model.pt``; return its path.

    Args:
        fmt: The released format.
        path: The released checkpoint (``model_best.pth.tar``, ``checkpoint.pth`` ...).
        output_dir: Folder of the vse_ray checkpoint.
        data_dir: Precompute folder recorded as the checkpoint's data (``evaluate --data`` overrides it);
            its vocabulary must have as many words as the checkpoint's word embedding has rows.
        flags: Settings the released file does not hold (``bert_path``, ``graph_path``; CVSE's
            ``concepts``, ``concept_vectors``, ``wordnet``).

    Raises:
        ValueError: one line naming the file and what was expected and found.
    """
    released = read_released(fmt, path, data_dir, **flags)
    args = released.args
    config_fields = model_class(fmt.model).config_fields
    cfg = TrainConfig(
        data_dir=data_dir,
        model=fmt.model,
        model_params={k: v for k, v in args.items() if k not in (*SHARED_ARGS, *config_fields)},
        word_dim=args["word_dim"],
        embed_dim=args["embed_dim"],
        **{k: args[k] for k in config_fields if k in args},
        **released.training,
    )
    return save_checkpoint(
        output_dir,
        {
            "epoch": released.epoch,
            "model": released.model.state_dict(),
            "optimizer": {},
            "scheduler": {},
            "config": cfg.to_dict(),
            "history": [],
            "model_name": fmt.model,
            "model_args": args,
            "imported_from": released.imported_from,
        },
    )
