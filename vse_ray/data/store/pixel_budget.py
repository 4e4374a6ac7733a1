"""vse_ray's own limit on the pixels of one image, checked from the file's header before it is decoded.

A PNG of 13,000 x 13,000 pixels is a 0.49 MB file that decodes to 507 MB of RGB (1.4 GB at the peak of
decoding, converting and resizing); PIL's default guard only warns below 179 M pixels. The budget is
vse_ray's, so a worker's memory for one image is bounded whatever PIL's setting.
"""

from __future__ import annotations

import io
import warnings

from PIL import Image

MAX_IMAGE_PIXELS = 8192 * 8192  # 67 M pixels, 201 MB as RGB: a 50-megapixel photograph fits


class TooManyPixels(ValueError):
    """An image larger than :data:`MAX_IMAGE_PIXELS` (not decoded)."""


def open_image(data: bytes, name: str) -> Image.Image:
    """The image in `data`, opened (only its header read); :class:`TooManyPixels` naming `name` when it
    holds more than :data:`MAX_IMAGE_PIXELS` pixels."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # this budget is the guard
        try:
            image = Image.open(io.BytesIO(data))
        except Image.DecompressionBombError as err:  # PIL's own limit, above this budget
            raise TooManyPixels(f"{name}: {_over_budget()} ({err})") from None
    width, height = image.size
    if width * height > MAX_IMAGE_PIXELS:
        raise TooManyPixels(f"{name}: {width:,} x {height:,} pixels, {_over_budget()}")
    return image


def _over_budget() -> str:
    return f"more than vse_ray's budget of {MAX_IMAGE_PIXELS:,} pixels per image; resize it first"
