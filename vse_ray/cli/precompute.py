"""`vse-ray precompute`: raw data → features, captions and relevance files (Ray Data)."""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Annotated, Any

import typer

from vse_ray.cli.options import default_of, given_options
from vse_ray.data.precompute.config import AUTO, ExecutionOptions, PrecomputeConfig
from vse_ray.relevance.sources import SOURCES


def _auto_int(name: str, value: str, allow_none: bool = False) -> int | str:
    """``"auto"`` stays, else an int; BadParameter naming the option (offering none where allowed)."""
    if value == AUTO:
        return AUTO
    try:
        return int(value)
    except ValueError as err:
        raise typer.BadParameter(
            f"--{name} {value!r}: expected auto, an integer{' or none' * allow_none}"
        ) from err


def _auto_int_or_none(name: str, value: str) -> int | str | None:
    """As `_auto_int`, and ``"none"`` → None."""
    return None if value.lower() == "none" else _auto_int(name, value, allow_none=True)


# PrecomputeConfig fields whose command-line option has another name.
_OPTION_OF = {"relevance_sources": "relevance", "vocab_file": "vocab"}
_CONFIG = partial(default_of, PrecomputeConfig)  # each option's default is its config field's
_EXECUTION = partial(default_of, ExecutionOptions)
RELEVANCE_CHOICES = ",".join(
    f"{s.name} (synthetic only)" if s.synthetic_only else s.name for s in SOURCES.values()
)


def with_recipe(config: PrecomputeConfig, recipe: str, ctx: typer.Context) -> PrecomputeConfig:
    """``config`` with the recipe's ``precompute:`` values for every field not given on the command line."""
    from vse_ray.train.recipe import load_recipe

    block = load_recipe(recipe, "<out>").precompute  # a bad recipe: a ValueError, one line
    given = given_options(ctx)
    values: dict[str, Any] = {
        key: tuple(value) if isinstance(value, list) else value
        for key, value in block.items()
        if _OPTION_OF.get(key, key) not in given
    }
    return dataclasses.replace(config, **values)


def precompute(
    ctx: typer.Context,
    out: Annotated[str, typer.Option(help="Output folder (one per dataset).")],
    dataset: Annotated[str, typer.Option(help="synthetic | karpathy | precomp.")] = _CONFIG("dataset"),
    splits: Annotated[str, typer.Option(help="Comma-separated splits (needs train).")] = ",".join(
        _CONFIG("splits")
    ),
    karpathy_json: Annotated[
        str | None, typer.Option(help="dataset_{coco,flickr30k,flickr8k}.json.")
    ] = _CONFIG("karpathy_json"),
    restval: Annotated[
        bool,
        typer.Option(help="Karpathy COCO: train on the restval images too (VSE++ rV; no: 82,783 images)."),
    ] = _CONFIG("restval"),
    image_root: Annotated[str | None, typer.Option(help="Image folder or URI (s3://, gs://).")] = _CONFIG(
        "image_root"
    ),
    precomp_dir: Annotated[str | None, typer.Option(help="Folder of {split}_ims.npy, _caps.txt.")] = _CONFIG(
        "precomp_dir"
    ),
    precomp_test: Annotated[
        str, typer.Option(help="Precomp files of the test split: test | testall (COCO's 5,000 images).")
    ] = _CONFIG("precomp_test"),
    n_train: Annotated[int, typer.Option(help="Synthetic training images.")] = _CONFIG("n_train"),
    n_val: Annotated[int, typer.Option(help="Synthetic validation images.")] = _CONFIG("n_val"),
    n_test: Annotated[int, typer.Option(help="Synthetic test images.")] = _CONFIG("n_test"),
    image_size: Annotated[int, typer.Option(help="Side of the synthetic images in pixels.")] = _CONFIG(
        "image_size"
    ),
    seed: Annotated[int, typer.Option(help="Seed of the synthetic data and of the SVD.")] = _CONFIG("seed"),
    captions_per_image: Annotated[int, typer.Option(help="Captions kept per image.")] = _CONFIG(
        "captions_per_image"
    ),
    cnn: Annotated[str, typer.Option(help="auto | resnet152 | vgg19 | resnet18 | ... | small.")] = _CONFIG(
        "cnn"
    ),
    weights: Annotated[
        str, typer.Option(help="auto | none (seeded random init) | torchvision weights, e.g. IMAGENET1K_V1.")
    ] = _CONFIG("weights"),
    resize: Annotated[str, typer.Option(help="auto | side the images are resized to.")] = _CONFIG("resize"),
    crop: Annotated[str, typer.Option(help="auto | none (whole image) | side of the CNN crops.")] = _CONFIG(
        "crop"
    ),
    ten_crop: Annotated[bool, typer.Option(help="Mean of 10-crop features (VSE++ 10C).")] = _CONFIG(
        "ten_crop"
    ),
    grid: Annotated[
        bool, typer.Option(help="Keep the CNN's last conv map as regions (7x7x2048 for ResNet-152).")
    ] = _CONFIG("grid"),
    feature_dtype: Annotated[
        str, typer.Option(help="float32 | float16 storage of region features.")
    ] = _CONFIG("feature_dtype"),
    keep_images: Annotated[str, typer.Option(help="auto | yes | no: keep resized PNGs.")] = _CONFIG(
        "keep_images"
    ),
    sbert_model: Annotated[str, typer.Option(help="Sentence-BERT model or folder.")] = _CONFIG("sbert_model"),
    svd_dim: Annotated[int, typer.Option(help="TF-IDF + SVD components (LSEH k).")] = _CONFIG("svd_dim"),
    vocab_min_count: Annotated[int, typer.Option(help="Min train count of a vocabulary word.")] = _CONFIG(
        "vocab_min_count"
    ),
    vocab: Annotated[
        str | None,
        typer.Option(
            help="A released code's vocabulary (f30k_precomp_vocab.json, or VSE++'s vocab .pkl, read "
            "without running code): its ids, captions tokenised as that code does (nltk word_tokenize)."
        ),
    ] = _CONFIG("vocab_file"),
    relevance: Annotated[str, typer.Option(help=f"val/test matrices: auto | {RELEVANCE_CHOICES}.")] = _CONFIG(
        "relevance_sources"
    ),
    shard_size: Annotated[int, typer.Option(help="Images per Parquet shard.")] = _CONFIG("shard_size"),
    cnn_actors: Annotated[
        int | None, typer.Option(help="CNN actors (default: 1 per GPU or 4 CPUs).")
    ] = _EXECUTION("cnn_actors"),
    sbert_actors: Annotated[
        int | None, typer.Option(help="Sentence-BERT actors (default: as CNN).")
    ] = _EXECUTION("sbert_actors"),
    max_reject_fraction: Annotated[
        float, typer.Option(help="Fail above this share of bad images.")
    ] = _EXECUTION("max_reject_fraction"),
    overwrite: Annotated[
        bool, typer.Option(help="Replace a folder written with another config.")
    ] = _EXECUTION("overwrite"),
    recipe: Annotated[
        str | None,
        typer.Option(
            help="Compute what this recipe trains on: its precompute: block, options given here over it."
        ),
    ] = None,
    ray_address: Annotated[
        str | None, typer.Option(help="Ray cluster address; default: the running one, else a local Ray.")
    ] = None,
) -> None:
    """Precompute one dataset; rerun the same command to resume, --overwrite to change the config."""
    keep: dict[str, bool | str] = {"auto": AUTO, "yes": True, "no": False}
    if keep_images not in keep:
        raise typer.BadParameter(f"--keep-images {keep_images!r}: expected auto, yes or no")
    config = PrecomputeConfig(
        dataset=dataset,
        splits=tuple(s.strip() for s in splits.split(",") if s.strip()),
        restval=restval,
        captions_per_image=captions_per_image,
        n_train=n_train,
        n_val=n_val,
        n_test=n_test,
        image_size=image_size,
        seed=seed,
        karpathy_json=karpathy_json,
        image_root=image_root,
        precomp_dir=precomp_dir,
        precomp_test=precomp_test,
        cnn=cnn,
        weights=None if weights.lower() == "none" else weights,
        resize=_auto_int("resize", resize),
        crop=_auto_int_or_none("crop", crop),
        ten_crop=ten_crop,
        grid=grid,
        feature_dtype=feature_dtype,
        keep_images=keep[keep_images],
        sbert_model=sbert_model,
        svd_dim=svd_dim,
        vocab_min_count=vocab_min_count,
        vocab_file=vocab,
        relevance_sources=AUTO
        if relevance == AUTO
        else tuple(s.strip() for s in relevance.split(",") if s.strip()),
        shard_size=shard_size,
    )
    if recipe:
        config = with_recipe(config, recipe, ctx)
    options = ExecutionOptions(
        cnn_actors=cnn_actors,
        sbert_actors=sbert_actors,
        max_reject_fraction=max_reject_fraction,
        overwrite=overwrite,
    )
    config.resolved()  # bad values fail before Ray starts
    from vse_ray.data.precompute.run import claim_precompute, run_precompute
    from vse_ray.disk_full import disk_full_is_an_error
    from vse_ray.log_file import command_log, log_file_line

    with disk_full_is_an_error(out, "free space and rerun: finished shards are kept"):
        claimed = claim_precompute(config, out, options)  # reads and checks the input before Ray starts
        with command_log(out) as log:
            print(log_file_line(log), flush=True)
            run_precompute(claimed, ray_address=ray_address)
