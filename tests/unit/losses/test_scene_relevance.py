"""Every graded loss takes a training step on the structural scene relevance of its batch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vse_ray.data.synthetic.scene import sample_scene, scene_descriptor
from vse_ray.losses import make_loss
from vse_ray.relevance import batch_relevance


@pytest.mark.parametrize("name", ["ladder", "ladder_auto", "bcls", "sam", "lseh"])
def test_graded_loss_step_on_scene_relevance(name):
    scenes = [sample_scene(np.random.default_rng([11, k])) for k in range(12)]
    relevance = batch_relevance("scene", torch.from_numpy(np.stack([scene_descriptor(s) for s in scenes])))
    torch.manual_seed(0)
    model = torch.nn.Linear(6, 4)
    inputs = torch.randn(12, 6)
    txt = torch.nn.functional.normalize(torch.randn(12, 4), dim=1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = make_loss(name, relevance_source="scene")
    assert loss_fn.relevance_source == "scene"
    before = model.weight.detach().clone()
    value = loss_fn(torch.nn.functional.normalize(model(inputs), dim=1), txt, relevance)
    value.backward()
    optimizer.step()
    assert torch.isfinite(value) and value > 0
    assert not torch.equal(model.weight, before)
