"""One training step of a model with a loss on a first batch of the train captions, checked to learn."""

from __future__ import annotations

import pyarrow as pa
import torch

from vse_ray.losses import make_loss
from vse_ray.models import RetrievalModel
from vse_ray.train.batches import BatchBuilder, TableBatches
from vse_ray.train.epoch_loop import train_step
from vse_ray.train.training_data import TrainingData


def assert_one_step_learns(
    model: RetrievalModel, loss_name: str, data: TrainingData, captions: pa.Table
) -> None:
    """A step of `loss_name` on a batch of 16 captions gives a finite positive loss and moves a parameter."""
    loss = make_loss(loss_name)
    builder = BatchBuilder(data.train_images, loss.relevance_source, data.references)
    batch = builder(next(iter(TableBatches(captions, 16, 0).epoch_batches(1))))
    before = [p.detach().clone() for p in model.parameters()]
    value = train_step(model, loss, torch.optim.Adam(model.parameters(), lr=1e-3), batch, 2.0)
    assert torch.isfinite(value) and value > 0
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
