"""The shipped `clip_graded_quick` study through `vse-ray study`, shrunk: the embedded data, the shipped tiny
towers, one seed and one epoch, its baseline, graded row and shuffled control (every loss takes a step on a
CLIP model in tests/unit/train/test_clip_training.py); each row trains and is tested, and the MLflow view
shows them."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

import pytest
import yaml
from mlflow import MlflowClient

from tests.support.cli import run_cli
from vse_ray.resources import resource_dir
from vse_ray.study import load_study
from vse_ray.study.summary import ROW_TAG
from vse_ray.tracking.views import SHARE_TAG_PREFIX, SHARE_URL_PARAM
from vse_ray.tune.mlflow_trials import PARENT_TAG

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_the_quick_clip_graded_study_runs_end_to_end_with_tiny_towers(ray_session, tmp_path, empty_cwd):
    shipped = yaml.safe_load((resource_dir("study") / "clip_graded_quick.yaml").read_text())
    assert shipped["train"]["model_params"] == {"arch": "clip-tiny.json"}  # the protocol: tiny towers
    assert [v.name for v in load_study("clip_graded_quick").variants()] == [
        "infonce",
        "infonce_multi",
        "infonce_graded",
        "ladder",
        "bcls",
        "infonce_graded-shuffled",
        "bcls-shuffled",
    ]
    small = {  # the baseline, a graded row and its shuffled control: the paths a CLIP row takes
        **shipped,
        "data": {"embedded": {"train_images": 48, "val_images": 16, "test_images": 16, "seed": 0}},
        "seeds": 1,
        "epochs": 1,
        "train": {**shipped["train"], "batch_size": 16, "lr_milestones": []},
        "losses": {name: shipped["losses"][name] for name in ("infonce", "infonce_graded")},
        "controls": {"shuffled": ["infonce_graded"]},
        "resources": {"cpus_per_trial": 1},
    }
    path = tmp_path / "clip_graded_quick.yaml"
    path.write_text(yaml.safe_dump(small, sort_keys=False))
    out = tmp_path / "out"
    result = run_cli(["study", str(path), "--output-dir", str(out)])
    assert result.exit_code == 0, result.output

    rows = [v.name for v in load_study(path).variants()]
    assert rows == ["infonce", "infonce_graded", "infonce_graded-shuffled"]
    client = MlflowClient(f"sqlite:///{out / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("study-clip-graded-quick")
    runs = client.search_runs([experiment.experiment_id])
    (parent,) = [run for run in runs if PARENT_TAG not in run.data.tags]
    children = [run for run in runs if run.data.tags.get(PARENT_TAG) == parent.info.run_id]
    assert sorted(run.info.run_name for run in children) == sorted(f"{row}-s0" for row in rows)  # no warm-up
    for run in children:
        assert run.data.params["model"] == "clip" and run.data.tags[ROW_TAG]
        assert "test/rsum" in run.data.metrics and "test/R_at_1_t2i" in run.data.metrics
    graded = next(run for run in children if run.info.run_name == "infonce_graded-s0")
    assert (graded.data.params["loss"], graded.data.params["shuffle_relevance"]) == ("infonce", "False")
    control = next(run for run in children if run.info.run_name == "infonce_graded-shuffled-s0")
    assert control.data.params["shuffle_relevance"] == "True"

    url = next(word for word in result.output.split() if SHARE_URL_PARAM in word)
    view = parse_qs(url.partition("?")[2])[SHARE_URL_PARAM][0]
    state = json.loads(experiment.tags[SHARE_TAG_PREFIX + view])
    shown = client.search_runs([experiment.experiment_id], state["searchFilter"])
    assert sorted(r.info.run_name for r in shown) == sorted(r.info.run_name for r in children)
