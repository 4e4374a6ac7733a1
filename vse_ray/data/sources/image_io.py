"""Image sources of the precompute stage: files on any pyarrow filesystem, or rendered synthetic scenes.

:func:`load_images` is the Ray Data decode stage. An image that cannot be loaded becomes a row with a
``reject`` reason (and zero pixels) instead of an exception, so one bad file does not stop the run.
"""

from __future__ import annotations

import io
import posixpath
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow.fs as pafs
from PIL import Image, UnidentifiedImageError

from vse_ray.data.store.pixel_budget import TooManyPixels, open_image
from vse_ray.data.synthetic.dataset import synthetic_image


def fit_image(image: Image.Image, size: int, mode: str = "square") -> Image.Image:
    """`image` resized (bicubic) to `size` x `size`: both sides ("square"), or the shortest side to `size`
    (the other in proportion, rounded down) and then the centre square ("shortest"), the resize and centre
    crop of CLIP's preprocessing (open_clip's ``Resize`` + ``CenterCrop``)."""
    width, height = image.size
    if mode == "square":
        return image.resize((size, size), Image.Resampling.BICUBIC)
    if width <= height:
        new = (size, int(size * height / width))
    else:
        new = (int(size * width / height), size)
    image = image.resize(new, Image.Resampling.BICUBIC)
    left, top = round((new[0] - size) / 2), round((new[1] - size) / 2)
    return image.crop((left, top, left + size, top + size))


def png_bytes(pixels: np.ndarray) -> bytes:
    """Lossless PNG encoding of an (H, W, 3) uint8 image."""
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def resolve_filesystem(root: str) -> tuple[pafs.FileSystem, str]:
    """``(filesystem, base path)`` of a local folder or a pyarrow URI (``s3://``, ``gs://``, ...)."""
    if "://" in root:
        return pafs.FileSystem.from_uri(root)
    return pafs.LocalFileSystem(), str(Path(root).resolve())


class OutsideRoot(ValueError):
    """An image ref that leads outside the image root (``..``, an absolute path or a symlink out)."""


class NotAFile(ValueError):
    """An image ref that names something other than a regular file: a folder, a FIFO, a socket or a device
    (reading a FIFO would wait forever for a writer)."""


def check_regular_file(fs: pafs.FileSystem, path: str) -> None:
    """:class:`NotAFile` naming ``path`` when it exists and is not a regular file (nothing is opened)."""
    kind = fs.get_file_info(path).type
    if kind == pafs.FileType.Directory:
        raise NotAFile(f"{path} (a folder)")
    if kind not in (pafs.FileType.File, pafs.FileType.NotFound):  # NotFound: open() names the missing file
        raise NotAFile(f"{path} (a FIFO, socket or device; not read)")


def path_under_root(base: str, ref: str, local: bool) -> str:
    """``base/ref``; :class:`OutsideRoot` when ``ref`` leaves ``base``.

    ``ref`` must be relative and stay inside ``base`` once ``..`` is applied; on a local filesystem the path
    with its symlinks resolved must lie under ``base`` too.
    """
    clean = posixpath.normpath(ref.replace("\\", "/"))
    if posixpath.isabs(clean) or clean == ".." or clean.startswith("../"):
        raise OutsideRoot(f"{ref} is outside the image root {base}")
    path = f"{base.rstrip('/')}/{clean}"
    if local and not Path(path).resolve().is_relative_to(Path(base).resolve()):
        raise OutsideRoot(f"{ref} leads outside the image root {base} (a symlink)")
    return path


@dataclass
class FileImages:
    """Images stored as files (JPEG, PNG, ...) under ``root``; refs are paths relative to it."""

    root: str
    _fs: tuple[pafs.FileSystem, str] | None = field(default=None, repr=False, compare=False)

    def load(self, ref: str, size: int | None, mode: str = "square") -> np.ndarray:
        """Read, decode to RGB and (when ``size`` is set) fit to ``size`` x ``size`` (`fit_image`); a ref
        outside the root raises :class:`OutsideRoot`, one that is not a regular file :class:`NotAFile`."""
        if self._fs is None:
            self._fs = resolve_filesystem(self.root)
        fs, base = self._fs
        path = path_under_root(base, ref, isinstance(fs, pafs.LocalFileSystem))
        check_regular_file(fs, path)
        with fs.open_input_stream(path) as stream:
            data = stream.read()
        with open_image(data, path) as opened:  # its size checked before it is decoded
            image = opened.convert("RGB")
            if size is not None:
                image = fit_image(image, size, mode)
            return np.asarray(image, dtype=np.uint8)


@dataclass(frozen=True)
class SyntheticImages:
    """Rendered synthetic scenes; refs are image indices (as strings) of the dataset with ``seed``."""

    seed: int
    image_size: int

    def load(self, ref: str, size: int | None, mode: str = "square") -> np.ndarray:
        """The rendered scene (square: both modes fit it alike), resized to ``size`` when set."""
        pixels = synthetic_image(self.seed, int(ref), self.image_size)
        if size is not None and size != self.image_size:
            pixels = np.asarray(Image.fromarray(pixels).resize((size, size), Image.Resampling.BICUBIC))
        return pixels


def reject_reason(error: Exception) -> str:
    """A short reason for the rejects table."""
    if isinstance(error, OutsideRoot):
        return f"outside --image-root: {error}"
    if isinstance(error, NotAFile):
        return f"not a regular file: {error}"
    if isinstance(error, FileNotFoundError):
        return f"missing file: {error}"
    if isinstance(error, TooManyPixels):
        return f"too large: {error}"
    if isinstance(error, UnidentifiedImageError):
        return "not an image: the file is not in a format PIL can decode"
    return f"corrupt image: {type(error).__name__}: {error}"


def load_images(
    batch: dict[str, np.ndarray],
    *,
    source: FileImages | SyntheticImages,
    size: int,
    keep_png: bool,
    resize_mode: str = "square",
) -> dict[str, np.ndarray]:
    """Ray Data stage: add ``pixels`` (n, size, size, 3) uint8, ``reject`` reasons, optionally ``image`` PNGs.

    Args:
        batch: Numpy batch with a ``ref`` column (path or synthetic index).
        source: Where the images come from.
        size: Side of the square images handed to the CNN (images are fitted to it, `fit_image`).
        keep_png: Also return the resized image as PNG bytes (for CNN fine-tuning, pixel towers).
        resize_mode: "square" or "shortest" (`fit_image`).
    """
    n = len(batch["ref"])
    pixels = np.zeros((n, size, size, 3), dtype=np.uint8)
    reasons = np.full(n, "", dtype=object)
    for i, ref in enumerate(batch["ref"]):
        try:
            pixels[i] = source.load(str(ref), size, resize_mode)
        except Exception as error:  # every unreadable image becomes a reject row
            reasons[i] = reject_reason(error)
    batch["pixels"], batch["reject"] = pixels, reasons
    if keep_png:
        batch["image"] = np.array(
            [png_bytes(p) if not r else b"" for p, r in zip(pixels, reasons, strict=True)], dtype=object
        )
    return batch
