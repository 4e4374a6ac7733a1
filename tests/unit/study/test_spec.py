"""Study files: parsed, expanded into runs, and rejected with one line naming the file and key."""

from __future__ import annotations

import pytest
import yaml

from vse_ray.demo.run import demo_study
from vse_ray.resources import resource_dir
from vse_ray.study import load_study, parse_study

VALID = """
name: demo-like
baseline: vsepp
losses:
  vsepp:
  bcls: {gamma: 50}
  sam: {}
  ladder: {thresholds: [0.6]}
controls:
  shuffled: [bcls]
  ablations: [bcls, sam, ladder]
"""


def test_variants_and_run_configs():
    spec = parse_study(VALID, "s.yaml")
    names = [v.name for v in spec.variants()]
    assert names == [
        "vsepp",
        "bcls",
        "sam",
        "ladder",
        "bcls-shuffled",
        "bcls-no-kendall",
        "sam-no-triplet",
        "ladder-eq7",
    ]
    assert spec.seeds == 3 and spec.embedded["test_images"] == 1000
    cfg = spec.run_config("d", spec.variants()[5], seed=2, train_images=0)
    assert (cfg.loss, cfg.loss_params, cfg.epochs, cfg.seed) == (
        "bcls",
        {"gamma": 50, "kendall": "none"},
        7,
        2,
    )
    assert spec.run_config("d", spec.variants()[4], 0, 0).shuffle_relevance


def test_warmup_steps_give_equal_updates_at_every_train_size():
    spec = parse_study(VALID + "warmup_steps: 468\ntrain: {batch_size: 128, lr_update: 6}\n", "s.yaml")
    # 5 captions per image: 400 images -> 15 steps per epoch, 4,000 -> 156 (a partial batch is dropped)
    assert [spec.warmup_epochs_at(5 * n) for n in (400, 1000, 4000)] == [32, 12, 3]
    cfg = spec.run_config("d", spec.variants()[0], 0, 400, warmup_epochs=32)
    assert (cfg.epochs, cfg.warmup_epochs, cfg.lr_milestones) == (36, 32, (36,))
    with pytest.raises(ValueError, match="^s.yaml: warmup_steps: give the warm-up in steps or in epochs"):
        parse_study(VALID + "warmup_steps: 100\nwarmup_epochs: 2\n", "s.yaml")


def test_a_decay_right_after_no_warm_up_starts_the_run_at_the_decayed_rate():
    """The demo decays the rate right after its warm-up (lr_milestones [0]); ``--warmup-epochs 0`` (none)
    trains every loss at the decayed rate from its first epoch, with no decay inside the run."""
    spec = demo_study(None, None, warmup_epochs=0)
    config = spec.run_config("d", spec.variants()[0], 0, 0)
    lr = demo_study(None, None).train["lr"]
    assert config.warmup_epochs == 0 and config.epochs == spec.epochs
    assert config.lr == pytest.approx(lr * 0.1)
    assert config.lr_milestones == (spec.epochs,)
    warm = demo_study(None, None, warmup_epochs=2).run_config("d", spec.variants()[0], 0, 0)
    assert warm.lr == lr and warm.lr_milestones == (2,)


def test_the_learning_rate_schedule_counts_epochs_after_the_warm_up():
    spec = parse_study(VALID + "epochs: 12\ntrain: {lr_update: 6}\n", "s.yaml")
    assert [spec.lr_milestones(w) for w in (0, 3)] == [(6, 12), (9, 15)]
    spec = parse_study(VALID + "epochs: 3\ntrain: {lr_milestones: [0, 2]}\n", "s.yaml")
    assert spec.run_config("d", spec.variants()[0], 0, 0, warmup_epochs=2).lr_milestones == (2, 4)
    spec = parse_study(VALID + "epochs: 3\ntrain: {lr_update: 10}\n", "s.yaml")
    assert spec.lr_milestones(2) == (5,)  # no decay inside the run


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("seedz: 2", "s.yaml: seedz: unknown key"),
        ("seeds: 0", "s.yaml: seeds: expected an integer >= 1, got 0"),
        ("epochs: two", "s.yaml: epochs: expected an integer >= 1"),
        ("baseline: vse0", "s.yaml: baseline: 'vse0' is not one of losses"),
        ("controls: {shuffled: [sam]}", "s.yaml: controls.shuffled: 'sam' uses relevance 'cider'"),
        ("controls: {ablations: [vsepp]}", "s.yaml: controls.ablations: 'vsepp' declares no ablation"),
        ("controls: {placebo: [bcls]}", "s.yaml: controls.placebo: unknown control"),
        ("controls: {shuffled: [lseh]}", "s.yaml: controls.shuffled: 'lseh' is not one of losses"),
        ("train: {lr: -1}", "s.yaml: losses.vsepp: lr: must be a positive finite number"),
        ("train: {epochs: 3}", "s.yaml: train.epochs: not a TrainConfig field a study sets"),
        ("train_images: [100, 5000]", "s.yaml: train_images: 5000 exceeds data.embedded.train_images 2000"),
        ("data: {embedded: {test_images: 0}}", "s.yaml: data.embedded.test_images: expected an integer >= 1"),
        ("data: {data_dir: x, embedded: {}}", "s.yaml: data: expected"),
        ("resources: {gpus: 1}", "s.yaml: resources.gpus: unknown"),
        ("warmup_steps: -5", "s.yaml: warmup_steps: expected an integer >= 0"),
        ("train: {lr_milestones: [-1]}", "s.yaml: train.lr_milestones: expected epochs >= 0"),
    ],
)
def test_errors_name_file_and_key(edit, message):
    base = VALID.replace("controls:\n  shuffled: [bcls]\n  ablations: [bcls, sam, ladder]\n", "")
    with pytest.raises(ValueError) as err:
        parse_study(base + edit + "\n", "s.yaml")
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_bad_hyper_parameter_and_files():
    with pytest.raises(ValueError, match=r"^s.yaml: losses.bcls: .*gamma"):
        parse_study(VALID.replace("gamma: 50", "gamma: 0"), "s.yaml")
    with pytest.raises(ValueError, match="s.yaml: not valid YAML"):
        parse_study("name: [", "s.yaml")
    with pytest.raises(ValueError, match="s.yaml: expected a mapping at the top level"):
        parse_study("- 1", "s.yaml")
    shipped = r"'nope.yaml': no such file or shipped study; shipped: \['clip_graded', 'clip_graded_quick'"
    with pytest.raises(ValueError, match=shipped):
        load_study("nope.yaml")


def test_shipped_study_by_name():
    assert load_study("ladder_bcls_cs").source == str(resource_dir("study") / "ladder_bcls_cs.yaml")


@pytest.mark.parametrize("path", sorted(resource_dir("study").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_studies_are_valid(path):
    required = yaml.safe_load(path.read_text()).get("requires") or {}
    sets = [f"{key}=given/{key}" for key in required]  # what the command line gives (checked before Ray)
    assert load_study(path, sets=sets).name == path.stem.replace("_", "-")


def test_sets_write_dotted_keys_and_a_required_key_missing_is_one_line(tmp_path):
    path = tmp_path / "s.yaml"
    required = "requires:\n  data.data_dir: a precompute folder\n  train.model_params.arch: a tower\n"
    path.write_text(VALID + required)
    sets = ["data.data_dir=d/x", "train.model_params.arch=clip-tiny.json", "train.lr=2.0e-4", "seeds=2"]
    spec = load_study(path, sets=sets)
    assert (spec.data, spec.train, spec.seeds, spec.embedded) == (
        {"data_dir": "d/x"},
        {"model_params": {"arch": "clip-tiny.json"}, "lr": 2.0e-4},
        2,
        None,
    )
    key = "train.model_params.arch"
    message = f"{path}: {key}: required: a tower; give it with --set {key}=..."
    with pytest.raises(ValueError) as err:
        load_study(path, sets=sets[:1])
    assert str(err.value) == message
    with pytest.raises(ValueError, match=r"^--set 'train\.lr': expected KEY=VALUE"):
        load_study(path, sets=["train.lr"])
    with pytest.raises(ValueError, match=r"^--set 'losses.bcls.gamma.x=1': losses.bcls.gamma is not a map"):
        load_study(path, sets=[*sets, "losses.bcls.gamma.x=1"])


def test_a_study_file_is_validated_once_with_its_seeds_override(monkeypatch):
    from vse_ray.study.spec import StudySpec

    calls = []
    validate = StudySpec.validate
    monkeypatch.setattr(StudySpec, "validate", lambda self: calls.append(1) or validate(self))
    assert load_study("ladder_bcls_cs", seeds=2).seeds == 2 and len(calls) == 1
    with pytest.raises(ValueError, match=r"ladder_bcls_cs.yaml: seeds: expected an integer >= 1, got 0"):
        load_study("ladder_bcls_cs", seeds=0)


def test_rows_of_one_family_are_named_by_their_keys():
    """`family:` lets one loss family give several rows; controls name rows, runs train the family."""
    spec = parse_study(
        """
name: one-family
baseline: infonce
losses:
  infonce: {}
  infonce_graded: {family: infonce, targets: graded, soft_weight: 0.3}
controls: {shuffled: [infonce_graded]}
""",
        "s.yaml",
    )
    assert [v.name for v in spec.variants()] == ["infonce", "infonce_graded", "infonce_graded-shuffled"]
    cfg = spec.run_config("d", spec.variants()[2], 0, 0)
    assert (cfg.loss, cfg.loss_params, cfg.shuffle_relevance) == (
        "infonce",
        {"targets": "graded", "soft_weight": 0.3},
        True,
    )
    with pytest.raises(ValueError, match=r"^s.yaml: losses.x: unknown loss family 'nce'; expected one of"):
        parse_study("name: a\nbaseline: x\nlosses: {x: {family: nce}}\n", "s.yaml")
    with pytest.raises(ValueError, match=r"^s.yaml: losses.x: .*soft_weight"):
        parse_study("name: a\nbaseline: x\nlosses: {x: {family: infonce, soft_weight: 2}}\n", "s.yaml")
