"""Global-batch negatives under DDP: every worker's embeddings and relevance inputs, gathered in rank order.

With W workers of B pairs each, the graded losses see the global batch of W·B pairs: each worker all-gathers
the image and caption embeddings (open_clip's `gather_features` with `local_loss=False`) and the columns the
relevance is built from, then computes the same (W·B)×(W·B) loss as one process would on the concatenation
(rank 0's rows first). Gradient reaches only this worker's slice (the others are gathered without graph), so
the loss is multiplied by `world_size` before `backward`: DDP's gradient average then equals the gradient of
one process over the global batch (sum over ranks of each slice's part, see `test_gather.py`).
"""

from __future__ import annotations

from typing import Any

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
