"""vse_ray's pixel budget: an image with more pixels than MAX_IMAGE_PIXELS is refused from its header,
before it is decoded, with one line naming the file (a 13,000 x 13,000 PNG of 0.49 MB took a worker to
1.4 GB; now 96 MB), and PIL's own warning does not stand in for it."""

from __future__ import annotations

import struct
import warnings
import zlib

import numpy as np
import pyarrow as pa
import pytest

from vse_ray.data.sources.image_io import FileImages, load_images, png_bytes
from vse_ray.data.store.pixel_budget import MAX_IMAGE_PIXELS, TooManyPixels
from vse_ray.data.store.split_data import decode_png_column


def png_header(width: int, height: int) -> bytes:
    """A PNG of `width` x `height` RGB pixels as far as its header says (no pixel data follows)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    end = struct.pack(">I", 0) + b"IEND" + struct.pack(">I", zlib.crc32(b"IEND"))
    header = struct.pack(">I", len(ihdr)) + chunk + struct.pack(">I", zlib.crc32(chunk))
    return b"\x89PNG\r\n\x1a\n" + header + end


@pytest.mark.parametrize("side", [8193, 13_000, 20_000])  # over the budget; 20,000: over PIL's own limit too
def test_an_image_over_the_budget_is_a_reject_naming_the_file(tmp_path, side):
    (tmp_path / "big.png").write_bytes(png_header(side, side))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # PIL's DecompressionBombWarning is not the guard
        out = load_images(
            {"ref": np.array(["big.png"], dtype=object)},
            source=FileImages(str(tmp_path)),
            size=8,
            keep_png=False,
        )
    reason = out["reject"][0]
    assert (
        reason.startswith(f"too large: {tmp_path / 'big.png'}: ") and f"{MAX_IMAGE_PIXELS:,} pixels" in reason
    )


def test_a_stored_image_over_the_budget_is_refused_before_decoding():
    column = pa.chunked_array([[png_bytes(np.zeros((4, 4, 3), np.uint8)), png_header(9000, 9000)]])
    with pytest.raises(
        TooManyPixels, match=r"^stored image 1: 9,000 x 9,000 pixels, more than vse_ray's budget"
    ):
        decode_png_column(column)
    assert decode_png_column(column[:1]).shape == (1, 4, 4, 3)
