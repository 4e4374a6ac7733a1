"""Stage 1b: captions → vocabulary, what each relevance source fits on them (CIDEr document frequencies,
TF-IDF+SVD model) and ``captions/`` shards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from vse_ray.data.precompute.caption_vectors import CaptionVectorizer
from vse_ray.data.precompute.config import ExecutionOptions, PrecomputeConfig
from vse_ray.data.precompute.official_vocab import ladder_tokens_file, read_vocab_file
from vse_ray.data.precompute.ray_stages import (
    dataset_of_shards,
    map_in_actor_pool,
    pool_placement,
    write_shards,
)
from vse_ray.data.precompute.resources import plan_resources
from vse_ray.data.precompute.vocab import build_vocab
from vse_ray.data.sources.source import SplitSource
from vse_ray.data.store.schema import captions_table
from vse_ray.data.store.shards import ShardLedger, plan_shards, shard_input
from vse_ray.json_files import write_json_atomic
from vse_ray.relevance import tokenize
from vse_ray.relevance.sources import SOURCES, TrainCaptions


def caption_columns(split: SplitSource, kept_ids: np.ndarray) -> dict[str, np.ndarray]:
    """``caption_id``, ``image_id``, ``text`` (and ``scene`` when the split has scene descriptors) of the
    captions of the kept images, sorted by ``caption_id``."""
    keep = np.isin(split.image_ids, kept_ids)
    per_image = split.caption_ids.shape[1]
    caption_id = split.caption_ids[keep].reshape(-1)
    image_id = np.repeat(split.image_ids[keep], per_image)
    text = np.array(
        [t for caps, k in zip(split.captions, keep, strict=True) if k for t in caps], dtype=object
    )
    order = np.argsort(caption_id, kind="stable")
    columns = {"caption_id": caption_id[order], "image_id": image_id[order], "text": text[order]}
    if split.scenes is not None:
        columns["scene"] = np.repeat(split.scenes[keep], per_image, axis=0)[order]
    return columns


def fit_train_models(
    train: dict[str, np.ndarray], config: PrecomputeConfig, out: Path
) -> tuple[dict, dict[str, Any]]:
    """The vocabulary of the train captions and what each relevance source fits on them (by name:
    `RelevanceSource.fit`, e.g. the TF-IDF+SVD arrays and the CIDEr document frequencies); each reused
    when already saved in ``out``."""
    texts = [str(t) for t in train["text"]]
    tokenised = [tokenize(t) for t in texts]
    vocab_path = out / "vocab.json"
    if not vocab_path.exists():
        vocab = (
            read_vocab_file(config.vocab_file)
            if config.vocab_file
            else build_vocab(tokenised, config.vocab_min_count)
        )
        write_json_atomic(vocab, vocab_path)
    refs: dict[int, list[str]] = {}
    for image_id, text in zip(train["image_id"].tolist(), tokenised, strict=True):
        refs.setdefault(image_id, []).append(text)
    captions = TrainCaptions(texts, list(refs.values()))
    fitted = {name: source.fit(captions, config, out) for name, source in SOURCES.items()}
    return json.loads(vocab_path.read_text()), fitted


def run_caption_stage(
    columns: dict[str, dict[str, np.ndarray]],
    config: PrecomputeConfig,
    options: ExecutionOptions,
    out: Path,
) -> int:
    """Write the ``captions/`` shards that are not complete yet; returns the number of captions processed.

    Args:
        columns: Per split, the output of :func:`caption_columns`; vocabulary, SVD and document
            frequencies are fitted on ``train`` only.
        config: The resolved config.
        options: Pool sizes and batch sizes.
        out: The output folder.
    """
    vocab, fitted = fit_train_models(columns["train"], config, out)
    ledger = ShardLedger(out, "captions")
    todo = [
        shard
        for split, cols in columns.items()
        for shard in ledger.pending(
            plan_shards(split, len(cols["caption_id"]), config.shard_size * config.captions_per_image)
        )
    ]
    if not todo:
        return 0
    kwargs: dict[str, Any] = {"vocab": vocab, "fitted": fitted}
    kwargs["released_tokens"] = bool(config.vocab_file)
    kwargs["strip_punctuation"] = config.vocab_file is not None and ladder_tokens_file(config.vocab_file)
    kwargs["batch_size"] = options.sbert_batch_size
    ds = dataset_of_shards([shard_input(s, columns[s.split]) for s in todo])
    res = plan_resources(options.sbert_actors, "sbert_actors", len(todo))
    with pool_placement(res) as placement:
        ds = map_in_actor_pool(ds, CaptionVectorizer, kwargs, res, placement)
        return write_shards(ds, ledger, todo, captions_table, file_format="arrow")  # read by row
