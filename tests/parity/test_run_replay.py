"""Whole-run parity: a recorded run of the official VSE∞ code, replayed through vse_ray's training engine.

The official run (3 epochs: a VSE0 warm-up epoch, then VSE++, validating after each) drew its initial weights,
batch order and region-drop masks; vse_ray is fed the same draws (`tests/support/run_replay.py`) and runs its
own data path, model, loss switch, optimiser and validation. Every epoch's mean loss, weights and validation
rsum must land where the official run's did, within the run's floating-point noise.

The noise is measured, not assumed: the fixture holds how far the official run moved on the recording's CPU
when its initial weights were multiplied by (1 + 1e-7·N(0, 1)) (one copy that differs by rounding only), and
the test replays the same run here from ``ROUNDING_COPIES`` such perturbed starts (`rounding_copies`). A CPU
with other SIMD kernels rounds otherwise, and the later epochs of this run are chaotic: one perturbed copy on
the recording's CPU kept every validation rsum, while copies here spread by 1.6 at epoch 3. So each bound is
the larger of NOISE_MARGIN × the recorded control and SPREAD_MARGIN × the spread of the copies on the machine
running the test (and at least 1.0 for the rsum: a few ranks).

A second recording (`vse_inf_run_replay_aug.npz`) is the same run with the official caption augmentation on,
replayed with the token ids it drew: there a replaced token sometimes draws id 0, and the `<pad>` embedding
row trains in the official code (its embedding has no padding index); vse_ray's must follow it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.support.local_reporter import LocalReporter
from tests.support.run_replay import (
    Recording,
    ReplayBatches,
    official_start,
    relative_diff,
    replay_config,
    replay_run,
    rounding_copies,
    write_store,
)
from vse_ray.checkpoint_files import load_checkpoint
from vse_ray.models import official_names
from vse_ray.train.training_data import TrainingData

FIXTURES = Path(__file__).parent.parent / "fixtures" / "official"
RECORDINGS = ("vse_inf_run_replay.npz", "vse_inf_run_replay_aug.npz")
EMBED = "text_encoder.embed.weight"
NOISE_MARGIN = 10  # vse_ray vs official may differ by up to 10x what rounding alone moves the official run
SPREAD_MARGIN = 2  # ... or by twice the spread of rounding-perturbed copies of the run on this machine
ROUNDING_COPIES = 4
# The bias feeding the region MLP's BatchNorm has an exact gradient of 0 (the BatchNorm subtracts it again):
# both codes move it by rounding noise alone (see test_step_parity), and the BatchNorm's running mean averages
# it. Neither is compared after updates.
NOISE_FED = ("image_encoder.mlp.0.bias", "image_encoder.mlp.1.running_mean")


def _relative_weight_diff(ours: dict[str, torch.Tensor], theirs: dict[str, np.ndarray]) -> float:
    """max over tensors of max |ours − theirs| / max |theirs|."""
    worst = 0.0
    for name, expected in theirs.items():
        key = official_names.VSE_INF_BIGRU.ours(name)
        if key is None or key in NOISE_FED or expected.ndim == 0:
            continue
        mine = ours[key].numpy()
        worst = max(worst, relative_diff(mine, expected))
    return worst


@pytest.fixture(scope="module", params=RECORDINGS)
def replay(
    request, tmp_path_factory
) -> tuple[Recording, LocalReporter, ReplayBatches, dict[str, np.ndarray]]:
    fixture = FIXTURES / request.param
    if not fixture.exists():
        pytest.fail(f"missing fixture {fixture}")
    rec = Recording(fixture)
    root = tmp_path_factory.mktemp("replay")
    cfg = replay_config(rec, write_store(rec, root / "data"), root / "out")
    data = TrainingData.load(cfg, None)
    assert data.train_captions is not None
    torch.set_num_threads(1)
    start = official_start(rec, cfg, data.model_args)
    reporter, batches = replay_run(rec, cfg, data.train_captions, start, root / "checkpoints")
    copies = rounding_copies(rec, cfg, data.train_captions, start, reporter, ROUNDING_COPIES, NOISE_FED)
    return rec, reporter, batches, copies


def test_replay_feeds_the_official_token_ids(replay):
    """vse_ray's tokenizer and vocabulary reader give the ids the official loader gave, step for step
    (without caption augmentation: with it, the official ids are the augmented ones and are fed as drawn)."""
    rec, _, batches, _ = replay
    if rec.meta["caption_aug"]:
        pytest.skip("the recording's ids are augmented")
    assert batches.fed
    for step in batches.fed:
        for mine, theirs, length in zip(step["tokens"], step["official"], step["lengths"], strict=True):
            assert np.array_equal(np.asarray(mine), theirs[:length])


def _bound(recorded: float, spread: float, floor: float = 1e-6) -> float:
    """What rounding alone may move a quantity: the recorded control's and this machine's copies' noise."""
    return max(NOISE_MARGIN * recorded, SPREAD_MARGIN * spread) + floor


def test_every_epoch_lands_where_the_official_run_did(replay):
    rec, reporter, _, copies = replay
    control = rec.group("control")
    official_losses = rec.epoch_losses()
    assert len(reporter.history) == len(official_losses) == rec.meta["epochs"]
    for epoch, (metrics, checkpoint) in enumerate(zip(reporter.history, reporter.checkpoints, strict=True)):
        loss_diff = abs(metrics["train_loss"] - official_losses[epoch]) / official_losses[epoch]
        loss_bound = _bound(control["loss_diff"][epoch], copies["loss_diff"][epoch])
        weights = load_checkpoint(checkpoint)["model"]
        weight_diff = _relative_weight_diff(weights, rec.group(f"epoch{epoch + 1}"))
        weight_bound = _bound(control["weight_diff"][epoch], copies["weight_diff"][epoch])
        rsum_diff = abs(metrics["rsum"] - float(rec.arrays["val_rsum"][epoch]))
        rsum_bound = max(_bound(control["rsum_diff"][epoch], copies["rsum_spread"][epoch], floor=0), 1.0)
        print(
            f"\nepoch {epoch + 1}: loss {loss_diff:.1e} (bound {loss_bound:.1e}), "
            f"weights {weight_diff:.1e} ({weight_bound:.1e}), val rsum {metrics['rsum']:.2f} vs "
            f"{float(rec.arrays['val_rsum'][epoch]):.2f} (copies here {copies['rsum_low'][epoch]:.2f} to "
            f"{copies['rsum_high'][epoch]:.2f}; bound {rsum_bound:.2f})"
        )
        assert loss_diff <= loss_bound, (epoch + 1, loss_diff)
        assert weight_diff <= weight_bound, (epoch + 1, weight_diff)
        assert rsum_diff <= rsum_bound, (epoch + 1, rsum_diff)


def test_the_pad_row_trains_as_the_official_row(replay):
    """Row 0 (`<pad>`) of the word embedding after each epoch: where augmentation fed id 0 it has moved in the
    official run, and vse_ray's row lands where the official row did, within the run's rounding noise."""
    rec, reporter, batches, copies = replay
    start = rec.group("init")["txt_enc.embed.weight"][0]
    fed = [s["official"][i, :n] for s in batches.fed for i, n in enumerate(s["lengths"])]
    fed_pad = sum(int((ids == 0).sum()) for ids in fed)
    control = rec.group("control")["weight_diff"]
    for epoch, checkpoint in enumerate(reporter.checkpoints):
        theirs = rec.group(f"epoch{epoch + 1}")["txt_enc.embed.weight"]
        ours = load_checkpoint(checkpoint)["model"][EMBED][0].numpy()
        diff = np.abs(ours - theirs[0]).max() / np.abs(theirs).max()
        bound = _bound(control[epoch], copies["weight_diff"][epoch])
        print(f"\nepoch {epoch + 1}: <pad> row {diff:.1e} (rounding alone, any tensor: bound {bound:.1e})")
        assert diff <= bound, (epoch + 1, diff)
    if rec.meta["caption_aug"]:
        assert fed_pad > 0 and np.abs(theirs[0] - start).max() > 1e-3  # the official row trained
