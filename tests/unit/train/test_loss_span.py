"""What one loss spans under DDP (`loss_span`), on 2 real Gloo workers on CPU.

- ``local`` (open_clip's ``local_loss`` with ``gather_with_grad``): each worker's B queries of each direction
  against the W·B candidates, embeddings gathered with their gradient. On fixed embeddings, in each target
  mode, the mean of the workers' losses is the global loss, and each worker's embedding and logit-scale
  gradients are those the gathered global loss gives it (`gather_with_local_grad`, × W), as open_clip's
  ``ClipLoss(local_loss=True, gather_with_grad=True)`` gives them (hard targets). Control: the same rows over
  a gather without gradient (open_clip's ``gather_with_grad=False``) lose the other workers' share.
- ``worker`` (CUSA's no gather): the engine's epoch loop gives each worker's own B × B loss; DDP's averaged
  gradient is the mean of the two halves' one-process gradients.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.distributed as dist
from torch import nn

from tests.unit.losses._reference import relevance_batch, unit_batch
from tests.unit.train.test_gather import HALF, _global_batches
from tests.unit.train.test_gather_contrastive import _epoch
from vse_ray.losses import make_loss
from vse_ray.train.config import TrainConfig
from vse_ray.train.gather import gather_with_grad, gather_with_local_grad, share_loss_gradients

WORLD, PAIRS, DIM = 2, 6, 8
IDS = torch.tensor([0, 0, 1, 2, 3, 3, 4, 5, 3, 6, 7, 7])  # repeated images, within and across workers
TARGETS = ("hard", "multi", "graded")


def _fixed() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    img, txt = unit_batch(WORLD * PAIRS, DIM, torch.float64, seed=3)
    return img.detach(), txt.detach(), relevance_batch(WORLD * PAIRS, torch.float64, seed=4)


def _grads(value: torch.Tensor, img, txt, loss_fn: nn.Module, scale: int) -> dict:
    (value * scale).backward()
    share_loss_gradients(loss_fn.parameters(), scale)
    return {
        "loss": value.detach(),
        "img": img.grad,
        "txt": txt.grad,
        "scale": loss_fn.logit_scale.grad.clone(),
    }


def _spans(rank: int, world: int) -> dict:
    """Per target mode: the local loss with and without the gather's gradient, and the gathered global one."""
    out = {}
    rows = slice(rank * PAIRS, (rank + 1) * PAIRS)
    for targets in TARGETS:
        for name, gather, local in (
            ("local", gather_with_grad, True),
            ("no_grad_gather", gather_with_local_grad, True),
            ("global", gather_with_local_grad, False),
        ):
            loss_fn = make_loss("infonce", targets=targets, init_scale=5.0).double()
            img_all, txt_all, rel = _fixed()
            img, txt = img_all[rows].clone().requires_grad_(), txt_all[rows].clone().requires_grad_()
            everyone = [gather(t, rank, world) for t in (img, txt)]
            if local:
                stacked = torch.stack((img @ everyone[1].T, txt @ everyone[0].T))
                value = loss_fn.from_local_similarity(stacked, rank * PAIRS, rel, IDS)
                out[(name, targets)] = _grads(value, img, txt, loss_fn, 1)
            else:
                value = loss_fn.from_similarity(everyone[0] @ everyone[1].T, rel, IDS)
                out[(name, targets)] = _grads(value, img, txt, loss_fn, world)
    return out


def _open_clip(rank: int, world: int) -> dict:
    from open_clip.loss import ClipLoss

    img_all, txt_all, _ = _fixed()
    rows = slice(rank * PAIRS, (rank + 1) * PAIRS)
    img, txt = img_all[rows].clone().requires_grad_(), txt_all[rows].clone().requires_grad_()
    log_scale = make_loss("infonce", init_scale=5.0).logit_scale.detach().double().requires_grad_()
    value = ClipLoss(local_loss=True, gather_with_grad=True, rank=rank, world_size=world)(
        img, txt, log_scale.exp()
    )
    value.backward()
    scale = log_scale.grad.clone()
    dist.all_reduce(scale)
    return {"loss": value.detach(), "img": img.grad, "txt": txt.grad, "scale": scale / world}


def results(cfg: TrainConfig, batches: list[dict], rank: int, world: int) -> dict:
    worker = dataclasses.replace(cfg, loss_span="worker")
    return {
        "spans": _spans(rank, world),
        "open_clip": _open_clip(rank, world),
        "worker": _epoch(worker, "infonce", "multi", batches[:1], rank, world),
    }


@pytest.fixture(scope="module")
def two_worker_results(two_worker_runs) -> tuple[TrainConfig, list[dict]]:
    cfg, ranks = two_worker_runs
    return cfg, [r["loss_span"] for r in ranks]


def _close(got: dict, want: dict, keys=("img", "txt", "scale")) -> None:
    for key in keys:
        torch.testing.assert_close(got[key], want[key], rtol=1e-9, atol=1e-12, msg=key)


@pytest.mark.parametrize("targets", TARGETS)
def test_the_local_loss_has_the_global_losss_gradients(two_worker_results, targets):
    _, ranks = two_worker_results
    local = [r["spans"][("local", targets)] for r in ranks]
    glob = [r["spans"][("global", targets)] for r in ranks]
    assert float(sum(r["loss"] for r in local)) / WORLD == pytest.approx(float(glob[0]["loss"]), rel=1e-12)
    for ours, gathered in zip(local, glob, strict=True):
        _close(ours, gathered)
    lost = [r["spans"][("no_grad_gather", targets)] for r in ranks]
    assert not torch.allclose(
        lost[0]["img"], glob[0]["img"], rtol=1e-3
    )  # control: the gather's gradient counts


def test_the_local_hard_loss_is_open_clips_local_loss(two_worker_results):
    _, ranks = two_worker_results
    for result in ranks:
        ours, theirs = result["spans"][("local", "hard")], result["open_clip"]
        assert float(ours["loss"]) == pytest.approx(float(theirs["loss"]), rel=1e-12)
        _close(ours, theirs)


def test_worker_span_is_each_workers_own_loss_averaged(two_worker_results):
    """CUSA's no gather: the epoch's loss is the mean of the halves' losses, and DDP's gradient their mean."""
    cfg, ranks = two_worker_results
    batch = _global_batches(cfg)[0]
    halves = [
        _epoch(cfg, "infonce", "multi", [{k: v[h * HALF : (h + 1) * HALF] for k, v in batch.items()}], 0, 1)
        for h in (0, 1)
    ]
    assert ranks[0]["worker"]["loss"] == pytest.approx(sum(h["loss"] for h in halves) / 2, rel=1e-5)
    for rank in ranks:
        for got, *want in zip(rank["worker"]["grads"], *(h["grads"] for h in halves), strict=True):
            torch.testing.assert_close(got, (want[0] + want[1]) / 2, rtol=1e-4, atol=1e-6)
    gathered = _epoch(cfg, "infonce", "multi", [batch], 0, 1)["loss"]
    assert ranks[0]["worker"]["loss"] != pytest.approx(gathered, rel=1e-3)  # control: not the global loss
