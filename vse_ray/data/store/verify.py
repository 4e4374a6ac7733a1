"""Refuse a data folder whose precompute did not finish, or whose files differ from its manifest.

Training, evaluation and sweeps call :func:`verify_data_dir` before they start anything: ``manifest.json`` is
written last by the precompute, so a folder without it is unfinished; every Parquet file it lists must be
on disk with the listed row count and sha256, and no other Parquet file may sit in the tables (reading a
table folder would pick it up).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from vse_ray.data.store.readers import shard_format
from vse_ray.data.store.schema import READABLE_SCHEMA_VERSIONS, SCHEMA_VERSION
from vse_ray.data.store.shards import sha256_file
from vse_ray.relevance.sources import MODEL_FILES as SOURCE_FILES

MANIFEST = "manifest.json"
TABLES = ("features", "captions", "relevance")
# Files besides the tables that training and evaluation read; the manifest lists their sha256 (``files``):
# the vocabulary, what the relevance sources fit on the train captions, and concepts.npz, CVSE's concept
# graph of the train captions (vse_ray.data.precompute.concepts).
MODEL_FILES = ("vocab.json", *SOURCE_FILES, "concepts.npz")


@dataclass(frozen=True)
class VerifiedData:
    """A data folder that matches its manifest: where it is, the manifest's sha256, the row counts, and the
    sha256 of what the data holds (the config hash and every file's sha256 the manifest lists: unlike the
    manifest's own bytes, the same after a precompute rerun that only rewrote its timings)."""

    path: Path
    manifest_sha256: str
    images: dict[str, int]
    captions: dict[str, int]
    content_sha256: str = ""

    def check_cutoffs(self, split: str, ks: Sequence[int]) -> None:
        """ValueError naming the split and the folder when the split has fewer images than the largest R@K
        cut-off: text-to-image retrieval ranks the split's images, so R@10 needs 10 of them."""
        n, k = self.images.get(split, 0), max(ks)
        if n < k:
            raise ValueError(
                f"data folder {self.path}: split {split!r} has {n} images, fewer than the largest R@K "
                f"cut-off (eval_ks {tuple(ks)}) ranks; precompute at least {k} {split} images or lower "
                "eval_ks"
            )

    def mlflow_params(self) -> dict[str, str | int]:
        """``data.manifest_sha256`` and ``data.<split>_images`` / ``data.<split>_captions`` counts."""
        params: dict[str, str | int] = {"data.manifest_sha256": self.manifest_sha256}
        for split in sorted(self.images):
            params[f"data.{split}_images"] = self.images[split]
            params[f"data.{split}_captions"] = self.captions.get(split, 0)
        return params


def data_folder(data_dir: str | Path) -> Path:
    """``data_dir`` as a folder that exists; ValueError naming it otherwise."""
    folder = Path(data_dir).expanduser()
    if not folder.is_dir():
        raise ValueError(f"data folder {folder} does not exist (expected a `vse-ray precompute` output)")
    return folder


def read_manifest(data_dir: str | Path) -> tuple[dict, str]:
    """The parsed manifest and the sha256 of its bytes; ValueError naming the folder or file otherwise."""
    folder = data_folder(data_dir)
    path = folder / MANIFEST
    if not path.is_file():
        raise ValueError(
            f"{folder} has no {MANIFEST}: its precompute did not finish (or it is not a precompute folder); "
            f"run `vse-ray precompute --out {folder}` again to complete it"
        )
    raw = path.read_bytes()
    try:
        manifest = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: expected UTF-8 JSON ({err})") from err
    if not isinstance(manifest, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(manifest).__name__}")
    if manifest.get("schema_version") not in READABLE_SCHEMA_VERSIONS:
        raise ValueError(
            f"{path}: schema_version {manifest.get('schema_version')!r}, this vse_ray reads "
            f"{' and '.join(map(str, READABLE_SCHEMA_VERSIONS))}; re-run the precompute into a new folder "
            "(or with --overwrite)"
        )
    for key in ("rows", "shards", "files"):
        if key == "files" and key not in manifest:  # written before the manifest listed them
            continue
        if not isinstance(manifest.get(key), dict):
            raise ValueError(f"{path}: key {key!r} is missing or not an object")
    return manifest, hashlib.sha256(raw).hexdigest()


SHARD_SUFFIXES = (".parquet", ".arrow")  # Parquet tables; Arrow IPC regions and captions (schema.py)


def shard_rows(path: Path) -> int:
    """Row count of a Parquet or Arrow IPC shard, from its metadata (nothing else is read); ValueError
    naming the file when it is truncated or not such a file."""
    try:
        if path.suffix == ".arrow":
            with pa.memory_map(str(path)) as source:
                reader = pa.ipc.open_file(source)
                return sum(reader.get_record_batch(i).num_rows for i in range(reader.num_record_batches))
        return pq.ParquetFile(path).metadata.num_rows
    except (pa.ArrowException, OSError) as err:
        if isinstance(err, FileNotFoundError):
            raise
        kind = "Arrow IPC" if path.suffix == ".arrow" else "Parquet"
        raise ValueError(f"{path}: not a readable {kind} file, truncated or corrupt ({err})") from err


def shard_paths(folder: Path, tables: Sequence[str] = TABLES) -> list[Path]:
    """Every Parquet / Arrow IPC shard under ``tables`` of ``folder``, hidden (temporary) files left out."""
    return sorted(
        p
        for table in tables
        for p in (folder / table).rglob("*")
        if p.suffix in SHARD_SUFFIXES
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )


@functools.lru_cache(maxsize=64)
def _sha256(path: Path, size: int, mtime_ns: int) -> str:
    """sha256 of a file, computed once per process for an unchanged file."""
    return sha256_file(path)


def model_files(folder: Path) -> dict[str, dict]:
    """``{name: {sha256}}`` of the :data:`MODEL_FILES` present in ``folder`` (manifest ``files``)."""
    return {name: {"sha256": sha256_file(folder / name)} for name in MODEL_FILES if (folder / name).is_file()}


def check_model_files(folder: Path, listed: dict, checksums: bool) -> None:
    """ValueError naming the file when one the manifest lists is missing or has another sha256."""
    for name, expected in sorted(listed.items()):
        path = folder / name
        if not path.is_file():
            raise ValueError(f"{path} is missing; {MANIFEST} lists it")
        stat = path.stat()
        if checksums and _sha256(path, stat.st_size, stat.st_mtime_ns) != expected.get("sha256"):
            raise ValueError(
                f"{path}: sha256 differs from {MANIFEST}'s (changed or corrupt since the precompute); "
                f"run the precompute again into a new folder"
            )


@functools.lru_cache(maxsize=4096)
def _first_non_finite(path: Path, size: int, mtime_ns: int) -> tuple[int, int] | None:
    """``(row, image_id)`` of the first row of a features shard holding NaN or inf, or None (cached)."""
    if path.suffix == ".arrow":
        with pa.memory_map(str(path)) as source:
            table = pa.ipc.open_file(source).read_all()
    else:
        table = pq.read_table(path)
    if "feature" not in table.column_names or table.num_rows == 0:
        return None
    values = table["feature"].combine_chunks()
    while pa.types.is_fixed_size_list(values.type):
        values = values.flatten()
    finite = np.isfinite(values.to_numpy(zero_copy_only=False).reshape(table.num_rows, -1)).all(axis=1)
    if finite.all():
        return None
    row = int(np.argmin(finite))
    return row, int(table["image_id"][row].as_py())


def check_finite_features(folder: Path, names: Sequence[str]) -> None:
    """ValueError naming the shard, row and image id of the first NaN or infinite feature value."""
    for name in names:
        path = folder / name
        stat = path.stat()
        bad = _first_non_finite(path, stat.st_size, stat.st_mtime_ns)
        if bad is not None:
            raise ValueError(
                f"{path}: row {bad[0]} (image_id {bad[1]}) has NaN or infinite features; check the image or "
                "the features it came from and run the precompute again into a new folder"
            )


@functools.lru_cache(maxsize=4096)
def _file_facts(path: Path, size: int, mtime_ns: int, checksum: bool) -> tuple[int, str]:
    """(row count, sha256 or ""), computed once per process for an unchanged file."""
    return shard_rows(path), sha256_file(path) if checksum else ""


def verify_data_dir(
    data_dir: str | Path, splits: Sequence[str] = ("train", "val"), checksums: bool = True
) -> VerifiedData:
    """Check ``data_dir`` against its manifest; return what it holds.

    Args:
        data_dir: A precompute output folder.
        splits: Splits the caller needs (each must have images and captions).
        checksums: Also compare every file's sha256 (reads every byte once per process).

    Raises:
        ValueError: Naming the folder or file: no manifest (unfinished precompute), a split missing, a file
            missing, extra, or with other rows or another checksum than the manifest lists (the tables and
            the :data:`MODEL_FILES`); with ``checksums``, the row of a NaN or infinite feature.
    """
    folder = Path(data_dir).expanduser().resolve()
    manifest, digest = read_manifest(folder)
    listed: dict[str, dict] = manifest["shards"]
    on_disk = {str(p.relative_to(folder)) for p in shard_paths(folder)}
    missing, extra = sorted(set(listed) - on_disk), sorted(on_disk - set(listed))
    if missing:
        raise ValueError(f"{folder}: {len(missing)} file(s) of {MANIFEST} are missing, e.g. {missing[0]}")
    if extra:
        raise ValueError(f"{folder}: {extra[0]} is not listed in {MANIFEST} (left over from another run?)")
    counted: dict[str, dict[str, int]] = {"features": {}, "captions": {}}
    for name, expected in sorted(listed.items()):
        path = folder / name
        stat = path.stat()
        rows, sha = _file_facts(path, stat.st_size, stat.st_mtime_ns, checksums)
        if rows != int(expected["rows"]):
            raise ValueError(f"{path}: {rows} rows, {MANIFEST} lists {expected['rows']}")
        if checksums and sha != expected["sha256"]:
            listed_sha = expected["sha256"][:12]
            raise ValueError(f"{path}: sha256 {sha[:12]}… differs from {MANIFEST}'s {listed_sha}…")
        table, _, rest = name.partition("/")
        if table in counted:
            split = rest.split("/")[0].removeprefix("split=")
            counted[table][split] = counted[table].get(split, 0) + rows
    check_model_files(folder, manifest.get("files", {}), checksums)
    if checksums:  # the same pass over the bytes: features training would meet as NaN losses much later
        check_finite_features(folder, [name for name in sorted(listed) if name.startswith("features/")])
    manifest_rows = {
        "features": manifest["rows"].get("images", {}),
        "captions": manifest["rows"].get("captions", {}),
    }
    for table, per_split in counted.items():
        for split in sorted(set(per_split) | set(manifest_rows[table])):
            if per_split.get(split, 0) != manifest_rows[table].get(split, 0):
                raise ValueError(
                    f"{folder / table}/split={split}: {per_split.get(split, 0)} rows on disk, {MANIFEST} "
                    f"counts {manifest_rows[table].get(split, 0)}"
                )
    for split in splits:
        if not manifest_rows["features"].get(split) or not manifest_rows["captions"].get(split):
            have = sorted(s for s, n in manifest_rows["captions"].items() if n)
            raise ValueError(f"{folder}: split {split!r} is empty or missing; it has {have}")
        per_image = manifest.get("config", {}).get("captions_per_image")
        check_captions_match_images(folder, split, per_image if isinstance(per_image, int) else None)
    content = json.dumps(
        {key: manifest.get(key) for key in ("config_hash", "shards", "files")}, sort_keys=True
    )
    content_sha256 = hashlib.sha256(content.encode("utf-8")).hexdigest()
    return VerifiedData(
        folder, digest, dict(manifest_rows["features"]), dict(manifest_rows["captions"]), content_sha256
    )


def _ids(folder: Path, file_format: str) -> np.ndarray:
    return pads.dataset(folder, format=file_format).to_table(columns=["image_id"])["image_id"].to_numpy()


def check_captions_match_images(folder: Path, split: str, per_image: int | None) -> None:
    """ValueError naming the image ids of ``split`` whose caption count differs from the others' (or from
    ``per_image``), that have no caption, or that captions point to but the features table lacks."""
    features = folder / "features" / f"split={split}"
    captions = folder / "captions" / f"split={split}"
    images = _ids(features, shard_format(features))
    ids, counts = np.unique(_ids(captions, shard_format(captions)), return_counts=True)
    expected = per_image or int(np.bincount(counts).argmax())
    problems = [
        ("have no caption", np.setdiff1d(images, ids)),
        ("have captions but no features row", np.setdiff1d(ids, images)),
        (f"have another number of captions than {expected}", ids[counts != expected]),
    ]
    for what, bad in problems:
        if len(bad):
            raise ValueError(
                f"{folder / 'captions'}/split={split}: {len(bad)} image(s) {what}, e.g. image_id "
                f"{', '.join(str(i) for i in bad[:5])}; run the precompute again into a new folder"
            )


def parquet_files(folder: Path, tables: Sequence[str] = TABLES) -> dict[str, dict]:
    """``{relative path: {rows, sha256}}`` of the shards under ``tables`` (manifest ``shards``)."""
    return {
        str(p.relative_to(folder)): {"rows": shard_rows(p), "sha256": sha256_file(p)}
        for p in shard_paths(folder, tables)
    }


def describe_folder(folder: Path) -> dict:
    """``schema_version``, ``rows`` and ``shards`` of a folder's Parquet files as they are on disk: the
    manifest keys :func:`verify_data_dir` checks, for folders written without the precompute (tests)."""
    shards = parquet_files(folder)
    rows: dict[str, dict[str, int]] = {"images": {}, "captions": {}}
    for name, info in shards.items():
        table, _, rest = name.partition("/")
        if table in ("features", "captions"):
            split = rest.split("/")[0].removeprefix("split=")
            key = "images" if table == "features" else "captions"
            rows[key][split] = rows[key].get(split, 0) + info["rows"]
    return {"schema_version": SCHEMA_VERSION, "rows": rows, "shards": shards, "files": model_files(folder)}
