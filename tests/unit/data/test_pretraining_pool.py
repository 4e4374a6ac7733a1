"""The CLIP pretraining pool: alt-text captions of the scene drawn, and no scene of the embedded dataset."""

from __future__ import annotations

import numpy as np

from vse_ray.data.synthetic.alt_text import FORMS, alt_text
from vse_ray.data.synthetic.dataset import generate_synthetic, synthetic_scene
from vse_ray.data.synthetic.pool import build_pool, dataset_scene_keys, pool_scenes, scene_key
from vse_ray.data.synthetic.scene import COLOURS


def test_the_pool_shares_no_scene_with_the_default_exclusion():
    """Every embedded dataset of seed 0 with up to 10,000 images (each shipped study) is kept out: the
    pool's first 2,000 scenes (of seed 1, as the default pool) include none of those scenes, though
    unexcluded draws would (the grid of scenes is finite)."""
    excluded = dataset_scene_keys(0, 10_000)
    kept = list(pool_scenes(2000, 1, excluded))
    assert all(scene_key(scene) not in excluded for _, scene in kept)
    skipped = kept[-1][0] + 1 - len(kept)
    assert skipped > 0  # the exclusion acted: some draws were equal to a dataset scene


def test_an_excluded_scene_is_skipped_and_ids_name_the_streams():
    first = list(pool_scenes(3, 5, set()))
    assert [i for i, _ in first] == [0, 1, 2]
    without = list(pool_scenes(3, 5, {scene_key(first[1][1])}))
    assert [i for i, _ in without][:2] == [0, 2] and without[1][1] == first[2][1]


def test_pool_images_and_captions_are_not_the_datasets():
    data = generate_synthetic(n_train=20, n_val=5, n_test=5, image_size=32, seed=0)
    pool = build_pool(24, 0, 32, 2, exclude_seed=0, exclude_images=30)  # even with the dataset's own seed
    assert pool.images.shape == (24, 32, 32, 3) and pool.images.dtype == np.uint8
    assert len(pool.captions) == 24 and all(len(c) == 2 for c in pool.captions)
    theirs = {image.tobytes() for image in data.images}
    assert not any(image.tobytes() in theirs for image in pool.images)
    sentences = {c for captions in data.captions for c in captions}
    assert not sentences & {c for captions in pool.captions for c in captions}
    assert np.all(np.diff(pool.ids) >= 1)


def test_alt_text_names_only_what_is_drawn_and_uses_every_form():
    colours = set(COLOURS) | {"grey"}
    seen_forms = set()
    for index in range(200):
        scene = synthetic_scene(3, index)
        drawn = {g.colour for g in scene.groups} | {scene.background}
        drawn |= {"grey"} if "gray" in drawn else set()
        rng = np.random.default_rng(index)
        caption = alt_text(scene, rng)
        words = {w.strip(",") for w in caption.split()}
        assert words & colours <= drawn, caption
        seen_forms.add(
            "tags" if caption.startswith("#") else "keywords" if caption.count(",") >= 2 else "other"
        )
        assert caption == alt_text(scene, np.random.default_rng(index))  # the stream decides
    assert {"tags", "keywords", "other"} <= seen_forms and len(FORMS) == 4
