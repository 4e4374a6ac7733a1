"""`vse-ray import`: a checkpoint of the authors' released code as a vse_ray checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

# The formats of vse_ray.official.FORMATS (a test compares the names), written out here so that `--help`
# does not import torch.
FORMAT_HELP = (
    "vse_infty_bigru: VSE∞ (github.com/woodfrog/vse_infty, branch bigru), region features; "
    "vse_infty_bert: VSE∞ (github.com/woodfrog/vse_infty, BERT text, needs --bert-path); "
    "vsepp: VSE++ (github.com/fartashf/vsepp), precomputed features; "
    "scan: SCAN (github.com/kuanghuei/SCAN), t2i/i2t, LogSumExp/Mean; "
    "sgraf: SGRAF (github.com/Paranioar/SGRAF), SGR or SAF; "
    "gsmn: GSMN (github.com/CrossmodalGroup/GSMN), dense or sparse (needs --graph-path); "
    "vsrn: VSRN (github.com/KunpengLi1994/VSRN), f30k or coco image head (the caption decoder is not saved); "
    "cvse: CVSE (github.com/BruceW91/CVSE), released reading (needs --data, --concepts, --concept-vectors); "
    "ladder: the ladder loss code (github.com/cdluminate/ladderloss, thCapRank.py), precomputed features."
)


def import_checkpoint(
    checkpoint: Annotated[str, typer.Option(help="The released checkpoint file (e.g. model_best.pth).")],
    output: Annotated[str, typer.Option(help="Folder of the vse_ray checkpoint (a new folder).")],
    fmt: Annotated[str, typer.Option("--format", help=FORMAT_HELP)] = "vse_infty_bigru",
    data: Annotated[
        str,
        typer.Option(
            help="Precompute folder recorded for `evaluate` (or give --data there); its vocabulary must "
            "match the checkpoint's word embedding."
        ),
    ] = "",
    bert_path: Annotated[
        str,
        typer.Option(
            help="vse_infty_bert: folder of the BERT the model was trained from (config.json, vocab.txt); "
            "'' = bert-base-uncased in the Hugging Face cache."
        ),
    ] = "",
    graph_path: Annotated[
        str,
        typer.Option(
            help="gsmn, sparse: the captions' dependency edges (JSON {caption text: [[governor, dependent], "
            "...]}, `vse-ray gsmn-data` writes it)."
        ),
    ] = "",
    concepts: Annotated[
        str,
        typer.Option(
            help="cvse: the released concept folder the model trained with (category_concepts.json, "
            "*_adj_concepts.pkl; opt.concept_name's folder)."
        ),
    ] = "",
    concept_vectors: Annotated[
        str,
        typer.Option(
            help="cvse: the concepts' input vectors (the released *_concepts_glove_word2vec.pkl of "
            "opt.inp_name, or a GloVe text file)."
        ),
    ] = "",
    wordnet: Annotated[
        str,
        typer.Option(
            help="cvse: WordNet folder (index.noun, noun.exc) that lemmatises the tokens; '' = nltk's data."
        ),
    ] = "",
) -> None:
    """Convert a released checkpoint (loaded without arbitrary unpickling) into a vse_ray checkpoint that
    `vse-ray evaluate --run FOLDER` reads."""
    from vse_ray.checkpoint_files import CHECKPOINT_FILE
    from vse_ray.official import FORMATS
    from vse_ray.train.imported import import_released

    if fmt not in FORMATS:
        raise ValueError(f"format: must be one of {sorted(FORMATS)}, got {fmt!r}")
    target = Path(output) / CHECKPOINT_FILE
    if target.exists():
        raise ValueError(f"output: {target} exists; choose another folder or remove it")
    given = {
        "bert_path": bert_path,
        "graph_path": graph_path,
        "concepts": concepts,
        "concept_vectors": concept_vectors,
        "wordnet": wordnet,
    }
    flags = {k: v for k, v in given.items() if v}
    path = import_released(FORMATS[fmt], checkpoint, output, data, **flags)
    typer.echo(f"imported {checkpoint} ({fmt}) -> {path}")
