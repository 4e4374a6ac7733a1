"""Everything a training process loads once: vocab size, train images/captions, val split, CIDEr vectors."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from vse_ray.data.store.readers import VOCAB_FILE, load_captions, load_vocab
from vse_ray.data.store.split_data import ImageStore, SplitData, load_image_store, load_split
from vse_ray.models import model_class
from vse_ray.relevance import CiderReferences
from vse_ray.relevance.sources import training_source
from vse_ray.special_tokens import MASK
from vse_ray.train.batches import check_train_columns, cider_references, train_columns
from vse_ray.train.caption_aug import CaptionAugment
from vse_ray.train.config import TrainConfig
from vse_ray.train.locked_image import cached_store
from vse_ray.train.model_factory import constructor_params, model_data
from vse_ray.train.model_input import check_model_input, check_same_image_shape, reads_pixels
from vse_ray.train.train_captions import select_train_captions


def model_args(cfg: TrainConfig, vocab: dict[str, int], vocab_size: int, feature_dim: int) -> dict[str, Any]:
    """Constructor keywords of `cfg.model` (stored in checkpoints so evaluation rebuilds the same model):
    the shared sizes, the TrainConfig fields the model declares in `config_fields`, the ids of the tokens it
    declares in `vocab_ids` as the data's `vocab` numbers them, a CNN to fine-tune when `cfg.finetune`, then
    the model's own `cfg.model_params` (`constructor_params`)."""
    cls = model_class(cfg.model)
    lacking = [token for token in cls.vocab_ids.values() if token not in vocab]
    if lacking:
        path = Path(cfg.data_dir) / VOCAB_FILE
        raise ValueError(f"{path}: no {lacking[0]!r}, which model '{cfg.model}' needs")
    args: dict[str, Any] = {
        "vocab_size": vocab_size,
        "feature_dim": feature_dim,
        "word_dim": cfg.word_dim,
        "embed_dim": cfg.embed_dim,
        **{name: getattr(cfg, name) for name in cls.config_fields},
        **{name: vocab[token] for name, token in cls.vocab_ids.items()},
    }
    if cfg.finetune:
        args.update(cnn=cfg.cnn, cnn_weights=cfg.cnn_weights)
    return {**args, **constructor_params(cfg)}


@dataclass
class TrainingData:
    """In-memory inputs of one training process."""

    model_args: dict[str, Any]
    model_inputs: dict[str, Any]  # the model's data inputs (`vse_ray.train.model_factory`), not stored
    train_images: ImageStore
    train_captions: pa.Table | None
    val: SplitData
    references: CiderReferences | None
    caption_augment: CaptionAugment | None = None

    @classmethod
    def load(cls, cfg: TrainConfig, source: str | None, with_captions: bool = True) -> TrainingData:
        """Load from `cfg.data_dir` for a loss with relevance `source` (`loss.relevance_source`);
        with_captions=False skips the train captions (a caller that brings its own batches) unless the loss
        needs them for its CIDEr references (whose vector columns the batches then leave out)."""
        check_train_columns(cfg.data_dir, source)
        spec = training_source(source)
        needs_refs = spec is not None and spec.needs_references
        captions = None
        if with_captions or needs_refs:
            captions = load_captions(cfg.data_dir, "train", train_columns(source))
            captions = select_train_captions(captions, cfg, source)
        raw = reads_pixels(cfg)
        if cfg.image_cache:  # the locked image tower's embeddings (`vse_ray.train.locked_image`)
            images = cached_store(cfg, "train")
            val_images: ImageStore | None = cached_store(cfg, "val")
        else:
            images, val_images = load_image_store(cfg.data_dir, "train", raw=raw), None
            check_model_input(
                cfg.model,
                images.layout,
                str(Path(cfg.data_dir) / "features" / "split=train"),
                images.values.shape[1:],
                cfg.model_params,
            )
        val = load_split(cfg.data_dir, "val", raw=raw, images=cfg.val_images, image_store=val_images)
        check_same_image_shape(images, val.images, cfg.data_dir, "val")
        vocab = load_vocab(cfg.data_dir)
        vocab_size = max(vocab.values()) + 1
        mask_id = vocab.get(MASK, vocab_size)
        if (cfg.caption_mask > 0 or model_class(cfg.model).mask_row) and MASK not in vocab:
            vocab_size += 1  # the mask token gets the next id: one more embedding row
        augment = CaptionAugment(
            cfg.caption_mask, cfg.caption_replace, cfg.caption_delete, mask_id, vocab_size
        )
        references = None
        if captions is not None and spec is not None and needs_refs:
            references = cider_references(captions)
            captions = captions.drop_columns(list(spec.columns))  # read through `references`
        return cls(
            model_args=model_args(cfg, vocab, vocab_size, 0 if raw else int(images.values.shape[-1])),
            model_inputs=model_data(cfg, vocab, vocab_size),
            train_images=images,
            train_captions=captions if with_captions else None,
            val=val,
            references=references,
            caption_augment=augment if augment.active else None,
        )
