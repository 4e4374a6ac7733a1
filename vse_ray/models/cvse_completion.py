"""CVSE's released evaluation (BruceW91/CVSE `evaluation.py`): concept-label completion of test captions.

A test caption's own labels (the concepts of its words) are completed from neighbouring captions before it is
encoded a second time. The neighbours come from the first encoding's fused vectors, in two ways:

- caption → caption: the 10 captions of highest cosine (the caption itself scored 0, so normally left out);
- image → caption: the caption's nearest image ranks every caption; the caption, the one ranked just above it
  and the one just below (the top 3 when it ranks first or second, the last 3 when it ranks in the last 3).

A caption keeps the caption-caption neighbours found both ways; with fewer than 3 of those it takes instead
the first 3 caption-caption neighbours and the 3 image-caption ones (Flickr30K), or the first 2 and the first
image-caption one (MS-COCO). Its completed labels are the element-wise max of its own and its neighbours'.
As released, caption-caption cosines are float32 and made symmetric (max of both products), image-caption
ones float64.
"""

from __future__ import annotations

import torch
from torch import Tensor

CAPTION_NEIGHBOURS = 10  # caption → caption
IMAGE_NEIGHBOURS = 3  # image → caption
# When fewer than 3 neighbours agree: (caption-caption, image-caption) neighbours taken instead.
FALLBACK = {"f30k": (3, 4), "coco": (2, 1)}


def caption_caption_neighbours(cap: Tensor, k: int = CAPTION_NEIGHBOURS, chunk: int = 1024) -> Tensor:
    """(N, min(k, N)) the captions of highest cosine to each of the (N, E) `cap`, best first."""
    rows = []
    for start in range(0, len(cap), chunk):
        part = cap[start : start + chunk]
        sims = torch.maximum(part @ cap.T, (cap @ part.T).T)
        sims[torch.arange(len(part)), torch.arange(start, start + len(part))] = 0.0
        rows.append(sims.topk(min(k, len(cap)), dim=1).indices)
    return torch.cat(rows)


def image_caption_neighbours(img: Tensor, cap: Tensor, chunk: int = 256) -> Tensor:
    """(N_cap, 3) each caption's neighbours in the ranking of its nearest image (float64 cosines)."""
    img64, cap64 = img.double(), cap.double()
    nearest = torch.cat([(img64 @ cap64[s : s + chunk].T).argmax(0) for s in range(0, len(cap), chunk)])
    n_cap, k = len(cap), IMAGE_NEIGHBOURS
    result = torch.empty(n_cap, k, dtype=torch.int64, device=cap.device)
    images = nearest.unique()
    for s in range(0, len(images), chunk):
        group = images[s : s + chunk]
        order = (img64[group] @ cap64.T).argsort(dim=1, descending=True)  # (G, N_cap)
        for row, image in zip(order, group.tolist(), strict=True):
            captions = (nearest == image).nonzero().squeeze(1)
            position = torch.empty_like(row)
            position[row] = torch.arange(n_cap, device=row.device)
            for caption, p in zip(captions.tolist(), position[captions].tolist(), strict=True):
                if p >= n_cap - k:
                    result[caption] = row[-k:]
                elif p > 1:
                    result[caption] = row[p - 1 : p + 2]
                else:
                    result[caption] = row[:k]
    return result


def completion_neighbours(img: Tensor, cap: Tensor, dataset: str) -> list[list[int]]:
    """Each caption's neighbours (itself not added) from the split's first-pass fused vectors `img`
    (N_img, E) and `cap` (N_cap, E); `dataset` ("f30k" or "coco") picks the fallback."""
    if dataset not in FALLBACK:
        raise ValueError(f"eval_dataset: {dataset!r}, expected one of {sorted(FALLBACK)}")
    n_captions, n_image = FALLBACK[dataset]
    neighbours = []
    by_captions = caption_caption_neighbours(cap).tolist()
    by_image = image_caption_neighbours(img, cap).tolist()
    for a, b in zip(by_captions, by_image, strict=True):
        both = [c for c in a if c in b]
        neighbours.append(both if len(both) >= IMAGE_NEIGHBOURS else a[:n_captions] + b[:n_image])
    return neighbours


def complete_labels(labels: Tensor, neighbours: list[list[int]]) -> Tensor:
    """(N_cap, K) the element-wise max of each caption's own `labels` and its `neighbours`' labels."""
    rows = [n + [index] for index, n in enumerate(neighbours)]
    width = max(map(len, rows))
    index_rows = torch.tensor([r + [r[-1]] * (width - len(r)) for r in rows], device=labels.device)
    return labels[index_rows].amax(dim=1)
