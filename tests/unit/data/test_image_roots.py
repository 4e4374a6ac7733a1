"""Image refs stay inside the image root: ``..``, absolute paths and symlinks out become rejects."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from PIL import Image

from vse_ray.data.sources.image_io import FileImages, OutsideRoot, load_images


@pytest.fixture
def root(tmp_path):
    folder = tmp_path / "a" / "images"
    folder.mkdir(parents=True)
    pixels = np.zeros((8, 8, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(folder / "inside.png")
    Image.fromarray(pixels).save(tmp_path / "outside_secret.png")
    (folder / "link.png").symlink_to(tmp_path / "outside_secret.png")
    return folder


@pytest.mark.parametrize(
    "ref", ["../../outside_secret.png", "sub/../../../outside_secret.png", "/etc/hostname", "link.png"]
)
def test_a_ref_outside_the_root_is_refused(root, ref):
    with pytest.raises(OutsideRoot, match="outside the image root"):
        FileImages(str(root)).load(ref, 8)


def test_a_ref_outside_the_root_becomes_a_reject_with_its_reason(root):
    batch = {"ref": np.array(["inside.png", "sub/../inside.png", "../../outside_secret.png"], dtype=object)}
    out = load_images(batch, source=FileImages(str(root)), size=8, keep_png=False)
    assert out["reject"][:2].tolist() == ["", ""]
    assert out["reject"][2].startswith("outside --image-root: ../../outside_secret.png")


def test_a_fifo_or_folder_named_as_an_image_is_a_reject_and_is_never_opened(root):
    os.mkfifo(root / "pipe.png")
    (root / "folder.png").mkdir()
    batch = {"ref": np.array(["inside.png", "pipe.png", "folder.png"], dtype=object)}
    done: dict = {}
    worker = threading.Thread(
        target=lambda: done.update(load_images(batch, source=FileImages(str(root)), size=8, keep_png=False)),
        daemon=True,
    )
    worker.start()
    worker.join(timeout=10)
    if worker.is_alive():  # blocked opening the FIFO: a writer that opens and closes it lets it go
        with open(root / "pipe.png", "wb"):
            pass
        pytest.fail("reading a FIFO named as an image blocked")
    assert done["reject"][0] == ""
    pipe, folder = root / "pipe.png", root / "folder.png"
    assert done["reject"][1] == f"not a regular file: {pipe} (a FIFO, socket or device; not read)"
    assert done["reject"][2] == f"not a regular file: {folder} (a folder)"
