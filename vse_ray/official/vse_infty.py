"""VSE∞ checkpoints of the authors' released code (github.com/woodfrog/vse_infty, BiGRU branch) as vse_ray
checkpoints of :class:`~vse_ray.models.vse_inf.VSEInfModel`.

The released ``train.py`` saves ``{'epoch', 'model': [img_enc state, txt_enc state], 'best_rsum', 'opt',
'Eiters'}``, ``opt`` being its ``argparse.Namespace``. The model sizes come from ``opt`` (``img_dim``,
``word_dim``, ``embed_size``, ``num_layers``) and the vocabulary size from the word-embedding matrix; only
region features (``precomp_enc_type='basic'``) with both embeddings L2-normalised have a vse_ray
counterpart. The released evaluation scores s(i, c) = f(i) · g(c), as VSEInfModel does.
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path
from typing import Any

import torch

from vse_ray.models.official_names import vse_inf_name, vse_inf_official_name
from vse_ray.models.vse_inf import VSEInfModel
from vse_ray.official.torch_file import load_torch_file
from vse_ray.tracking.checkpoint import save_checkpoint
from vse_ray.train.config import TrainConfig
from vse_ray.train.training_data import model_args

FORMAT = "vse_infty_bigru"
EXPECTED = "a VSE∞ checkpoint {'model': [img_enc state dict, txt_enc state dict], 'opt': Namespace}"
SIZE_OPTIONS = ("img_dim", "word_dim", "embed_size", "num_layers")


def import_vse_infty(path: str | Path, output_dir: str | Path, data_dir: str = "") -> Path:
    """Convert the released VSE∞ BiGRU checkpoint `path` into ``<output_dir>/model.pt``; return its path.

    Args:
        path: The released ``checkpoint.pth`` / ``model_best.pth``.
        output_dir: Folder of the vse_ray checkpoint.
        data_dir: Precompute folder recorded as the checkpoint's data (``evaluate --data`` overrides it).

    Raises:
        ValueError: one line naming the file and what was expected and found: another format, a truncated
            file, options without a vse_ray counterpart, or parameters whose names or shapes do not fit.
    """
    path = Path(path)
    raw = load_torch_file(path)
    images, texts, opt = _parts(path, raw)
    sizes = _sizes(path, opt, texts)
    model = VSEInfModel(**sizes)
    state = _renamed(path, {"img_enc": images, "txt_enc": texts}, model.state_dict(), sizes)
    model.load_state_dict(state)
    cfg = TrainConfig(
        data_dir=data_dir,
        model="vse_inf",
        model_params={"num_layers": sizes["num_layers"]},
        word_dim=sizes["word_dim"],
        embed_dim=sizes["embed_dim"],
        **{ours: getattr(opt, theirs) for theirs, ours in _TRAINING_OPTIONS if hasattr(opt, theirs)},
    )
    return save_checkpoint(
        output_dir,
        {
            "epoch": int(raw.get("epoch", 0)),
            "model": model.state_dict(),
            "optimizer": {},
            "scheduler": {},
            "config": cfg.to_dict(),
            "history": [],
            "model_name": "vse_inf",
            "model_args": model_args(cfg, sizes["vocab_size"], sizes["feature_dim"]),
            "imported_from": {"format": FORMAT, "file": path.name, "sha256": _sha256(path)},
        },
    )


# Released training options kept in the imported run's TrainConfig (released name, vse_ray name).
_TRAINING_OPTIONS = (
    ("num_epochs", "epochs"),
    ("batch_size", "batch_size"),
    ("learning_rate", "lr"),
    ("lr_update", "lr_update"),
    ("grad_clip", "grad_clip"),
)


def _parts(path: Path, raw: Any) -> tuple[dict, dict, argparse.Namespace]:
    """(img_enc state, txt_enc state, opt) of the released layout; ValueError naming what was found."""
    if not isinstance(raw, dict):
        raise ValueError(f"checkpoint {path}: expected {EXPECTED}, found a {type(raw).__name__}")
    if "format" in raw:
        raise ValueError(
            f"checkpoint {path}: expected {EXPECTED}, found a vse_ray checkpoint ({raw['format']})"
        )
    model, opt = raw.get("model"), raw.get("opt")
    if not isinstance(model, list | tuple) or not isinstance(opt, argparse.Namespace):
        found = {k: type(v).__name__ for k, v in raw.items()}
        raise ValueError(f"checkpoint {path}: expected {EXPECTED}, found keys {found}")
    if len(model) != 2 or not all(isinstance(s, dict) for s in model):
        kinds = [type(s).__name__ for s in model]
        hint = " (3 parts: an SGRAF/SCAN checkpoint?)" if len(model) == 3 else ""
        raise ValueError(f"checkpoint {path}: expected {EXPECTED}, found 'model' = {kinds}{hint}")
    images, texts = model
    if any(k.startswith("bert.") for k in texts):
        raise ValueError(
            f"checkpoint {path}: expected a BiGRU text encoder (txt_enc 'embed.weight'), "
            "found a BERT one (txt_enc 'bert.*'); only the BiGRU branch is imported"
        )
    return images, texts, opt


def _sizes(path: Path, opt: argparse.Namespace, texts: dict) -> dict[str, Any]:
    """VSEInfModel keywords from `opt` and the embedding matrix; ValueError for options vse_ray lacks."""
    missing = [name for name in SIZE_OPTIONS if not hasattr(opt, name)]
    if missing:
        raise ValueError(f"checkpoint {path}: 'opt' lacks {missing} (expected the options of {FORMAT})")
    kind = getattr(opt, "precomp_enc_type", "basic")
    if kind != "basic":
        raise ValueError(
            f"checkpoint {path}: expected opt.precomp_enc_type 'basic' (region features), found {kind!r}"
        )
    for flag in ("no_imgnorm", "no_txtnorm"):
        if getattr(opt, flag, False):
            raise ValueError(f"checkpoint {path}: expected opt.{flag} False (L2-normalised), found True")
    embed = texts.get("embed.weight")
    if not isinstance(embed, torch.Tensor) or embed.dim() != 2:
        found = tuple(embed.shape) if isinstance(embed, torch.Tensor) else type(embed).__name__
        raise ValueError(
            f"checkpoint {path}: expected txt_enc 'embed.weight' (vocab, word_dim), found {found}"
        )
    stated = getattr(opt, "vocab_size", None)
    if stated is not None and stated != embed.shape[0]:
        raise ValueError(
            f"checkpoint {path}: expected txt_enc 'embed.weight' of {stated} rows (opt.vocab_size), "
            f"found {embed.shape[0]}"
        )
    return {
        "vocab_size": int(embed.shape[0]),
        "feature_dim": int(opt.img_dim),
        "word_dim": int(opt.word_dim),
        "embed_dim": int(opt.embed_size),
        "num_layers": int(opt.num_layers),
    }


def _renamed(
    path: Path, sides: dict[str, dict], expected: dict[str, torch.Tensor], sizes: dict[str, Any]
) -> dict[str, torch.Tensor]:
    """The released tensors under vse_ray names; ValueError naming the first that is missing, unexpected
    or of another shape than the sizes of `opt` give."""
    state: dict[str, torch.Tensor] = {}
    for side, tensors in sides.items():
        for name, value in tensors.items():
            key = vse_inf_name(side, name)
            if key is None:
                continue
            if key not in expected:
                raise ValueError(f"checkpoint {path}: {side} holds {name!r}, which {FORMAT} does not have")
            if not isinstance(value, torch.Tensor) or value.shape != expected[key].shape:
                found = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
                raise ValueError(
                    f"checkpoint {path}: {side} {name!r}: expected shape {tuple(expected[key].shape)} "
                    f"(from opt: {_described(sizes)}), found {found}"
                )
            state[key] = value.to(expected[key].dtype)
    lacking = [k for k in expected if k not in state]
    if lacking:
        side, name = vse_inf_official_name(lacking[0])
        raise ValueError(f"checkpoint {path}: expected {side} {name!r} ({FORMAT}), found none")
    return state


def _described(sizes: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items())


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
