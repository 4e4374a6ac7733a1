"""The embedded synthetic dataset: deterministic, captions from the scene only, pixels from the scene only."""

from __future__ import annotations

import numpy as np
import pytest

from vse_ray.data.synthetic.dataset import generate_synthetic, render_scene, synthetic_image, synthetic_scene
from vse_ray.data.synthetic.scene import (
    BACKGROUNDS,
    COLOURS,
    MAX_OBJECTS,
    POSITIONS,
    ObjectGroup,
    Scene,
    sample_scene,
)
from vse_ray.data.synthetic.scene_captions import TEMPLATES, describe_scene


def test_generate_is_deterministic_and_split_ordered():
    a = generate_synthetic(6, 2, 3, image_size=32, seed=7)
    b = generate_synthetic(6, 2, 3, image_size=32, seed=7)
    assert a.splits == ("train",) * 6 + ("val",) * 2 + ("test",) * 3
    np.testing.assert_array_equal(a.image_ids, np.arange(11))
    np.testing.assert_array_equal(a.images, b.images)
    assert a.captions == b.captions and a.scenes == b.scenes
    assert a.images.shape == (11, 32, 32, 3) and a.images.dtype == np.uint8
    c = generate_synthetic(6, 2, 3, image_size=32, seed=8)
    assert c.captions != a.captions


def test_each_image_is_generated_alone_identically():
    data = generate_synthetic(5, 0, 0, image_size=32, seed=3)
    for k in range(5):
        np.testing.assert_array_equal(synthetic_image(3, k, 32), data.images[k])
        assert synthetic_scene(3, k) == data.scenes[k]


def test_render_without_pixels_keeps_captions():
    assert generate_synthetic(4, 1, 1, render=False, seed=1).images is None
    assert (
        generate_synthetic(4, 1, 1, render=False, seed=1).captions
        == generate_synthetic(4, 1, 1, seed=1).captions
    )


def test_scenes_respect_the_attribute_grid():
    rng = np.random.default_rng(0)
    for _ in range(300):
        scene = sample_scene(rng)
        assert 1 <= len(scene.groups) <= 3 and 1 <= scene.n_objects <= MAX_OBJECTS
        assert len({g.position for g in scene.groups}) == len(scene.groups)


def test_captions_are_distinct_and_mention_only_scene_colours():
    data = generate_synthetic(60, 0, 0, render=False, seed=0)
    for scene, captions in zip(data.scenes, data.captions, strict=True):
        assert len(set(captions)) == 5
        colours = {g.colour for g in scene.groups}
        for caption in captions:
            words = set(caption.replace(",", " ").split())
            assert words & set(COLOURS) == colours, (scene, caption)


def test_templates_vary_the_captions():
    data = generate_synthetic(200, 0, 0, render=False, seed=0)
    captions = [c for caps in data.captions for c in caps]
    assert len(TEMPLATES) >= 6
    assert len(set(captions)) > 0.9 * len(captions)
    assert sum(" on the left" in c or " at the left" in c for c in captions) > 20  # positions appear
    assert sum(c.split()[0] in ("two", "three", "four") or " two " in c for c in captions) > 20  # counts


def test_describe_scene_is_deterministic_given_the_rng():
    scene = sample_scene(np.random.default_rng(5))
    first = describe_scene(scene, np.random.default_rng(1), n_captions=len(TEMPLATES))
    assert first == describe_scene(scene, np.random.default_rng(1), n_captions=len(TEMPLATES))
    assert first != describe_scene(scene, np.random.default_rng(2), n_captions=len(TEMPLATES))
    assert all(caption == caption.lower() for caption in first)


def test_every_caption_states_the_background_colour_and_texture():
    textures = {"plain": ("plain", "solid"), "striped": ("stripes",), "checkered": ("checks", "checkerboard")}
    textures["dotted"] = ("dots",)
    data = generate_synthetic(60, 0, 0, render=False, seed=4)
    for scene, captions in zip(data.scenes, data.captions, strict=True):
        for caption in captions:
            words = set(caption.replace(",", " ").split())
            assert words & set(BACKGROUNDS) == {scene.background}, (scene, caption)
            assert words & set(textures[scene.texture]), (scene, caption)


def test_describe_scene_rejects_bad_count():
    scene = sample_scene(np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_captions"):
        describe_scene(scene, np.random.default_rng(0), n_captions=len(TEMPLATES) + 1)


@pytest.mark.parametrize("position", POSITIONS)
def test_pixels_show_the_object_colour_at_its_position(position):
    """The renderer draws the scene: the centre of a large single object has the object's colour."""
    scene = Scene("gray", "plain", (ObjectGroup("ball", "red", "large", position, 1),))
    image = render_scene(scene, 64, np.random.default_rng(0)).astype(int)
    centre = {"left": (32, 13), "right": (32, 51), "top": (13, 32), "bottom": (51, 32), "center": (32, 32)}
    y, x = centre[position]
    assert np.abs(image[y, x] - np.array(COLOURS["red"])).max() <= 25
    assert np.abs(image[2, 2] - 128).max() <= 25  # the corner is background


def test_generate_rejects_bad_sizes():
    with pytest.raises(ValueError, match="n_val"):
        generate_synthetic(2, -1, 0)
    with pytest.raises(ValueError, match="image_size"):
        render_scene(synthetic_scene(0, 0), image_size=8)


def test_every_caption_names_every_object_kind_and_no_other():
    from vse_ray.data.synthetic.scene_captions import _KINDS

    data = generate_synthetic(60, 0, 0, render=False, seed=2)
    words_of = {kind: {w for pair in k.nouns for w in " ".join(pair).split()} for kind, k in _KINDS.items()}
    for scene, captions in zip(data.scenes, data.captions, strict=True):
        kinds = {g.shape for g in scene.groups}
        for caption in captions:
            words = set(caption.replace(",", " ").split())
            assert all(words & words_of[kind] for kind in kinds), (scene, caption)
            others = set().union(*(words_of[k] for k in _KINDS if k not in kinds)) - set().union(
                *(words_of[k] for k in kinds)
            )
            assert not words & others, (scene, caption)
