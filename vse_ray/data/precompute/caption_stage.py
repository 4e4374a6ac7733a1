"""Stage 1b: captions → vocabulary, CIDEr document frequencies, TF-IDF+SVD model and ``captions/`` shards."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np

from vse_ray.data.precompute.caption_vectors import CaptionVectorizer
from vse_ray.data.precompute.config import ExecutionOptions, PrecomputeConfig
from vse_ray.data.precompute.official_vocab import read_vocab_file
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
from vse_ray.relevance import TfidfSvd, cider_doc_freq, tokenize

SVD_FILE = "tfidf_svd.npz"


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
) -> tuple[dict, dict[str, np.ndarray], dict]:
    """Vocabulary, TF-IDF+SVD arrays and CIDEr doc freqs (``CiderDocFreq.to_dict()``) of the train captions;
    reused when already saved."""
    vocab_path, svd_path, df_path = out / "vocab.json", out / SVD_FILE, out / "cider_df.json"
    if not (vocab_path.exists() and svd_path.exists() and df_path.exists()):
        texts = [str(t) for t in train["text"]]
        tokenised = [tokenize(t) for t in texts]
        vocab = (
            read_vocab_file(config.vocab_file)
            if config.vocab_file
            else build_vocab(tokenised, config.vocab_min_count)
        )
        write_json_atomic(vocab, vocab_path)
        refs: dict[int, list[str]] = {}
        for image_id, text in zip(train["image_id"].tolist(), tokenised, strict=True):
            refs.setdefault(image_id, []).append(text)
        write_json_atomic(cider_doc_freq(list(refs.values())).to_dict(), df_path)
        model = TfidfSvd(
            k=config.svd_dim,
            seed=config.seed if config.svd_seed is None else config.svd_seed,
            n_iter=config.svd_n_iter,
            stem=config.svd_stem,
            unit=config.svd_unit,
        ).fit(texts)
        if model.dim < config.svd_dim:
            logging.getLogger(__name__).warning(
                "svd_dim: reduced from %d to %d: the truncated SVD needs fewer components than the %d train "
                "captions and their %d TF-IDF terms",
                config.svd_dim,
                model.dim,
                len(texts),
                len(model.vocabulary),
            )
        model.save(svd_path)
    vocab, doc_freq = json.loads(vocab_path.read_text()), json.loads(df_path.read_text())
    return vocab, TfidfSvd.load(svd_path).to_arrays(), doc_freq


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
    vocab, svd_arrays, doc_freq = fit_train_models(columns["train"], config, out)
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
    kwargs: dict[str, Any] = {"vocab": vocab, "svd_arrays": svd_arrays, "doc_freq": doc_freq}
    kwargs["sbert_model"] = config.sbert_model
    kwargs["released_tokens"] = bool(config.vocab_file)
    kwargs["batch_size"] = options.sbert_batch_size
    ds = dataset_of_shards([shard_input(s, columns[s.split]) for s in todo])
    res = plan_resources(options.sbert_actors, "sbert_actors", len(todo))
    with pool_placement(res) as placement:
        ds = map_in_actor_pool(ds, CaptionVectorizer, kwargs, res, placement)
        return write_shards(ds, ledger, todo, captions_table)
