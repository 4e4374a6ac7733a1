"""Embed a whole split with a trained model and score it with every metric (`evaluate_all`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from vse_ray.metrics import evaluate_all
from vse_ray.train.split_data import SplitData, pad_tokens


@torch.no_grad()
def split_similarities(
    model: nn.Module, split: SplitData, batch_size: int, device: torch.device
) -> np.ndarray:
    """s(i, c) = f(i) · g(c) for every image × caption of the split: (n_images, n_captions) float32."""
    was_training = model.training
    model.eval()
    n_img = len(split.images.image_ids)
    img = torch.cat(
        [
            model.encode_images(torch.from_numpy(split.images.values[s : s + batch_size]).to(device))
            for s in range(0, n_img, batch_size)
        ]
    )
    txt = []
    for s in range(0, len(split.tokens), batch_size):
        tokens, lengths = pad_tokens(split.tokens[s : s + batch_size])
        txt.append(model.encode_texts(tokens.to(device), lengths.to(device)))
    sims = (img @ torch.cat(txt).T).float().cpu().numpy()
    model.train(was_training)
    return sims


def evaluate_split(
    model: nn.Module,
    split: SplitData,
    batch_size: int,
    device: torch.device,
    metric_kwargs: dict[str, Any],
) -> dict[str, float]:
    """All retrieval metrics of the split, both directions, with every stored relevance matrix."""
    sims = split_similarities(model, split, batch_size, device)
    return evaluate_all(sims, split.img_of_cap, relevance=split.relevance or None, **metric_kwargs)
