"""Options read their configs and registries: defaults declared once, help listing every name."""

from __future__ import annotations

import dataclasses

import typer

from vse_ray.cli.main import app
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
    assert len(shared) == 31  # every config field with an option
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
