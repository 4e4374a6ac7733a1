"""Every result the three Gloo test modules need, from one 2-process group (a group costs ~25 s to spawn)."""

from __future__ import annotations

from vse_ray.train.config import TrainConfig


def every_result(cfg: TrainConfig, batches: list[dict], rank: int, world: int) -> dict:
    """`test_gather`'s, `test_gather_contrastive`'s and `test_loss_span`'s results, by module name."""
    from tests.unit.train import test_gather, test_gather_contrastive, test_loss_span

    return {
        "gather": test_gather.every_loss(cfg, batches, rank, world),
        "gather_contrastive": test_gather_contrastive.results(cfg, batches, rank, world),
        "loss_span": test_loss_span.results(cfg, batches, rank, world),
    }
