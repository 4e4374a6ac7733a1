"""Recipes: every shipped recipe builds and trains one step on tiny data; bad keys fail before any start."""

from __future__ import annotations

import math

import pytest
import torch
from typer.testing import CliRunner

from tests.support.local_reporter import LocalReporter
from vse_ray.cli.main import app
from vse_ray.evaluation.evaluate import evaluate_run
from vse_ray.losses import make_loss
from vse_ray.models import build_model, model_class
from vse_ray.train.batches import BatchBuilder, TableBatches
from vse_ray.train.epoch_loop import run_training, train_step
from vse_ray.train.recipe import load_recipe, recipe_names
from vse_ray.train.training_data import TrainingData

TINY = ["batch_size=16", "embed_dim=32", "word_dim=16", "epochs=1", "cs_ks=[5, 10]", "ncs_ks=[1, 5]"]
TINY_MODEL = {  # the tiny store has 5 regions and 10 concept words
    "sgraf": ["model_params.n_regions=5", "model_params.sim_dim=8"],
    "cvse": ["model_params.n_regions=5", "model_params.n_concepts=6", "model_params.concept_dim=8"],
    "vsrn": ["model_params.caption_hidden=8", "model_params.caption_word_dim=8"],
}


def test_the_papers_rows_are_there():
    assert {
        "vsepp_f30k_resnet152",
        "cvsepp_f30k_vgg19",
        "cvsepp_auto_f30k_vgg19",
        "vse_inf_lseh_f30k",
        "vse_inf_bigru_f30k",
        "vse_inf_bert_f30k",
        "scan_bcls_f30k",
        "sgraf_sgr_bcls_f30k",
        "sgraf_saf_bcls_f30k",
        "sgr_sam_f30k",
        "saf_sam_f30k",
        "sgraf_saf_lseh_f30k",
        "cvse_sam_f30k",
        "cvse_sam_f30k_10pct",
        "cvse_sam_f30k_25pct",
        "vsrn_lseh_f30k",
        "vsrn_sam_f30k",
    } <= set(recipe_names())


@pytest.mark.parametrize("name", recipe_names())
def test_every_recipe_builds_and_trains_one_step(
    name, tiny_data_dir, tiny_region_dir, tiny_bert_dir, tmp_path
):
    paper = load_recipe(name, "<data>")
    assert paper.reports or paper.paper["no_reported_row"]  # a row the paper does not print says why
    assert paper.paper["file"].endswith(".md")
    assert paper.config.batch_size == (84 if name == "sgraf_saf_lseh_f30k" else 128)  # SGRAF_LSEH/opts.py: 84
    regions = model_class(paper.config.model).feature_layout == "regions"
    folder = tiny_region_dir if regions else tiny_data_dir
    tiny = TINY + TINY_MODEL.get(paper.config.model, [])
    if paper.config.finetune:  # a tiny CNN in the loop instead of the paper's ImageNet one
        tiny += ["cnn=tiny", "cnn_weights=none", "model_params.crop=24"]
    if paper.config.model_params.get("text_encoder") == "bert":
        tiny.append(f"model_params.bert_path={tiny_bert_dir}")
    cfg = load_recipe(name, str(folder), tiny, output_dir=str(tmp_path)).config
    assert (cfg.model, cfg.loss, cfg.loss_params) == (
        paper.config.model,
        paper.config.loss,
        paper.config.loss_params,
    )
    loss = make_loss(cfg.loss, **cfg.loss_params)
    data = TrainingData.load(cfg, loss.relevance_source)
    torch.manual_seed(0)
    model = build_model(cfg.model, **data.model_args, **data.model_inputs)
    builder = BatchBuilder(data.train_images, loss.relevance_source, data.references, model.caption_ids)
    rows = next(iter(TableBatches(data.train_captions, 16, 0).epoch_batches(1)))  # the recipe's images
    value = train_step(
        model, loss, torch.optim.Adam(model.parameters(), lr=cfg.lr), builder(rows), cfg.grad_clip
    )
    assert torch.isfinite(value)


@pytest.mark.usefixtures("one_torch_thread")
def test_a_vsrn_recipe_trains_one_epoch_on_regions(tiny_region_dir, tmp_path):
    """VSRN + LSEH as its recipe sets it (caption decoder and its loss included): one epoch, then the blocked
    evaluation of its checkpoint."""
    tiny = TINY + TINY_MODEL["vsrn"] + ["model_params.max_len=10"]
    cfg = load_recipe("vsrn_lseh_f30k", str(tiny_region_dir), tiny, output_dir=str(tmp_path)).config
    reporter = LocalReporter(tmp_path / "ckpt")
    run_training(cfg, reporter)
    assert reporter.history[0]["rsum"] > 0 and math.isfinite(reporter.history[0]["train_loss"])
    report = evaluate_run(str(reporter.checkpoints[0]), split="test", output_dir=str(tmp_path / "e"))
    assert report.metrics["rsum"] > 0


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        ("train: {loss: vsepp, epohcs: 3}", r"bad\.yaml: unknown TrainConfig field\(s\): \['epohcs'\]"),
        ("paper: {}\nnotes: x", r"bad\.yaml: top-level key\(s\) \['notes'\] unknown"),
        ("precompute: {cnn_name: vgg19}", r"bad\.yaml precompute: key\(s\) \['cnn_name'\] unknown"),
        (
            "train: {loss: lseh, loss_params: {lambda: 0.1}}",
            r"bad\.yaml: loss_params of 'lseh': unknown hyper-parameter\(s\) \['lambda'\]",
        ),
        (
            "train: {model: vse_inf, model_params: {drop: 0.1}}",
            r"model_params \['drop'\] unknown; allowed: \['num_layers'",
        ),
        (
            "train: {loss: lseh, loss_params: {margin: -1}}",
            r"bad\.yaml: loss_params of 'lseh': margin must be >= 0",
        ),
        (
            "train: {model: scan, model_params: {module: sgr}}",
            r"model_params \['module'\] unknown; allowed: \['direction'",
        ),
        (
            "train: {model: sgraf, model_params: {module: sga}}",
            r"bad\.yaml: model 'sgraf': module: SGRAF has the modules \('sgr', 'saf'\), got 'sga'",
        ),
    ],
)
def test_bad_recipe_names_file_and_key(tmp_path, yaml_text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml_text)
    with pytest.raises(ValueError, match=message):
        load_recipe(str(path), "<data>")


def test_overrides_and_unknown_recipe():
    cfg = load_recipe(
        "vse_inf_lseh_f30k", "<data>", ["loss_params.lam=0.05", "model_params.region_drop=0"]
    ).config
    assert cfg.loss_params == {"margin": 0.185, "lam": 0.05, "factor": "row_max", "same_image": "zero_margin"}
    assert cfg.model_params == {"text_encoder": "bert", "region_drop": 0}
    with pytest.raises(ValueError, match=r"'vse_inf_lseh': no such file or shipped recipe; shipped: \["):
        load_recipe("vse_inf_lseh", "<data>")


def _cli_error(args: list[str]) -> str:
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0
    return " ".join(result.output.replace("│", " ").split())


def test_cli_refuses_a_bad_recipe_key_before_starting(tiny_data_dir, tmp_path):
    args = ["train", "--recipe", "vsepp_f30k_resnet152", "--data", str(tiny_data_dir), "--set", "epohcs=1"]
    assert "unknown TrainConfig field(s): ['epohcs']" in _cli_error([*args, "--output-dir", str(tmp_path)])
    assert not (tmp_path / "mlflow.db").exists()
    args = ["train", "--model", "vse_inf", "--data", str(tiny_data_dir), "--output-dir", str(tmp_path)]
    assert "model 'vse_inf' needs region features" in _cli_error(args)


def test_cli_refuses_a_similarity_model_on_pooled_features(tiny_data_dir, tmp_path):
    args = ["train", "--model", "sgraf", "--data", str(tiny_data_dir), "--output-dir", str(tmp_path)]
    assert "model 'sgraf' needs region features (R, D), but" in _cli_error(args)
    assert not (tmp_path / "mlflow.db").exists()


def test_cli_refuses_data_precomputed_otherwise_than_the_recipe(tiny_region_dir, tmp_path):
    args = [
        "train",
        "--recipe",
        "sgr_sam_f30k",
        "--data",
        str(tiny_region_dir),
        "--output-dir",
        str(tmp_path),
    ]
    message = _cli_error(args)
    assert "sgr_sam_f30k.yaml: precompute.dataset is 'precomp' but" in message
    assert "precompute --recipe sgr_sam_f30k" in message and not (tmp_path / "mlflow.db").exists()


def test_recipes_list_their_deviations_and_runs_carry_them():
    recipe = load_recipe("sgr_sam_f30k", "<data>")
    assert recipe.deviations and recipe.config.deviations == recipe.deviations
    assert recipe.config.to_flat_dict()["deviations"] == len(recipe.deviations)


def test_precompute_takes_the_recipe_block_under_the_given_options():
    from vse_ray.cli.precompute import with_recipe
    from vse_ray.data.precompute.config import PrecomputeConfig

    class _Ctx:
        params = {"svd_dim": 128, "dataset": "precomp"}

        def get_parameter_source(self, name):
            return type("S", (), {"name": "COMMANDLINE" if name == "svd_dim" else "DEFAULT"})()

    config = with_recipe(PrecomputeConfig(dataset="precomp", svd_dim=128), "sgraf_saf_lseh_f30k", _Ctx())
    assert config.svd_dim == 128 and config.feature_dtype == "float16"
    assert config.relevance_sources == ("sbert", "cider", "svd")
