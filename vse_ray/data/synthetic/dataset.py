"""The embedded ``synthetic`` dataset: procedurally rendered captioned scenes, deterministic by seed.

Every image ``i`` of a dataset with seed ``s`` is built from its own generator streams
``default_rng([s, i, 0])`` (scene), ``[s, i, 1]`` (captions) and ``[s, i, 2]`` (rendering jitter), so any
image can be generated alone, in any process, in any order, with the same result. Pixels come from the scene
through :func:`render_scene`; captions come from the scene through
:func:`~vse_ray.data.synthetic.scene_captions.describe_scene`.

Knobs (see :func:`generate_synthetic`): split sizes (default 2,000 / 250 / 250 images), ``image_size``
(default 64 pixels), ``seed``, ``captions_per_image`` (default 5).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw

from vse_ray.data.synthetic.scene import BACKGROUNDS, COLOURS, Scene, sample_scene
from vse_ray.data.synthetic.scene_captions import describe_scene

SPLITS = ("train", "val", "test")
_CENTRES = {
    "left": (0.2, 0.5),
    "right": (0.8, 0.5),
    "top": (0.5, 0.2),
    "bottom": (0.5, 0.8),
    "center": (0.5, 0.5),
}
_RADIUS = {"small": 0.075, "medium": 0.105, "large": 0.145}
_SUPERSAMPLE = 2


@dataclass(frozen=True)
class SyntheticDataset:
    """Scenes, captions and (optionally) pixels of a generated dataset; image ``k`` has ``image_id == k``.

    Attributes:
        image_ids: (n,) int64, ``0..n-1``, train first, then val, then test.
        splits: Split name of each image.
        scenes: Scene description of each image.
        captions: ``captions[k]`` = the captions of image k.
        images: (n, H, W, 3) uint8 rendered pixels, or None when generated with ``render=False``.
        seed: The dataset seed.
        image_size: Side of the square images in pixels.
    """

    image_ids: np.ndarray
    splits: tuple[str, ...]
    scenes: tuple[Scene, ...]
    captions: tuple[tuple[str, ...], ...]
    images: np.ndarray | None
    seed: int
    image_size: int


def _cluster_offsets(count: int, position: str) -> list[tuple[float, float]]:
    """Unit offsets of ``count`` objects of one group: a pair along the free axis, a triangle, a 2x2 grid."""
    if count == 1:
        return [(0.0, 0.0)]
    if count == 2:
        return [(0.0, -1.0), (0.0, 1.0)] if position in ("left", "right") else [(-1.0, 0.0), (1.0, 0.0)]
    if count == 3:
        return [(-1.0, 0.8), (1.0, 0.8), (0.0, -0.9)]
    return [(-1.0, -1.0), (1.0, -1.0), (-1.0, 1.0), (1.0, 1.0)]


_DARK = (25, 25, 25)


def _pie(draw: ImageDraw.ImageDraw, box: list[float], fill: tuple) -> None:
    """The upper half of the ellipse in ``box`` (a dome: umbrella, mushroom cap)."""
    draw.pieslice(box, 180, 360, fill=fill)


def _draw_object(draw: ImageDraw.ImageDraw, kind: str, x: float, y: float, r: float, fill: tuple) -> None:
    """Draw one object of ``kind`` (a pictogram within radius ``r`` of its centre) in ``fill`` colour."""
    if kind == "ball":
        draw.ellipse([x - r, y - r, x + r, y + r], fill=fill)
    elif kind == "box":
        draw.rectangle([x - 0.85 * r, y - 0.85 * r, x + 0.85 * r, y + 0.85 * r], fill=fill)
        draw.line(
            [x - 0.85 * r, y - 0.85 * r, x + 0.85 * r, y + 0.85 * r], fill=_DARK, width=max(1, int(r / 6))
        )
    elif kind == "tree":
        draw.rectangle([x - 0.18 * r, y + 0.2 * r, x + 0.18 * r, y + r], fill=fill)
        draw.polygon([(x, y - r), (x + 0.8 * r, y + 0.35 * r), (x - 0.8 * r, y + 0.35 * r)], fill=fill)
    elif kind == "house":
        draw.rectangle([x - 0.7 * r, y - 0.1 * r, x + 0.7 * r, y + 0.9 * r], fill=fill)
        draw.polygon([(x - 0.95 * r, y - 0.05 * r), (x, y - r), (x + 0.95 * r, y - 0.05 * r)], fill=fill)
        draw.rectangle([x - 0.18 * r, y + 0.4 * r, x + 0.18 * r, y + 0.9 * r], fill=_DARK)
    elif kind == "car":
        draw.rectangle([x - r, y - 0.15 * r, x + r, y + 0.4 * r], fill=fill)
        draw.rectangle([x - 0.5 * r, y - 0.6 * r, x + 0.45 * r, y - 0.1 * r], fill=fill)
        for wx in (x - 0.55 * r, x + 0.55 * r):
            draw.ellipse([wx - 0.27 * r, y + 0.25 * r, wx + 0.27 * r, y + 0.79 * r], fill=_DARK)
    elif kind == "boat":
        draw.polygon(
            [
                (x - r, y + 0.3 * r),
                (x + r, y + 0.3 * r),
                (x + 0.6 * r, y + 0.8 * r),
                (x - 0.6 * r, y + 0.8 * r),
            ],
            fill=fill,
        )
        draw.polygon(
            [(x - 0.05 * r, y - r), (x - 0.05 * r, y + 0.2 * r), (x - 0.75 * r, y + 0.2 * r)], fill=fill
        )
        draw.polygon(
            [(x + 0.05 * r, y - 0.7 * r), (x + 0.05 * r, y + 0.2 * r), (x + 0.6 * r, y + 0.2 * r)], fill=fill
        )
    elif kind == "fish":
        draw.ellipse([x - 0.8 * r, y - 0.45 * r, x + 0.45 * r, y + 0.45 * r], fill=fill)
        draw.polygon([(x + 0.3 * r, y), (x + r, y - 0.5 * r), (x + r, y + 0.5 * r)], fill=fill)
        draw.ellipse([x - 0.55 * r, y - 0.2 * r, x - 0.35 * r, y], fill=_DARK)
    elif kind == "flower":
        for angle in np.pi * (np.arange(5) * 0.4 - 0.5):
            px, py = x + 0.55 * r * np.cos(angle), y + 0.55 * r * np.sin(angle)
            draw.ellipse([px - 0.42 * r, py - 0.42 * r, px + 0.42 * r, py + 0.42 * r], fill=fill)
        draw.ellipse([x - 0.25 * r, y - 0.25 * r, x + 0.25 * r, y + 0.25 * r], fill=_DARK)
    elif kind == "star":
        angles = np.pi * (np.arange(10) / 5 - 0.5)  # 5 outer and 5 inner vertices
        radii = np.where(np.arange(10) % 2 == 0, r, 0.45 * r)
        points = zip(
            (x + radii * np.cos(angles)).tolist(), (y + radii * np.sin(angles)).tolist(), strict=True
        )
        draw.polygon(list(points), fill=fill)
    elif kind == "heart":
        for cx in (x - 0.45 * r, x + 0.45 * r):
            draw.ellipse([cx - 0.5 * r, y - 0.8 * r, cx + 0.5 * r, y + 0.2 * r], fill=fill)
        draw.polygon(
            [(x - 0.93 * r, y - 0.15 * r), (x + 0.93 * r, y - 0.15 * r), (x, y + 0.9 * r)], fill=fill
        )
    elif kind == "umbrella":
        _pie(draw, [x - r, y - 0.8 * r, x + r, y + 0.8 * r], fill)
        draw.rectangle([x - 0.08 * r, y, x + 0.08 * r, y + 0.85 * r], fill=fill)
        draw.arc(
            [x - 0.35 * r, y + 0.55 * r, x + 0.08 * r, y + r], 0, 180, fill=fill, width=max(1, int(r / 6))
        )
    elif kind == "mushroom":
        _pie(draw, [x - r, y - 0.7 * r, x + r, y + 0.5 * r], fill)
        draw.rectangle([x - 0.28 * r, y - 0.12 * r, x + 0.28 * r, y + 0.85 * r], fill=fill)
    elif kind == "kite":
        draw.polygon(
            [(x, y - r), (x + 0.6 * r, y - 0.15 * r), (x, y + 0.6 * r), (x - 0.6 * r, y - 0.15 * r)],
            fill=fill,
        )
        draw.line(
            [(x, y + 0.6 * r), (x + 0.25 * r, y + 0.8 * r), (x - 0.1 * r, y + r)],
            fill=fill,
            width=max(1, int(r / 8)),
        )
    else:
        raise ValueError(f"unknown object kind {kind!r}")


def _background(scene: Scene, side: int, rng: np.random.Generator) -> np.ndarray:
    """Background colour with its texture (stripes, checks or dots of a lighter shade) and mild noise."""
    base = np.array(BACKGROUNDS[scene.background], dtype=np.float32)
    shade = 35.0 if scene.background != "white" else -35.0
    yy, xx = np.mgrid[0:side, 0:side]
    period = max(4, side // 8)
    if scene.texture == "striped":
        mask = ((xx + yy) // (period // 2)) % 2 == 0
    elif scene.texture == "checkered":
        mask = ((xx // period) + (yy // period)) % 2 == 0
    elif scene.texture == "dotted":
        mask = ((xx % period - period / 2) ** 2 + (yy % period - period / 2) ** 2) < (period / 4) ** 2
    else:
        mask = np.zeros((side, side), dtype=bool)
    pixels = base + shade * mask[..., None] + rng.normal(0.0, 4.0, size=(side, side, 3))
    return np.clip(pixels, 0, 255).astype(np.uint8)


def render_scene(scene: Scene, image_size: int = 64, rng: np.random.Generator | None = None) -> np.ndarray:
    """Render ``scene`` to RGB pixels: large saturated shapes on a plain or textured background.

    Positions, sizes and colours get a small random jitter from ``rng`` (a fixed default when None), so
    equal scenes still give different images.

    Args:
        scene: What to draw.
        image_size: Side of the square output in pixels (>= 16).
        rng: Generator of the jitter.

    Returns:
        (image_size, image_size, 3) uint8 array.
    """
    if image_size < 16:
        raise ValueError(f"image_size must be >= 16 pixels, got {image_size}")
    rng = rng if rng is not None else np.random.default_rng(0)
    side = image_size * _SUPERSAMPLE
    canvas = Image.fromarray(_background(scene, side, rng))
    draw = ImageDraw.Draw(canvas)
    for group in scene.groups:
        cx, cy = _CENTRES[group.position]
        radius = _RADIUS[group.size] * (1.0 if group.count == 1 else 0.62) * rng.uniform(0.9, 1.1)
        colour = np.clip(np.array(COLOURS[group.colour]) + rng.integers(-12, 13, size=3), 0, 255)
        jitter = rng.uniform(-0.025, 0.025, size=2)
        for dx, dy in _cluster_offsets(group.count, group.position):
            x = (cx + jitter[0] + 1.1 * radius * dx) * side
            y = (cy + jitter[1] + 1.1 * radius * dy) * side
            _draw_object(draw, group.shape, x, y, radius * side, tuple(int(c) for c in colour))
    return np.asarray(canvas.resize((image_size, image_size), Image.Resampling.LANCZOS), dtype=np.uint8)


_SCENE, _CAPTIONS, _RENDER = 0, 1, 2


def _stream(seed: int, index: int, purpose: int) -> np.random.Generator:
    return np.random.default_rng([seed, index, purpose])


def synthetic_scene(seed: int, index: int) -> Scene:
    """The scene of image ``index`` of the dataset with ``seed``."""
    return sample_scene(_stream(seed, index, _SCENE))


def synthetic_image(seed: int, index: int, image_size: int = 64) -> np.ndarray:
    """The rendered pixels of image ``index`` of the dataset with ``seed``."""
    return render_scene(synthetic_scene(seed, index), image_size, _stream(seed, index, _RENDER))


def generate_synthetic(
    n_train: int = 2000,
    n_val: int = 250,
    n_test: int = 250,
    image_size: int = 64,
    seed: int = 0,
    captions_per_image: int = 5,
    render: bool = True,
) -> SyntheticDataset:
    """Generate the synthetic captioned-scenes dataset (nothing is downloaded).

    Args:
        n_train: Training images.
        n_val: Validation images.
        n_test: Test images.
        image_size: Side of the square images in pixels.
        seed: Dataset seed; image ``k`` depends only on ``(seed, k)``.
        captions_per_image: Different captions per image.
        render: Render the pixels (False: scenes and captions only, the pixels are rendered later).

    Returns:
        The dataset, images ordered train, val, test.
    """
    sizes = {"n_train": n_train, "n_val": n_val, "n_test": n_test}
    for name, size in sizes.items():
        if size < 0:
            raise ValueError(f"{name} must be >= 0, got {size}")
    n = n_train + n_val + n_test
    if n == 0:
        raise ValueError("n_train + n_val + n_test must be > 0")
    splits = tuple(split for split, size in zip(SPLITS, sizes.values(), strict=True) for _ in range(size))
    scenes = tuple(synthetic_scene(seed, k) for k in range(n))
    captions = tuple(
        tuple(describe_scene(scene, _stream(seed, k, _CAPTIONS), captions_per_image))
        for k, scene in enumerate(scenes)
    )
    images = None
    if render:
        images = np.stack(
            [render_scene(scene, image_size, _stream(seed, k, _RENDER)) for k, scene in enumerate(scenes)]
        )
    return SyntheticDataset(
        image_ids=np.arange(n, dtype=np.int64),
        splits=splits,
        scenes=scenes,
        captions=captions,
        images=images,
        seed=seed,
        image_size=image_size,
    )
