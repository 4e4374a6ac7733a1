"""Global-batch negatives under DDP: every worker's embeddings and relevance inputs, gathered in rank order.

With W workers of B pairs each, the graded losses see the global batch of W·B pairs: each worker all-gathers
the image and caption embeddings (open_clip's `gather_features` with `local_loss=False`) and the columns the
relevance is built from, then computes the same (W·B)×(W·B) loss as one process would on the concatenation
(rank 0's rows first). Gradient reaches only this worker's slice (the others are gathered without graph), so
the loss is multiplied by `world_size` before `backward`: DDP's gradient average then equals the gradient of
one process over the global batch (sum over ranks of each slice's part, see `test_gather.py`).

This is exact for every loss of the global similarity matrix, the contrastive ones included: open_clip's
`gather_with_grad=True, local_loss=True` gives each worker's embeddings the same gradient (all-gather with
autograd, each worker's rows of the loss), here without a collective in backward. A loss's own learned
parameters (a logit scale) lie outside DDP and see the whole loss on every worker: `share_loss_gradients`
averages their gradient over the workers and undoes the objective's × W.

`loss_span: local` (open_clip's ``local_loss=True, gather_with_grad=True``) computes only this worker's rows
instead: its B images against the W·B captions and its B captions against the W·B images, 2·B·W·B logits
rather than 2·(W·B)². The other workers' rows hold the rest of this worker's gradient, so the embeddings are
gathered with their gradient (`gather_with_grad`: an all-reduce in backward) and the local loss is
backpropagated as it is: DDP's average of the workers' gradients is the global loss's gradient. `loss_span:
worker` gathers nothing: each worker's B × B loss, DDP averaging the gradients (CUSA's ``is_all_gather``
false).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor

from vse_ray.relevance.sources import training_source


def relevance_columns(relevance_source: str | None) -> list[str]:
    """Caption columns that image ids and the B×B relevance of this source are built from."""
    source = training_source(relevance_source)
    return ["image_id", *(source.batch_columns if source else ())]


def gather_rows(rows: dict[str, Any], columns: list[str], world_size: int) -> dict[str, np.ndarray]:
    """The `columns` of every worker's batch rows, concatenated in rank order (equal batch sizes assumed)."""
    everyone: list[Any] = [None] * world_size
    dist.all_gather_object(everyone, {name: np.asarray(rows[name]) for name in columns})
    return {name: np.concatenate([part[name] for part in everyone]) for name in columns}


def gather_with_local_grad(local: Tensor, rank: int, world_size: int) -> Tensor:
    """(W·B, ...) concatenation of every rank's `local` (B, ...); only this rank's slice carries gradient."""
    parts = [torch.empty_like(local) for _ in range(world_size)]
    dist.all_gather(parts, local.detach().contiguous())
    parts[rank] = local
    return torch.cat(parts)


class _GatherWithGrad(torch.autograd.Function):
    """All-gather whose backward gives each rank the sum over the ranks of the gradient of its slice."""

    @staticmethod
    def forward(ctx: Any, local: Tensor, rank: int, world_size: int) -> Tensor:
        parts = [torch.empty_like(local) for _ in range(world_size)]
        dist.all_gather(parts, local.contiguous())
        ctx.rank, ctx.rows = rank, local.shape[0]
        return torch.cat(parts)

    @staticmethod
    def backward(ctx: Any, *grads: Tensor) -> tuple[Tensor, None, None]:
        everyone = grads[0].contiguous()
        dist.all_reduce(everyone)  # gloo has no reduce-scatter: the sum of all, then this rank's rows
        return everyone[ctx.rank * ctx.rows : (ctx.rank + 1) * ctx.rows], None, None


def gather_with_grad(local: Tensor, rank: int, world_size: int) -> Tensor:
    """(W·B, ...) concatenation of every rank's `local` (B, ...), every slice carrying its gradient back to
    its own rank (open_clip's ``gather_with_grad``; `loss_span: local`)."""
    return cast(Tensor, _GatherWithGrad.apply(local, rank, world_size))


def share_loss_gradients(params: Iterable[Tensor], scale: int) -> None:
    """Make the gradients of a loss's own parameters (outside DDP) those of one process over the batch.

    Under a process group they are averaged over the workers, as DDP averages the model's, which keeps the
    workers' copies equal; then divided by `scale`, the objective's factor (the number of workers whose pairs
    one loss spans, see `train_step`): the global-batch loss reaches these parameters in full on every worker.
    """
    grads = [p.grad for p in params if p.grad is not None]
    workers = dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1
    if not grads or workers * scale == 1:
        return
    flat = torch.cat([g.reshape(-1) for g in grads])
    if workers > 1:
        dist.all_reduce(flat)
    flat /= workers * scale
    for grad, part in zip(grads, flat.split([g.numel() for g in grads]), strict=True):
        grad.copy_(part.view_as(grad))
