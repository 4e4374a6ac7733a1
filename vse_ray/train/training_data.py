"""Everything a training process loads once: vocab size, train images/captions, val split, CIDEr inputs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from vse_ray.data.store import load_captions, load_vocab
from vse_ray.models import VSEModel
from vse_ray.relevance import CiderDocFreq
from vse_ray.train.batches import check_train_columns, reference_texts, train_columns
from vse_ray.train.config import TrainConfig
from vse_ray.train.split_data import ImageStore, SplitData, load_image_store, load_split
from vse_ray.train.train_captions import select_train_captions


def model_args(cfg: TrainConfig, vocab_size: int, feature_dim: int) -> dict[str, Any]:
    """Constructor arguments of `VSEModel` (stored in checkpoints so evaluation rebuilds the same model)."""
    return {
        "vocab_size": vocab_size,
        "feature_dim": feature_dim,
        "word_dim": cfg.word_dim,
        "embed_dim": cfg.embed_dim,
        "normalize_image": cfg.normalize_image,
        "cnn": cfg.cnn if cfg.finetune else None,
        "cnn_weights": cfg.cnn_weights if cfg.finetune else None,
    }


def build_model(args: dict[str, Any], pretrained: bool = True) -> VSEModel:
    """`VSEModel(**args)`; pretrained=False skips downloading CNN weights (a checkpoint overwrites them)."""
    return VSEModel(**{**args, "cnn_weights": args.get("cnn_weights") if pretrained else None})


@dataclass
class TrainingData:
    """In-memory inputs of one training process (captions of the train split stream separately under Ray)."""

    model_args: dict[str, Any]
    train_images: ImageStore
    train_captions: pa.Table | None
    val: SplitData
    references: dict[int, list[str]] | None
    doc_freq: CiderDocFreq | None

    @classmethod
    def load(cls, cfg: TrainConfig, source: str | None, with_captions: bool = True) -> TrainingData:
        """Load from `cfg.data_dir` for a loss with relevance `source` (`loss.relevance_source`);
        with_captions=False skips the train captions (streamed by Ray Data) unless the loss needs them for
        its CIDEr references."""
        check_train_columns(cfg.data_dir, source)
        captions = None
        if with_captions or source == "cider":
            captions = load_captions(cfg.data_dir, "train").select(train_columns(source))
            captions = select_train_captions(captions, cfg, source)
        images = load_image_store(cfg.data_dir, "train", raw=cfg.finetune)
        vocab = load_vocab(cfg.data_dir)
        vocab_size = max(vocab.values()) + 1
        doc_freq = None
        if source == "cider":
            df_path = Path(cfg.data_dir) / "cider_df.json"
            if not df_path.is_file():
                raise ValueError(f"{df_path}: missing; loss '{cfg.loss}' needs the train CIDEr doc freqs")
            doc_freq = CiderDocFreq.from_dict(json.loads(df_path.read_text()))
        return cls(
            model_args=model_args(cfg, vocab_size, 0 if images.raw else int(images.values.shape[1])),
            train_images=images,
            train_captions=captions if with_captions else None,
            val=load_split(cfg.data_dir, "val", raw=cfg.finetune),
            references=reference_texts(captions) if source == "cider" else None,
            doc_freq=doc_freq,
        )
