"""The released formats `vse-ray import` reads: which vse_ray model each becomes and how its ``opt`` gives
that model's settings. Only settings with a vse_ray counterpart are imported (region or pooled features, L2
normalised embeddings, one GRU layer); another value is refused in one line naming the option.
"""

from __future__ import annotations

from typing import Any

from vse_ray.models import official_names
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
    )
}
