"""The released formats `vse-ray import` reads: which vse_ray model each becomes and how its ``opt`` gives
that model's settings. Only settings with a vse_ray counterpart are imported (region or pooled features, L2
normalised embeddings, one GRU layer); another value is refused in one line naming the option.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import torch

from vse_ray.data.precompute.concepts import token_concept_index
from vse_ray.data.precompute.lemmas import load_noun_lemmatizer
from vse_ray.data.store.readers import load_vocab
from vse_ray.models import official_names
from vse_ray.models.cvse_modules import normalized_adjacency
from vse_ray.official.cvse_concepts import read_concept_vectors, read_official_concepts
from vse_ray.official.released import Options, ReleasedFormat

TWO_PARTS = "{'model': [img_enc state dict, txt_enc state dict], 'opt': Namespace}"


def _sizes(opt: Options, parts: dict[str, dict]) -> dict[str, int]:
    """The constructor sizes every model shares: vocabulary (the word-embedding rows), region or pooled
    feature width, word and joint embedding sizes."""
    return {
        "vocab_size": opt.rows(parts["txt_enc"]),
        "feature_dim": int(opt.get("img_dim")),
        "word_dim": int(opt.get("word_dim")),
        "embed_dim": int(opt.get("embed_size")),
    }


def _vse_inf_bigru(opt: Options, parts: dict[str, dict]) -> dict[str, Any]:
    """VSE∞ BiGRU: region features (``precomp_enc_type='basic'``), GPO on both sides."""
    if any(k.startswith("bert.") for k in parts["txt_enc"]):
        raise opt.error(
            "expected a BiGRU text encoder (txt_enc 'embed.weight'), found a BERT one (txt_enc 'bert.*'); "
            "import it with --format vse_infty_bert"
        )
    opt.one_of("precomp_enc_type", ("basic",), "basic")
    opt.normalised("no_imgnorm", "no_txtnorm")
    return {**_sizes(opt, parts), "num_layers": int(opt.get("num_layers"))}


def _vse_inf_bert(opt: Options, parts: dict[str, dict]) -> dict[str, Any]:
    """VSE∞ BERT: the BERT weights are in the file; its config and wordpieces come from ``--bert-path``."""
    if not any(k.startswith("bert.") for k in parts["txt_enc"]):
        raise opt.error(
            "expected a BERT text encoder (txt_enc 'bert.*'), found a BiGRU one; "
            "import it with --format vse_infty_bigru"
        )
    opt.one_of("precomp_enc_type", ("basic",), "basic")
    opt.normalised("no_imgnorm", "no_txtnorm")
    return {
        "vocab_size": int(opt.get("vocab_size", 0)),
        "feature_dim": int(opt.get("img_dim")),
        "word_dim": int(opt.get("word_dim", 300)),
        "embed_dim": int(opt.get("embed_size")),
        "text_encoder": "bert",
        "bert_path": str(opt.flags.get("bert_path", "")),
    }


def _vsepp(opt: Options, parts: dict[str, dict]) -> dict[str, Any]:
    """VSE++ on precomputed pooled features (``data_name`` ending in ``_precomp``), cosine similarity."""
    data_name = str(opt.get("data_name"))
    if not data_name.endswith("_precomp"):
        raise opt.error(
            f"expected precomputed features (opt.data_name '*_precomp'), found {data_name!r} "
            "(a CNN on raw images: not imported)"
        )
    opt.one_of("measure", ("cosine",), "cosine")
    opt.one_of("use_abs", (False,), False)
    opt.one_of("num_layers", (1,), 1)
    return {
        **_sizes(opt, parts),
        "normalize_image": not opt.get("no_imgnorm", False),
    }


_SCAN_AGGREGATIONS = {"LogSumExp": "lse", "Mean": "mean"}


def _scan(opt: Options, parts: dict[str, dict]) -> dict[str, Any]:
    """SCAN t2i / i2t with LogSumExp or average pooling and the released ``clipped_l2norm``."""
    opt.one_of("precomp_enc_type", ("basic",), "basic")
    opt.normalised("no_imgnorm", "no_txtnorm")
    opt.one_of("raw_feature_norm", ("clipped_l2norm",))
    opt.one_of("num_layers", (1,), 1)
    return {
        **_sizes(opt, parts),
        "direction": opt.one_of("cross_attn", ("t2i", "i2t")),
        "aggregation": _SCAN_AGGREGATIONS[opt.one_of("agg_func", tuple(_SCAN_AGGREGATIONS))],
        "lambda_softmax": float(opt.get("lambda_softmax")),
        "lambda_lse": float(opt.get("lambda_lse", 6.0)),
        "bidirectional": bool(opt.get("bi_gru", False)),
    }


def _sgraf(opt: Options, parts: dict[str, dict]) -> dict[str, Any]:
    """SGR or SAF; the released code fixes 36 regions per image."""
    opt.normalised("no_imgnorm", "no_txtnorm")
    opt.one_of("num_layers", (1,), 1)
    return {
        **_sizes(opt, parts),
        "module": opt.one_of("module_name", ("SGR", "SAF")).lower(),
        "sim_dim": int(opt.get("sim_dim")),
        "sgr_steps": int(opt.get("sgr_step", 3)),
        "bidirectional": bool(opt.get("bi_gru", True)),
    }


def _gsmn(opt: Options, parts: dict[str, dict]) -> dict[str, Any]:
    """GSMN dense or sparse (``is_sparse``); the sparse model needs ``--graph-path``. The region input gains
    the 4 box columns vse_ray reads the boxes from."""
    opt.normalised("no_imgnorm", "no_txtnorm")
    opt.one_of("num_layers", (1,), 1)
    opt.one_of("out_dim", (1,), 1)
    num_block = int(opt.get("num_block"))
    opt.one_of("feat_dim", (num_block,))  # the node matching vector has num_block entries
    sparse = bool(opt.get("is_sparse", False))
    graph_path = str(opt.flags.get("graph_path", ""))
    if sparse and not graph_path:
        raise opt.error(
            "a sparse GSMN (opt.is_sparse) reads its captions' dependency edges: give --graph-path"
        )
    sizes = _sizes(opt, parts)
    return {
        **sizes,
        "feature_dim": sizes["feature_dim"] + 4,
        "sparse": sparse,
        "graph_path": graph_path,
        "lambda_softmax": float(opt.get("lambda_softmax")),
        "num_block": num_block,
        "hid_dim": int(opt.get("hid_dim")),
        "bidirectional": bool(opt.get("bi_gru", False)),
    }


_VSRN_VARIANTS = {"f30k_precomp": "f30k", "coco_precomp": "coco"}


def _vsrn(opt: Options, parts: dict[str, dict]) -> dict[str, Any]:
    """VSRN on region features: its image head follows the data set it trained on (``data_name``: f30k's
    BatchNorm on the image embedding, coco's L2-normalised regions); the caption decoder's sizes come from
    ``opt`` (its weights are not in the file)."""
    opt.one_of("measure", ("cosine",), "cosine")
    opt.one_of("use_abs", (False,), False)
    opt.one_of("num_layers", (1,), 1)
    opt.normalised("no_imgnorm")
    return {
        **_sizes(opt, parts),
        "variant": _VSRN_VARIANTS[opt.one_of("data_name", tuple(_VSRN_VARIANTS))],
        "caption_hidden": int(opt.get("dim_hidden")),
        "caption_word_dim": int(opt.get("dim_word")),
        "max_len": int(opt.get("max_len")),
    }


_CVSE_DATASETS = {"f30k_precomp": "f30k", "coco_precomp": "coco"}
# What a CVSE checkpoint does not hold: (flag, the released option naming the file it trained with).
_CVSE_FILES = (("concepts", "concept_name"), ("concept_vectors", "inp_name"))


def _cvse(opt: Options, parts: dict[str, dict]) -> dict[str, Any]:
    """CVSE as BruceW91/CVSE releases it (the ``released`` reading): weighted-sum fusion, evaluated with
    the fuse weight and label completion of the data set it trained on (``data_name``)."""
    opt.one_of("precomp_enc_type", ("basic",), "basic")
    opt.normalised("no_imgnorm", "no_txtnorm")
    opt.one_of("use_abs", (False,), False)
    opt.one_of("measure", ("cosine",), "cosine")
    opt.one_of("num_layers", (1,), 1)
    opt.one_of("bi_gru", (True,), True)
    opt.one_of("use_BatchNorm", (True,), True)
    opt.one_of("activation_type", ("tanh",), "tanh")
    opt.one_of("feature_fuse_type", ("weight_sum",), "weight_sum")
    for flag, option in _CVSE_FILES:
        if not opt.flags.get(flag):
            released = f"opt.{option} {opt.get(option, '')!r}"
            raise opt.error(
                f"a CVSE checkpoint does not hold the file of {released}: give --{flag.replace('_', '-')}"
            )
    return {
        **_sizes(opt, parts),
        "n_concepts": int(opt.get("num_attribute")),
        "concept_dim": int(opt.get("input_channel")),
        "label_ratio": float(opt.get("Concept_label_ratio", 0.35)),
        "dropout": float(opt.get("dropout_rate", 0.4)),
        "reading": "released",
        "eval_dataset": _CVSE_DATASETS[opt.one_of("data_name", tuple(_CVSE_DATASETS))],
    }


def _cvse_buffers(
    opt: Options, parts: dict[str, dict], args: dict[str, Any], data_dir: str
) -> dict[str, torch.Tensor]:
    """CVSE's concept graph (the file's ``C_GCN.adj_all``, normalised as the released forward does), the
    concepts' input vectors (``--concept-vectors``) and each token's concept: the concept words of
    ``--concepts`` matched by WordNet lemma (``--wordnet``) against the vocabulary of the data folder."""
    if not data_dir:
        raise opt.error("CVSE labels captions by the concept words of their tokens: give --data")
    k = args["n_concepts"]
    graph = parts["C_GCN"].get("adj_all")
    if not isinstance(graph, torch.Tensor) or graph.shape != (k, k):
        found = tuple(graph.shape) if isinstance(graph, torch.Tensor) else type(graph).__name__
        raise opt.error(f"expected C_GCN 'adj_all' of shape {(k, k)} (opt.num_attribute), found {found}")
    concepts = Path(opt.flags["concepts"])
    if not concepts.is_dir():
        raise opt.error(f"--concepts {concepts}: not a folder (the released concept files)")
    words = read_official_concepts(concepts).words
    if len(words) != k:
        raise opt.error(f"opt.num_attribute is {k}, but --concepts {concepts} holds {len(words)} concepts")
    vectors = read_concept_vectors(opt.flags["concept_vectors"], words)
    if vectors.shape[1] != args["concept_dim"]:
        raise opt.error(
            f"--concept-vectors {opt.flags['concept_vectors']}: vectors of size {vectors.shape[1]}, "
            f"opt.input_channel {args['concept_dim']}"
        )
    lemmatizer = load_noun_lemmatizer(opt.flags.get("wordnet", ""))
    index = token_concept_index(load_vocab(data_dir), words, args["vocab_size"], lemmatizer)
    return {
        "adjacency": normalized_adjacency(graph),
        "concept_inputs": torch.from_numpy(vectors),
        "token_concepts": torch.from_numpy(index),
    }


LADDER_FILE = "a ladder-code snapshot [state_dict, score, recalls, recalls] (thCapRank.py evaluation())"


def _ladder_layout(path: Path, raw: Any) -> tuple[dict[str, dict], argparse.Namespace]:
    """The ladder code's `evaluation()` saves ``[model.state_dict(), rsum, recalls x→v, recalls v→x]`` and no
    options: its one state dict is the part ``model``, and the options are empty."""
    if isinstance(raw, list | tuple) and raw and isinstance(raw[0], dict):
        return {"model": raw[0]}, argparse.Namespace()
    found = f"a dict with keys {sorted(raw)}" if isinstance(raw, dict) else f"a {type(raw).__name__}"
    raise ValueError(f"checkpoint {path}: expected {LADDER_FILE}, found {found}")


def _ladder(opt: Options, parts: dict[str, dict]) -> dict[str, Any]:
    """The ladder code's `JointEmbNet` (VSE++ on precomputed features): the sizes come from the tensors. Its
    image branch applies a ReLU to the input features, the identity on the non-negative CNN features its
    `visual.py` computes, which vse_ray's projection reads as they are."""
    sizes = {}
    for name, rows, cols in (
        ("encoder.weight", "vocab_size", "word_dim"),
        ("cnnaffine.weight", "embed_dim", "feature_dim"),
    ):
        tensor = parts["model"].get(name)
        if not isinstance(tensor, torch.Tensor) or tensor.dim() != 2:
            found = tuple(tensor.shape) if isinstance(tensor, torch.Tensor) else type(tensor).__name__
            raise opt.error(f"expected model {name!r} ({rows}, {cols}), found {found}")
        sizes[rows], sizes[cols] = int(tensor.shape[0]), int(tensor.shape[1])
    return {**sizes, "normalize_image": True}


FORMATS = {
    f.name: f
    for f in (
        ReleasedFormat(
            "vse_infty_bigru",
            f"a VSE∞ checkpoint {TWO_PARTS}",
            "vse_inf",
            ("img_enc", "txt_enc"),
            official_names.VSE_INF_BIGRU,
            _vse_inf_bigru,
            mask_row=True,
        ),
        ReleasedFormat(
            "vse_infty_bert",
            f"a VSE∞ checkpoint {TWO_PARTS}",
            "vse_inf",
            ("img_enc", "txt_enc"),
            official_names.VSE_INF_BERT,
            _vse_inf_bert,
            reads_vocab=False,
        ),
        ReleasedFormat(
            "vsepp",
            f"a VSE++ checkpoint {TWO_PARTS}",
            "vsepp",
            ("img_enc", "txt_enc"),
            official_names.VSEPP,
            _vsepp,
        ),
        ReleasedFormat(
            "scan",
            f"a SCAN checkpoint {TWO_PARTS}",
            "scan",
            ("img_enc", "txt_enc"),
            official_names.SCAN,
            _scan,
        ),
        ReleasedFormat(
            "sgraf",
            "an SGRAF checkpoint {'model': [img_enc, txt_enc, sim_enc state dicts], 'opt': Namespace}",
            "sgraf",
            ("img_enc", "txt_enc", "sim_enc"),
            official_names.SGRAF,
            _sgraf,
        ),
        ReleasedFormat(
            "gsmn",
            "a GSMN checkpoint {'model': [img_enc, txt_enc, i2t_match_G, t2i_match_G], 'opt': Namespace}",
            "gsmn",
            ("img_enc", "txt_enc", "i2t_match_G", "t2i_match_G"),
            official_names.GSMN,
            _gsmn,
        ),
        ReleasedFormat(
            "vsrn",
            f"a VSRN checkpoint {TWO_PARTS}",
            "vsrn",
            ("img_enc", "txt_enc"),
            official_names.VSRN,
            _vsrn,
            not_saved=("captioner.",),
            conv1x1=True,
        ),
        ReleasedFormat(
            "cvse",
            "a CVSE checkpoint {'model': [img_enc, txt_enc, V_self_atten_enhance, T_self_atten_enhance, "
            "V_consensus_level_embedding, T_consensus_level_embedding, C_GCN, Multi_feature_fusing], "
            "'opt': Namespace}",
            "cvse",
            (
                "img_enc",
                "txt_enc",
                "V_self_atten_enhance",
                "T_self_atten_enhance",
                "V_consensus_level_embedding",
                "T_consensus_level_embedding",
                "C_GCN",
                "Multi_feature_fusing",
            ),
            official_names.CVSE,
            _cvse,
            derived=_cvse_buffers,
        ),
        ReleasedFormat(
            "ladder",
            LADDER_FILE,
            "vsepp",
            ("model",),
            official_names.LADDER,
            _ladder,
            layout=_ladder_layout,
        ),
    )
}
