"""Chunked query × gallery scoring of similarity models: one matrix for any block, too big ones refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.support.local_reporter import LocalReporter
from tests.support.tiny_store import tiny_config
from tests.support.xattn_inputs import token_batch
from vse_ray.data.store.split_data import load_split
from vse_ray.evaluation.embed import ensemble_similarities, split_similarities
from vse_ray.evaluation.evaluate import evaluate_run
from vse_ray.evaluation.pair_blocks import check_block_fits, free_memory_bytes, score_matrix
from vse_ray.metrics import evaluate_all
from vse_ray.models.scan import SCANModel
from vse_ray.models.sgraf import SGRAFModel
from vse_ray.train.epoch_loop import run_training

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _encoded(model, n_img=7, n_txt=11):
    torch.manual_seed(0)
    tokens, lengths = token_batch(n_txt, 30)
    with torch.no_grad():
        return model.encode_images(torch.randn(n_img, 3, 8)), model.encode_captions(tokens, lengths), lengths


@pytest.mark.parametrize("model_cls", [SCANModel, SGRAFModel])
def test_blocks_give_the_whole_matrix(model_cls):
    extra = {"n_regions": 3, "sim_dim": 4} if model_cls is SGRAFModel else {}
    model = model_cls(vocab_size=30, feature_dim=8, word_dim=5, embed_dim=6, **extra).eval()
    img, txt, lengths = _encoded(model)
    with torch.no_grad():
        whole = model.score(img, txt, lengths).numpy()
    for block in [(1, 1), (3, 4), (7, 11), (100, 100)]:
        got = score_matrix(model, img, txt, lengths, block=block, progress=False)
        assert got.shape == (7, 11) and abs(got - whole).max() < 1e-6
    metrics = evaluate_all(got[:, :7], torch.arange(7).numpy(), eval_ks=(1, 5))
    assert {"R_at_1_i2t", "R_at_1_t2i", "rsum"} <= metrics.keys()


def test_block_that_cannot_fit_is_refused_with_what_would():
    model = SGRAFModel(vocab_size=30, feature_dim=2048)  # the paper's sizes: E = 1024, S = 256, R = 36
    free = free_memory_bytes(torch.device("cpu"))
    with pytest.raises(ValueError, match=r"block 5000 x 25000 needs about .* GiB .* blocks of up to"):
        check_block_fits(model, (5000, 25000), 36, 12, 4, free)
    check_block_fits(model, (8, 16), 36, 12, 4, free)
    with pytest.raises(ValueError, match="images >= 1"):
        check_block_fits(model, (0, 16), 36, 12, 4, free)


def test_ensemble_is_the_mean_of_the_members_matrices(tiny_region_dir):
    split = load_split(str(tiny_region_dir), "val", raw=False)
    torch.manual_seed(0)
    models = [
        SGRAFModel(vocab_size=60, feature_dim=32, word_dim=5, embed_dim=6, n_regions=5, sim_dim=4, module=m)
        for m in ("sgr", "saf")
    ]
    cpu = torch.device("cpu")
    members = [split_similarities(m, split, 16, cpu) for m in models]
    ensemble = ensemble_similarities(models, split, 16, cpu, block=(4, 8))
    assert ensemble.shape == (len(split.images.image_ids), len(split.tokens))
    np.testing.assert_allclose(ensemble, (members[0] + members[1]) / 2, rtol=1e-6, atol=1e-7)
    assert not np.allclose(members[0], members[1])


def test_sgraf_trains_validates_and_evaluates_through_blocks(tiny_region_dir, tmp_path):
    """End to end: training's validation and `evaluate_run` (with an ensemble) score through the blocks."""
    params = {"module": "saf", "n_regions": 5, "sim_dim": 8}
    cfg = tiny_config(tiny_region_dir, tmp_path / "o", model="sgraf", epochs=1, model_params=params)
    reporter = LocalReporter(tmp_path / "ckpt")
    run_training(cfg.checked(), reporter)
    assert reporter.history[0]["rsum"] > 0
    run, out = str(reporter.checkpoints[0]), str(tmp_path / "e")
    twice = evaluate_run(run, split="val", output_dir=out, eval_block="7x9", ensemble=[run])
    assert twice.path.name.endswith("_ensemble2.json")
    assert twice.metrics["rsum"] == pytest.approx(reporter.history[0]["rsum"])  # a model averaged with itself
    with pytest.raises(ValueError, match="eval block: expected IMAGESxCAPTIONS"):
        evaluate_run(run, eval_block="7by9", output_dir=out)
