"""Evaluating a checkpoint: evaluate_all on explicitly computed similarities, JSON report."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.support.local_reporter import LocalReporter
from tests.support.tiny_store import tiny_config
from vse_ray.checkpoint_files import load_checkpoint
from vse_ray.data.store.split_data import load_split
from vse_ray.evaluation.evaluate import CHECKPOINT_EXPERIMENT, evaluate_run
from vse_ray.evaluation.plots import k_series
from vse_ray.metrics import evaluate_all
from vse_ray.models import rebuild_model
from vse_ray.train.epoch_loop import run_training
from vse_ray.train.paper_rows import paper_numbers
from vse_ray.tune.runs_table import fetch_runs, runs_table


@pytest.fixture(scope="module")
def checkpoint(tiny_data_dir, tmp_path_factory):
    """One epoch on the tiny folder, trained once for the module's tests (they only read it)."""
    folder = tmp_path_factory.mktemp("evaluate")
    reporter = LocalReporter(folder / "ckpt")
    run_training(tiny_config(tiny_data_dir, folder / "out", epochs=1).checked(), reporter)
    return reporter.checkpoints[0]


def test_report_matches_explicit_similarities(checkpoint, tiny_data_dir, tmp_path):
    report = evaluate_run(str(checkpoint), split="test", output_dir=str(tmp_path / "o"))
    state = load_checkpoint(checkpoint)
    model = rebuild_model(state)
    split = load_split(str(tiny_data_dir), "test", raw=False)
    with torch.no_grad():
        img = model.encode_images(torch.from_numpy(split.images.values))
        txt = torch.cat(
            [model.encode_captions(torch.tensor(t)[None], torch.tensor([len(t)])) for t in split.tokens]
        )
    sims = (img @ txt.T).numpy()
    expected = evaluate_all(sims, split.img_of_cap, split.relevance, cs_ks=(5, 10), ncs_ks=(1, 5))
    assert report.metrics.keys() == expected.keys()
    assert all(np.isclose(report.metrics[k], expected[k], atol=1e-4, equal_nan=True) for k in expected)
    saved = json.loads(report.path.read_text())
    assert saved["split"] == "test" and saved["protocol"] == "full" and saved["run_id"] is None


def test_coco_protocols_need_the_5k_split(checkpoint, tmp_path):
    with pytest.raises(ValueError, match="coco1k"):
        evaluate_run(str(checkpoint), protocol_options={"images": "coco1k"}, output_dir=str(tmp_path))
    with pytest.raises(ValueError, match="protocol"):
        evaluate_run(str(checkpoint), protocol_options={"images": "flickr"}, output_dir=str(tmp_path))


def test_unknown_run(tmp_path, mlflow_uri):
    with pytest.raises(ValueError, match="neither a checkpoint path nor a run id"):
        evaluate_run("no-such-run", tracking_uri=mlflow_uri, output_dir=str(tmp_path))


def test_k_series_groups_directions_and_variants():
    metrics = {"NCS_at_10_i2t": 0.3, "NCS_at_1_i2t": 0.1, "NCS_noGT_at_5_t2i": 0.2, "CS_at_5_i2t": 9.0}
    series = k_series(metrics, "NCS")
    assert set(series) == {"i2t"} and series["i2t"][0].tolist() == [1, 10]
    assert series["i2t"][1].tolist() == [0.1, 0.3]


@pytest.mark.parametrize("store", ["tiny_data_dir", "tiny_region_dir"])
def test_the_first_images_of_a_split_read_only_their_rows(store, request):
    """Validation on the first n dev images: the same images, captions and relevance as the whole split
    cut down to them, without reading the other images' rows."""
    folder = str(request.getfixturevalue(store))
    whole, part = load_split(folder, "val", raw=False), load_split(folder, "val", raw=False, images=3)
    ids = whole.images.image_ids[:3]
    keep = np.flatnonzero(np.isin(whole.caption_image_ids, ids))
    np.testing.assert_array_equal(part.images.image_ids, ids)
    np.testing.assert_array_equal(part.images.tensor(ids).numpy(), whole.images.tensor(ids).numpy())
    np.testing.assert_array_equal(part.caption_ids, whole.caption_ids[keep])
    assert part.texts == [whole.texts[k] for k in keep] and len(keep) == 15
    assert all(np.array_equal(a, whole.tokens[k]) for a, k in zip(part.tokens, keep, strict=True))
    assert sorted(part.relevance) == sorted(whole.relevance) != []
    for name, matrix in whole.relevance.items():
        np.testing.assert_array_equal(part.relevance[name], matrix[:3][:, keep])
    assert load_split(folder, "val", raw=False, images=10_000).caption_ids.shape == whole.caption_ids.shape


def test_a_run_scored_as_its_paper_shows_the_papers_numbers_beside(checkpoint, tmp_path, mlflow_uri):
    """`--paper` scores by the recipe's protocol; the report, the MLflow run (``paper/…``) and the compare
    table carry the paper's number beside the run's, with the difference."""
    recipe = tmp_path / "row.yaml"
    recipe.write_text(
        "paper: {file: x.md, table: 1, row: r, cs_captions: first}\n"
        "reports: {R_at_1_i2t: 50.0, CS_at_5_t2i: 0.25, mAP_t2i: 0.5}\n"
    )
    report = evaluate_run(
        str(checkpoint),
        tracking_uri=mlflow_uri,
        output_dir=str(tmp_path / "o"),
        recipe=str(recipe),
        paper_of=paper_numbers,
        as_paper=True,
    )
    assert report.protocol == "full-cs_first" and "CS@K over each image's first caption" in report.scoring
    numbers = report.paper["numbers"]
    assert sorted(numbers) == ["CS_at_5_t2i", "R_at_1_i2t"]  # a key the evaluation lacks is left out
    assert numbers["R_at_1_i2t"]["difference"] == pytest.approx(report.metrics["R_at_1_i2t"] - 50.0)
    runs = fetch_runs(mlflow_uri, CHECKPOINT_EXPERIMENT)
    assert runs[0].data.metrics["paper/test_full-cs_first/CS_at_5_t2i"] == 0.25
    table = runs_table(runs, "test_full-cs_first/R_at_1_i2t", width=None)
    assert "paper R@1 i2t test full-cs first" in table and "Δ CS@5 t2i test full-cs first" in table
    assert f"{report.metrics['R_at_1_i2t'] - 50.0:.1f}" in table
