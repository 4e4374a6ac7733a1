"""TrainConfig: validation names the field, flat MLflow params, dict round trip, derived names."""

from __future__ import annotations

import dataclasses

import pytest

from vse_ray.train.config import TrainConfig


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("loss", "triplet"),
        ("epochs", 0),
        ("batch_size", 1),
        ("lr", -1.0),
        ("grad_clip", float("nan")),
        ("cpus_per_worker", 0),
        ("placement_strategy", "spread"),
        ("cs_ks", ()),
        ("max_failures", -2),
        ("loss_params", [1]),
        ("data_dir", ""),
        ("warmup_epochs", 31),
        ("warmup_epochs", -1),
        ("init_checkpoint", "/no/such/checkpoint"),
        ("optimizer", "sgd"),
        ("negatives", "none"),
        ("warmup_loss", "triplet"),
        ("warmup_params", {"margn": 0.2}),
        ("weight_decay", -1e-4),
        ("lr_groups", {"text_encoder.": -1}),
        ("lr_milestones", (10, 5)),
        ("lr_factor", 0.0),
        ("caption_mask", 1.5),
        ("val_every", -1),
        ("val_images", 1.5),
    ],
)
def test_validate_names_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(TrainConfig(data_dir="d"), **{field: value}).validate()


def test_finetune_checks_the_cnn_name():
    with pytest.raises(ValueError, match="cnn"):
        TrainConfig(data_dir="d", finetune=True, cnn="alexnet").validate()


def test_flat_dict_is_scalar_and_flattens_loss_params():
    cfg = TrainConfig(data_dir="d", loss="ladder", loss_params={"margins": (0.2, 0.01), "beta": 1.0})
    flat = cfg.to_flat_dict()
    assert (
        flat["loss.margins"] == "0.2,0.01" and flat["loss.beta"] == 1.0 and flat["cs_ks"] == "5,10,100,1000"
    )
    assert all(isinstance(v, str | int | float | bool) for v in flat.values())
    assert not any("@" in k for k in flat)
    assert not any(name.startswith("fail") for name in TrainConfig.__dataclass_fields__)  # no test hooks


def test_dict_round_trip_and_unknown_key():
    cfg = TrainConfig(data_dir="d", loss="sam", loss_params={"tau": 0.1}, cs_ks=(3, 7))
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="bogus"):
        TrainConfig.from_dict({**cfg.to_dict(), "bogus": 1})


def test_resolved_fills_stable_names(tmp_path):
    cfg = TrainConfig(data_dir=str(tmp_path / "coco"), loss="bcls", seed=3, output_dir=str(tmp_path / "o"))
    r = cfg.resolved()
    assert r.run_name == "coco-bcls-s3" and r.experiment == "coco"
    assert r.storage_path == str(tmp_path / "o" / "ray_results")
    assert r.tracking_uri == f"sqlite:///{tmp_path / 'o' / 'mlflow.db'}"
    assert cfg.resolved() == r


def test_the_default_trains_in_process_on_one_cpu_machine_and_on_ray_train_otherwise(tmp_path, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))  # Ray's temporary folder, no `ray start` in it yet
    cfg = TrainConfig(data_dir="d")
    assert cfg.num_workers is None and cfg.workers() == 0  # one machine's CPU: in this process
    assert cfg.checked().placed().config.num_workers == 0
    assert dataclasses.replace(cfg, use_gpu=True).workers() == 1
    assert cfg.workers(ray_address="10.0.0.1:6379") == 1  # --ray-address
    assert dataclasses.replace(cfg, num_workers=2).workers() == 2  # asked for: kept
    assert dataclasses.replace(cfg, num_workers=1).workers("10.0.0.1:6379") == 1
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")  # what `ray job submit` sets for its entrypoint
    assert cfg.workers() == 1
    monkeypatch.delenv("RAY_ADDRESS")
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "ray_current_cluster").write_text("10.0.0.1:6379\n")  # a `ray start` to join
    assert cfg.workers() == 1 and dataclasses.replace(cfg, num_workers=0).workers() == 0


def test_a_trainer_built_without_num_workers_has_one_ray_train_worker(tmp_path):
    from vse_ray.train.trainer import build_trainer

    cfg = TrainConfig(data_dir=str(tmp_path / "d"), output_dir=str(tmp_path / "o"))  # a sweep's ddp trial
    assert build_trainer(cfg.checked()).scaling_config.num_workers == 1
    with pytest.raises(ValueError, match="num_workers 0 trains in the command's own process"):
        build_trainer(dataclasses.replace(cfg, num_workers=0).checked())


def test_field_roles_are_declared_once_and_derive_every_list():
    from vse_ray.study.spec import EVALUATION_FIELDS, STUDY_FIELDS
    from vse_ray.train.config import ROLES, fields_where
    from vse_ray.train.epoch_loop import WARMUP_SHARED_FIELDS
    from vse_ray.tune.space_checks import tunable_fields

    every = [f.name for f in dataclasses.fields(TrainConfig)]
    assert all(f.metadata["role"] in ROLES and f.metadata["help"] for f in dataclasses.fields(TrainConfig))
    assert sorted(fields_where("hyper") + fields_where("run") + fields_where("evaluation")) == sorted(every)
    assert tunable_fields() == fields_where("hyper") and "lr" in tunable_fields()
    assert "output_dir" not in tunable_fields() and "loss" not in tunable_fields()
    assert EVALUATION_FIELDS == ("val_every", "val_images", "eval_ks", "cs_ks", "ncs_ks", "eval_batch_size")
    assert set(STUDY_FIELDS) >= {"loss", "loss_params", "epochs", "seed", "init_checkpoint"}
    assert "optimizer" in WARMUP_SHARED_FIELDS and "loss" not in WARMUP_SHARED_FIELDS


def test_overrides_parse_yaml_and_dotted_keys_of_dict_fields():
    from vse_ray.train.config import merge_overrides, parse_overrides

    assert parse_overrides(["epochs=2", "loss_params.margin=0.1", "lr_groups.text_encoder.bert.=0.1"]) == {
        "epochs": 2,
        "loss_params": {"margin": 0.1},
        "lr_groups": {"text_encoder.bert.": 0.1},
    }
    merged = merge_overrides({"loss_params": {"margin": 0.2, "lam": 1}}, ["loss_params.margin=0.3"])
    assert merged == {"loss_params": {"margin": 0.3, "lam": 1}}
    with pytest.raises(ValueError, match="only .* take dotted keys"):
        parse_overrides(["epochs.x=1"])
    with pytest.raises(ValueError, match="expected KEY=VALUE"):
        parse_overrides(["epochs"])


def test_cnn_weights_none_means_random_init():
    assert TrainConfig(data_dir="d", cnn_weights="none").cnn_weights is None
