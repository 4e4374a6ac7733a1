"""`vse-ray precompute`: raw data → features, captions and relevance files (Ray Data)."""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Annotated, Any

import typer

from vse_ray.cli.options import given_options, options_from
from vse_ray.config_fields import default_of, help_of
from vse_ray.data.precompute.config import AUTO, ExecutionOptions, PrecomputeConfig


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
_HELP = partial(help_of, PrecomputeConfig)
# The fields whose option is the field itself (its name, type, default and help); the others are read
# from text (auto, none, comma lists) below.
CONFIG_OPTIONS = (
    "dataset",
    "karpathy_json",
    "restval",
    "image_root",
    "precomp_dir",
    "precomp_test",
    "n_train",
    "n_val",
    "n_test",
    "image_size",
    "seed",
    "captions_per_image",
    "cnn",
    "resize_mode",
    "ten_crop",
    "grid",
    "feature_dtype",
    "sbert_model",
    "svd_dim",
    "vocab_min_count",
    "shard_size",
)
EXECUTION_OPTIONS = ("cnn_actors", "sbert_actors", "max_reject_fraction", "overwrite")


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


@options_from(ExecutionOptions, EXECUTION_OPTIONS, before="recipe")
@options_from(PrecomputeConfig, CONFIG_OPTIONS, before="splits")
def precompute(
    ctx: typer.Context,
    *,
    out: Annotated[str, typer.Option(help="Output folder (one per dataset).")],
    splits: Annotated[str, typer.Option(help=_HELP("splits"))] = ",".join(_CONFIG("splits")),
    weights: Annotated[str, typer.Option(help=_HELP("weights"))] = _CONFIG("weights"),
    resize: Annotated[str, typer.Option(help=_HELP("resize"))] = _CONFIG("resize"),
    crop: Annotated[str, typer.Option(help=_HELP("crop"))] = _CONFIG("crop"),
    keep_images: Annotated[str, typer.Option(help=_HELP("keep_images"))] = _CONFIG("keep_images"),
    vocab: Annotated[str | None, typer.Option(help=_HELP("vocab_file"))] = _CONFIG("vocab_file"),
    relevance: Annotated[str, typer.Option(help=_HELP("relevance_sources"))] = _CONFIG("relevance_sources"),
    recipe: Annotated[
        str | None,
        typer.Option(
            help="Compute what this recipe trains on: its precompute: block, options given here over it."
        ),
    ] = None,
    ray_address: Annotated[
        str | None, typer.Option(help="Ray cluster address; default: the running one, else a local Ray.")
    ] = None,
    **fields: Any,
) -> None:
    """Precompute one dataset; rerun the same command to resume, --overwrite to change the config."""
    # `fields`: the options of CONFIG_OPTIONS and EXECUTION_OPTIONS, each under its field's name
    keep: dict[str, bool | str] = {"auto": AUTO, "yes": True, "no": False}
    if keep_images not in keep:
        raise typer.BadParameter(f"--keep-images {keep_images!r}: expected auto, yes or no")
    execution = {name: fields.pop(name) for name in EXECUTION_OPTIONS}
    config = PrecomputeConfig(
        splits=tuple(s.strip() for s in splits.split(",") if s.strip()),
        weights=None if weights.lower() == "none" else weights,
        resize=_auto_int("resize", resize),
        crop=_auto_int_or_none("crop", crop),
        keep_images=keep[keep_images],
        vocab_file=vocab,
        relevance_sources=AUTO
        if relevance == AUTO
        else tuple(s.strip() for s in relevance.split(",") if s.strip()),
        **fields,
    )
    if recipe:
        config = with_recipe(config, recipe, ctx)
    options = ExecutionOptions(**execution)
    config.resolved()  # bad values fail before Ray starts
    from vse_ray.data.precompute.run import claim_precompute, run_precompute
    from vse_ray.disk_full import disk_full_is_an_error
    from vse_ray.log_file import command_log, log_file_line

    with disk_full_is_an_error(out, "free space and rerun: finished shards are kept"):
        claimed = claim_precompute(config, out, options, lock=True)  # the input checked before Ray starts
        with command_log(out) as log:
            print(log_file_line(log), flush=True)
            run_precompute(claimed, ray_address=ray_address)
