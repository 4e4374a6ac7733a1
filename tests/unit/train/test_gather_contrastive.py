"""The contrastive losses over the global batch of 2 Gloo workers: equal to one process, and to open_clip.

Two checks in one real 2-process Gloo group on CPU:

- the engine's epoch loop (`train_one_epoch`: row gathering, image ids and relevance of the global batch,
  embedding gathering, loss scaling, DDP, the loss's own learned parameters) with `infonce` and `siglip` in
  each target mode gives the loss, the model's and the logit scale's gradients and the updated parameters of
  one process over the concatenated batches (rank 0's rows first);
- on fixed embeddings, the hard modes over `gather_with_local_grad` give each worker the loss, embedding
  gradients and logit-scale (and bias) gradients of open_clip's ``ClipLoss(gather_with_grad=True,
  local_loss=True)`` and ``SigLipLoss`` on the same 2 workers (their per-worker losses averaged and the
  scale's gradient averaged over the workers, as DDP would): ≤ 1e-6 relative.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.distributed as dist
from torch import nn

from tests.unit.losses._reference import unit_batch
from tests.unit.train.test_gather import HALF, _FixedBatches, _global_batches
from vse_ray.losses import make_loss
from vse_ray.models import build_model
from vse_ray.train.batches import BatchBuilder
from vse_ray.train.config import TrainConfig
from vse_ray.train.epoch_loop import WorkerContext, train_one_epoch
from vse_ray.train.gather import gather_with_local_grad, share_loss_gradients
from vse_ray.train.training_data import TrainingData

VARIANTS = [(name, targets) for name in ("infonce", "siglip") for targets in ("hard", "multi", "graded")]
WORLD, PAIRS, DIM = 2, 6, 8  # open_clip check: workers, pairs per worker, embedding size


def _epoch(cfg: TrainConfig, name: str, targets: str, batches: list[dict], rank: int, world: int) -> dict:
    """One epoch of `batches` (rank's half of each when world == 2): loss, last gradients, parameters."""
    loss_fn = make_loss(name, targets=targets, init_scale=5.0)
    data = TrainingData.load(cfg, loss_fn.relevance_source)
    torch.manual_seed(0)
    model = build_model(cfg.model, **data.model_args, **data.model_inputs)
    net = nn.parallel.DistributedDataParallel(model) if world > 1 else model
    optimizer = torch.optim.SGD([*model.parameters(), *loss_fn.parameters()], lr=0.5)
    builder = BatchBuilder(data.train_images, loss_fn.relevance_source, data.references)
    if world > 1:
        batches = [{k: v[rank * HALF : (rank + 1) * HALF] for k, v in b.items()} for b in batches]
    ctx = WorkerContext(_FixedBatches(batches), torch.device("cpu"), rank, world)
    mean_loss = train_one_epoch(cfg, 1, net, loss_fn, optimizer, builder, ctx, None)
    params = [*model.parameters(), *loss_fn.parameters()]
    return {
        "loss": mean_loss,
        "grads": [p.grad.clone() for p in params],
        "params": [p.detach().clone() for p in params],
    }


def _global_embeddings() -> tuple[torch.Tensor, torch.Tensor]:
    img, txt = unit_batch(WORLD * PAIRS, DIM, torch.float32, seed=7)
    return img.detach(), txt.detach()


def _ours(name: str, rank: int, world: int) -> dict:
    """The hard loss of this worker's slice over the gathered batch, as `train_step` backpropagates it (one
    process: the whole global batch)."""
    loss_fn = make_loss(name, init_scale=5.0)
    rows = slice(rank * PAIRS, (rank + 1) * PAIRS) if world > 1 else slice(None)
    img, txt = (t[rows].clone().requires_grad_() for t in _global_embeddings())
    gather = (lambda t: gather_with_local_grad(t, rank, world)) if world > 1 else (lambda t: t)
    value = loss_fn.from_similarity(gather(img) @ gather(txt).T)
    (value * world).backward()
    share_loss_gradients(loss_fn.parameters(), world)
    return {"loss": value.detach(), "img": img.grad, "txt": txt.grad, **_param_grads(loss_fn)}


def _param_grads(loss_fn: nn.Module) -> dict:
    return {name: p.grad.clone() for name, p in loss_fn.named_parameters()}


def _open_clip(name: str, rank: int, world: int) -> dict:
    """open_clip's distributed loss on this worker's slice; the loss and scale gradients averaged over the
    workers (DDP averages a model's logit scale)."""
    from open_clip.loss import ClipLoss, SigLipLoss

    reference = make_loss(name, init_scale=5.0)  # the same start values
    params = {n: p.detach().clone().requires_grad_() for n, p in reference.named_parameters()}
    img, txt = (t[rank * PAIRS : (rank + 1) * PAIRS].clone().requires_grad_() for t in _global_embeddings())
    scale = params["logit_scale"].exp()
    if name == "infonce":
        loss = ClipLoss(local_loss=True, gather_with_grad=True, rank=rank, world_size=world)
        value = loss(img, txt, scale)
    else:
        value = SigLipLoss(rank=rank, world_size=world)(img, txt, scale, params["logit_bias"])
    value.backward()
    shared = torch.stack([value.detach(), *(p.grad for p in params.values())])
    dist.all_reduce(shared)
    shared /= world
    grads = dict(zip(params, shared[1:], strict=True))
    return {"loss": shared[0], "img": img.grad, "txt": txt.grad, **grads}


def results(cfg: TrainConfig, batches: list[dict], rank: int, world: int) -> dict:
    return {
        "engine": {v: _epoch(cfg, *v, batches, rank, world) for v in VARIANTS},
        "ours": {name: _ours(name, rank, world) for name in ("infonce", "siglip")},
        "open_clip": {name: _open_clip(name, rank, world) for name in ("infonce", "siglip")},
    }


@pytest.fixture(scope="module")
def two_worker_results(two_worker_runs) -> tuple[TrainConfig, list[dict]]:
    cfg, ranks = two_worker_runs
    return cfg, [r["gather_contrastive"] for r in ranks]


def rel_diff(got: torch.Tensor, want: torch.Tensor) -> float:
    """max |got - want| / max |want|."""
    return float((got - want).abs().max() / want.abs().max())


@pytest.mark.parametrize(("name", "targets"), VARIANTS)
def test_two_workers_match_one_worker_over_the_global_batch(two_worker_results, name, targets):
    cfg, ranks = two_worker_results
    reference = _epoch(dataclasses.replace(cfg), name, targets, _global_batches(cfg), 0, 1)
    for result in (r["engine"][(name, targets)] for r in ranks):
        assert result["loss"] == pytest.approx(reference["loss"], rel=1e-5)
        for got, want in zip(result["grads"], reference["grads"], strict=True):
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6)
        for got, want in zip(result["params"], reference["params"], strict=True):
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6)
    scale_grads = [r["engine"][(name, targets)]["grads"][-1] for r in ranks]
    assert torch.equal(scale_grads[0], scale_grads[1]) and scale_grads[0].abs() > 0


@pytest.mark.parametrize("name", ["infonce", "siglip"])
def test_hard_modes_match_open_clip_on_two_workers(two_worker_results, name):
    _, ranks = two_worker_results
    single = _ours(name, 0, 1)  # one process over the global batch: the world's embeddings' gradients / W
    for rank, result in enumerate(ranks):
        ours, theirs = result["ours"][name], result["open_clip"][name]
        assert ours.keys() == theirs.keys()
        for key in ours:
            assert rel_diff(ours[key], theirs[key]) <= 1e-6, key
        rows = slice(rank * PAIRS, (rank + 1) * PAIRS)
        assert rel_diff(ours["loss"], single["loss"]) <= 1e-6
        assert rel_diff(ours["img"], WORLD * single["img"][rows]) <= 1e-6
        assert rel_diff(ours["txt"], WORLD * single["txt"][rows]) <= 1e-6
        assert rel_diff(ours["logit_scale"], single["logit_scale"]) <= 1e-6
