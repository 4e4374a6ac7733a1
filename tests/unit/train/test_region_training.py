"""Region features in training: read by row, every model × every loss one step, layout errors, end to end."""

from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pyarrow as pa
import pytest
import torch

from tests.support.local_reporter import LocalReporter
from tests.support.tiny_store import tiny_config
from tests.support.training_steps import assert_one_step_learns
from vse_ray.data.store.readers import load_captions
from vse_ray.data.store.region_rows import RegionRows
from vse_ray.data.store.split_data import load_image_store
from vse_ray.evaluation.evaluate import evaluate_run
from vse_ray.losses import LOSS_NAMES
from vse_ray.models import build_model
from vse_ray.train.epoch_loop import run_training
from vse_ray.train.model_input import check_data_for_model
from vse_ray.train.training_data import TrainingData


def test_region_rows_read_what_plain_pyarrow_reads(tiny_region_dir):
    folder = tiny_region_dir / "features" / "split=train"
    table = pa.ipc.open_file(str(folder / "part-00000000.arrow")).read_all()
    assert table.schema.field("feature").type == pa.list_(pa.list_(pa.float16(), 32), 5)
    expected = np.stack([np.stack(r) for r in table["feature"].to_pylist()]).astype(np.float32)
    rows = RegionRows(folder)
    assert rows.shape == (len(table), 5, 32) and rows.dtype == np.float16
    pick = np.array([7, 0, 95, 7, 31])
    np.testing.assert_array_equal(rows[pick], expected[pick])
    np.testing.assert_array_equal(rows[2:5], expected[2:5])
    np.testing.assert_array_equal(rows.image_ids, table["image_id"].to_numpy())
    store = load_image_store(str(tiny_region_dir), "train", raw=False)
    assert store.layout == "regions" and isinstance(store.values, RegionRows)


@pytest.fixture(scope="module")
def loaded(tiny_data_dir, tiny_region_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    return {  # loss "sam" loads the CIDEr references; every caption column is read for the other losses
        model: (
            TrainingData.load(tiny_config(folder, out, model=model, loss="sam"), "cider"),
            load_captions(str(folder), "train"),
        )
        for model, folder in (
            ("vsepp", tiny_data_dir),
            ("vse_inf", tiny_region_dir),
            ("vsrn", tiny_region_dir),
        )
    }


TINY_PARAMS = {"vsrn": {"caption_hidden": 8, "caption_word_dim": 8, "max_len": 8}}


@pytest.mark.parametrize("model_name", ["vsepp", "vse_inf", "vsrn"])
@pytest.mark.parametrize("loss_name", LOSS_NAMES)
def test_every_loss_trains_every_model(loaded, model_name, loss_name):
    data, captions = loaded[model_name]
    torch.manual_seed(0)
    model = build_model(model_name, **data.model_args, **data.model_inputs, **TINY_PARAMS.get(model_name, {}))
    assert_one_step_learns(model, loss_name, data, captions)


def test_layout_mismatch_is_named_before_anything_starts(tiny_data_dir, tiny_region_dir):
    with pytest.raises(
        ValueError, match=r"model 'vse_inf' needs region features .* holds pooled features .*\(32,\)"
    ):
        check_data_for_model(str(tiny_data_dir), "vse_inf", finetune=False)
    with pytest.raises(
        ValueError,
        match=r"model .vsepp. needs pooled .* holds region features .*\(5, 32\) \(set model_params.regions",
    ):
        check_data_for_model(str(tiny_region_dir), "vsepp", finetune=False)
    check_data_for_model(str(tiny_data_dir), "vsepp", finetune=True)
    check_data_for_model(str(tiny_region_dir), "vsepp", finetune=False, model_params={"regions": 5})
    with pytest.raises(ValueError, match=r"model 'vsepp' needs region features .* holds pooled features"):
        check_data_for_model(str(tiny_data_dir), "vsepp", finetune=False, model_params={"regions": 5})


def test_region_count_differing_between_splits(tiny_region_dir, tmp_path):
    from tests.support.tiny_store import write_tiny_store

    other = write_tiny_store(tmp_path / "r3", regions=3)
    mixed = tmp_path / "mixed"
    shutil.copytree(tiny_region_dir, mixed)
    shutil.rmtree(mixed / "features" / "split=val")
    shutil.copytree(other / "features" / "split=val", mixed / "features" / "split=val")
    cfg = tiny_config(mixed, tmp_path / "o", model="vse_inf")
    with pytest.raises(
        ValueError, match=r"split=val: rows of shape \(3, 32\) differ from .*split=train: \(5, 32\)"
    ):
        TrainingData.load(cfg, None)


def test_vse_inf_trains_and_evaluates_on_regions(tiny_region_dir, tmp_path):
    cfg = dataclasses.replace(tiny_config(tiny_region_dir, tmp_path / "o", model="vse_inf"), epochs=1)
    reporter = LocalReporter(tmp_path / "ckpt")
    run_training(cfg.checked(), reporter)
    assert reporter.history[0]["rsum"] > 0
    report = evaluate_run(str(reporter.checkpoints[0]), split="test", output_dir=str(tmp_path / "e"))
    assert report.metrics["rsum"] > 0
