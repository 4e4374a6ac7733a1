"""Options read their configs and registries: defaults declared once, help listing every name."""

from __future__ import annotations

import dataclasses
import re

import pytest
import typer
from typer.testing import CliRunner

from vse_ray.cli.main import app
from vse_ray.config_fields import default_of, help_of
from vse_ray.data.precompute.config import ExecutionOptions, PrecomputeConfig
from vse_ray.losses import LOSS_NAMES
from vse_ray.models import MODEL_NAMES
from vse_ray.relevance.sources import SOURCES
from vse_ray.train.config import TrainConfig
from vse_ray.tune.sweep_config import SweepConfig


def _options(command: str) -> dict:
    """``{parameter name: click parameter}`` of a command's options."""
    group = typer.main.get_command(app)
    return {p.name: p for p in group.commands[command].params}  # type: ignore[attr-defined]


def _option_defaults(command: str) -> dict[str, object]:
    """``{parameter name: default}`` of a command's options, as the command line sees them."""
    return {name: p.default for name, p in _options(command).items()}


def _defaults(config: type) -> dict[str, object]:
    return {f.name: f.default for f in dataclasses.fields(config) if f.default is not dataclasses.MISSING}


def test_precompute_options_default_to_the_config_fields():
    options = _option_defaults("precompute")
    renamed = {"vocab_file": "vocab", "relevance_sources": "relevance"}
    expected = {**_defaults(PrecomputeConfig), **_defaults(ExecutionOptions)}
    expected["splits"] = ",".join(expected["splits"])  # type: ignore[arg-type]
    shared = {name: value for name, value in expected.items() if renamed.get(name, name) in options}
    assert len(shared) == 32  # every config field with an option
    assert {name: options[renamed.get(name, name)] for name in shared} == shared


def test_sweep_options_default_to_the_config_fields():
    options = _option_defaults("sweep")
    expected = {name: value for name, value in _defaults(SweepConfig).items() if name in options}
    assert len(expected) == 16
    assert {name: options[name] for name in expected} == expected
    assert options["epochs"] == _defaults(TrainConfig)["epochs"]


def test_help_lists_every_model_loss_and_relevance_source():
    train, precompute = _options("train"), _options("precompute")
    assert train["model"].help.startswith(" | ".join(MODEL_NAMES))
    assert train["loss"].help == f"{' | '.join(LOSS_NAMES)}."
    assert all(name in precompute["relevance"].help for name in SOURCES)


def _flags(text: str) -> list[str]:
    """The ``--option`` names that start an option's row of a ``--help`` screen."""
    return re.findall(r"^│\s+(?:\*\s+)?(--[a-z-]+)", text, flags=re.M)


def _shown(name: str, default: object) -> str:
    """What ``--help`` shows after an option's help: ``[default: ...]``, none for an empty default."""
    if isinstance(default, bool):
        return f" [default: {'' if default else 'no-'}{name.replace('_', '-')}]"
    return f" [default: {default}]" if default not in (None, "") else ""


def test_train_offers_every_declared_field_once_with_its_help_and_default():
    from vse_ray.cli.train import OPTION_FIELDS

    result = CliRunner().invoke(app, ["train", "--help"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    flags = _flags(result.output)
    assert len(flags) == len(set(flags)) == 51  # once each: 40 fields, --data, 8 others, --debug, --help
    assert "--no-no-imgnorm" not in result.output  # a flag named for its negation has no negation of its own
    assert len(OPTION_FIELDS) == 40
    options = _options("train")
    screen = " ".join(result.output.replace("│", " ").split())  # a help wrapped onto two rows reads as one
    for name in OPTION_FIELDS:
        default = default_of(TrainConfig, name)
        assert f"--{name.replace('_', '-')}" in flags and options[name].default == default
        assert " ".join(help_of(TrainConfig, name).split()) + _shown(name, default) in screen, name


def test_train_overrides_are_the_options_given_on_the_command_line():
    from vse_ray.cli.train import cli_overrides

    command = typer.main.get_command(app).commands["train"]  # type: ignore[attr-defined]
    args = ["--data", "d", "--epochs", "2", "--param", "margin=0.3", "--no-imgnorm", "--run-name", "r"]
    ctx = command.make_context("train", [*args, "--cnn-weights", "none", "--finetune", "--set", "lr=1"])
    assert cli_overrides(ctx) == [
        "loss_params.margin=0.3",
        "normalize_image=false",
        "epochs=2",
        'run_name="r"',
        'cnn_weights="none"',
        "finetune=true",
    ]  # options left at their default (and --data, --set) are not overrides
    assert cli_overrides(command.make_context("train", ["--data", "d"])) == []


@pytest.mark.parametrize(
    ("command", "configs", "others"),
    [
        ("precompute", (PrecomputeConfig, ExecutionOptions), {"out", "recipe", "ray_address", "debug"}),
        ("sweep", (SweepConfig,), {"epochs", "set_", "wait", "debug"}),
    ],
)
def test_precompute_and_sweep_help_is_their_config_fields(command, configs, others):
    renamed = {"vocab_file": "vocab", "relevance_sources": "relevance"}
    options = _options(command)
    helps = {
        renamed.get(f.name, f.name): help_of(config, f.name)
        for config in configs
        for f in dataclasses.fields(config)
        if renamed.get(f.name, f.name) in options
    }
    assert set(options) - set(helps) == others  # every other option is a config field's
    assert {name: options[name].help for name in helps} == helps
