"""What a model is built from besides its sizes and options: the factory fetches the data, the models take
tensors (open_clip's ``factory.py`` split).

A model declares the constructor keywords the data fills in (`RetrievalModel.data_inputs`); this module
reads them from the training folder (or released files) for one training. Options that only choose those
data (CVSE's `concepts`, `wordnet`, `rank_margin`) are `model_params` the factory takes and the model never
sees, so a checkpoint rebuilds the model from its buffers without reading the training folder again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from vse_ray.data.precompute.concepts import (
    ConceptGraph,
    concept_adjacency,
    concepts_of_split,
    token_concept_index,
)
from vse_ray.data.precompute.lemmas import load_noun_lemmatizer
from vse_ray.losses import make_loss
from vse_ray.models import model_options
from vse_ray.official.cvse_concepts import read_concept_vectors, read_official_concepts
from vse_ray.train.config import TrainConfig


@dataclass(frozen=True)
class ModelData:
    """How the factory fills one model's `data_inputs`."""

    options: dict[str, Any]  # the model_params it takes (not the model's), with their defaults
    load: Callable[[TrainConfig, dict[str, Any], Mapping[str, int], int], dict[str, Any]]
    check: Callable[[TrainConfig, dict[str, Any]], None]  # before training starts: ValueError naming a file


def _concept_graph(data_dir: str, concepts: str, k: int) -> ConceptGraph | None:
    """The `k` concepts of the file or folder `concepts`, else of `data_dir`'s train captions (None: none)."""
    if not concepts:
        return concepts_of_split(data_dir, k) if data_dir else None
    path = Path(concepts)
    if not path.exists():
        raise FileNotFoundError(f"concepts {path}: no such file or folder")
    graph = read_official_concepts(path) if path.is_dir() else ConceptGraph.load(path)
    if len(graph.words) != k:
        raise ValueError(f"n_concepts: {k}, but concepts {path} holds {len(graph.words)} concepts")
    return graph


def _cvse_inputs(
    cfg: TrainConfig, params: dict[str, Any], vocab: Mapping[str, int], vocab_size: int
) -> dict[str, Any]:
    """CVSE's concept graph, its concepts' input vectors, the token → concept index and its rank loss.

    The concepts are `params["concepts"]` (an `.npz` of `ConceptGraph.save` or a folder of the released
    files), else the training captions' (`concepts.npz` when present); the vectors come from
    `cfg.concept_vectors` (GloVe or the released pickle; "": random); the released reading lemmatises the
    tokens with WordNet (`params["wordnet"]`, "": nltk's data).
    """
    k, concept_dim = params["n_concepts"], params["concept_dim"]
    graph = _concept_graph(cfg.data_dir, params["concepts"], k)
    released = params["reading"] == "released" and cfg.data_dir
    lemmatizer = load_noun_lemmatizer(params["wordnet"]) if released else None
    inputs: dict[str, Any] = {"rank_loss": make_loss("vsepp", margin=params["rank_margin"]).from_similarity}
    if graph is not None:
        inputs["adjacency"] = torch.from_numpy(concept_adjacency(graph.counts, graph.cooccurrence))
        if cfg.data_dir:
            index = token_concept_index(vocab, graph.words, vocab_size, lemmatizer)
            inputs["token_concepts"] = torch.from_numpy(index)
    if cfg.concept_vectors:
        if graph is None:
            raise ValueError("concept_vectors: needs the concept words (data_dir or concepts)")
        vectors = torch.from_numpy(read_concept_vectors(cfg.concept_vectors, graph.words))
        if vectors.shape[1] != concept_dim:
            raise ValueError(
                f"concept_vectors {cfg.concept_vectors}: size {vectors.shape[1]}, concept_dim {concept_dim}"
            )
        inputs["concept_inputs"] = vectors
    return inputs


def _check_cvse(cfg: TrainConfig, params: dict[str, Any]) -> None:
    """The concept graph is read (ValueError naming the file, or the concept count the data cannot give)
    and the released reading finds WordNet."""
    _concept_graph(cfg.data_dir, params["concepts"], params["n_concepts"])
    if params["reading"] == "released" and cfg.data_dir:
        load_noun_lemmatizer(params["wordnet"])


MODEL_DATA: dict[str, ModelData] = {
    "cvse": ModelData({"concepts": "", "wordnet": "", "rank_margin": 0.2}, _cvse_inputs, _check_cvse),
}


def training_options(name: str) -> dict[str, Any]:
    """The `model_params` a training of model `name` takes, with their defaults: the model's own options
    (`vse_ray.models.model_options`) and those the factory takes to fetch its data."""
    factory = MODEL_DATA.get(name)
    return {**model_options(name), **(factory.options if factory else {})}


def constructor_params(cfg: TrainConfig) -> dict[str, Any]:
    """`cfg.model_params` less the options the factory takes: the model's own keywords."""
    factory = MODEL_DATA.get(cfg.model)
    taken = factory.options if factory else {}
    return {key: value for key, value in cfg.model_params.items() if key not in taken}


def _params(cfg: TrainConfig) -> dict[str, Any]:
    """Every option of `cfg.model`, defaults filled in."""
    return {**training_options(cfg.model), **cfg.model_params}


def model_data(cfg: TrainConfig, vocab: Mapping[str, int], vocab_size: int) -> dict[str, Any]:
    """The `data_inputs` keywords of `cfg.model` for this training ({} for a model that needs none)."""
    factory = MODEL_DATA.get(cfg.model)
    return factory.load(cfg, _params(cfg), vocab, vocab_size) if factory else {}


def check_model_data(cfg: TrainConfig) -> None:
    """Before training starts: the files the factory will read for `cfg.model` are there and fit."""
    factory = MODEL_DATA.get(cfg.model)
    if factory is not None:
        factory.check(cfg, _params(cfg))
