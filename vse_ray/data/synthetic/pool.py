"""The CLIP pretraining pool: rendered scenes with alt-text captions, disjoint from the embedded dataset.

Pool image ``k`` of pool seed ``p`` comes from its own generator streams ``default_rng([p, k, purpose,
POOL])`` (scene, captions, rendering jitter), four-word keys that no stream of the embedded dataset
(``[seed, index, purpose]``, :mod:`vse_ray.data.synthetic.dataset`) can equal. On top of that, a pool scene
equal to one of the first `exclude_images` scenes of the embedded dataset of seed `exclude_seed` is skipped
(its index is left out of the pool): the dataset's image ``i`` depends only on ``(seed, i)`` and its splits
are consecutive ranges from 0 (train, val, test), so every dataset of that seed with at most
`exclude_images` images in all shares no scene with the pool, let alone an image. Captions are
:func:`~vse_ray.data.synthetic.alt_text.alt_text`, never the dataset's sentences.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from vse_ray.data.synthetic.alt_text import alt_text
from vse_ray.data.synthetic.dataset import render_scene, synthetic_scene
from vse_ray.data.synthetic.scene import Scene, sample_scene

POOL = 7  # the fourth word of a pool stream's key
_SCENE, _CAPTIONS, _RENDER = 0, 1, 2


@dataclass(frozen=True)
class Pool:
    """`ids` (n,): the pool indices kept; `images` (n, H, W, 3) uint8; `captions[k]`: image k's alt texts."""

    ids: np.ndarray
    images: np.ndarray
    captions: tuple[tuple[str, ...], ...]


def _stream(seed: int, index: int, purpose: int) -> np.random.Generator:
    return np.random.default_rng([seed, index, purpose, POOL])


def scene_key(scene: Scene) -> tuple:
    """What makes two scenes the same, whatever the order their groups were drawn in."""
    return scene.background, scene.texture, tuple(sorted(scene.groups, key=lambda g: g.position))


def dataset_scene_keys(seed: int, n_images: int) -> set[tuple]:
    """The scene keys of the embedded dataset's first `n_images` images of `seed` (no pixels rendered)."""
    return {scene_key(synthetic_scene(seed, i)) for i in range(n_images)}


def pool_scenes(n_images: int, seed: int, exclude: set[tuple]) -> Iterable[tuple[int, Scene]]:
    """The first `n_images` pool (index, scene) pairs of `seed` whose scene is not in `exclude`."""
    index, kept = 0, 0
    while kept < n_images:
        scene = sample_scene(_stream(seed, index, _SCENE))
        if scene_key(scene) not in exclude:
            yield index, scene
            kept += 1
        index += 1


def build_pool(
    n_images: int,
    seed: int,
    image_size: int,
    captions_per_image: int,
    exclude_seed: int,
    exclude_images: int,
    progress: Callable[[int], None] | None = None,
) -> Pool:
    """Render the pool (module docstring); `progress(done)` is called every 1,000 images."""
    exclude = dataset_scene_keys(exclude_seed, exclude_images)
    ids, images, captions = [], np.empty((n_images, image_size, image_size, 3), np.uint8), []
    for k, (index, scene) in enumerate(pool_scenes(n_images, seed, exclude)):
        ids.append(index)
        images[k] = render_scene(scene, image_size, _stream(seed, index, _RENDER))
        rng = _stream(seed, index, _CAPTIONS)
        captions.append(tuple(alt_text(scene, rng) for _ in range(captions_per_image)))
        if progress is not None and (k + 1) % 1000 == 0:
            progress(k + 1)
    return Pool(np.asarray(ids, dtype=np.int64), images, tuple(captions))
