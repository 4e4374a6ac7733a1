"""``manifest.json`` and the config guard that keeps one output folder to one config."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pyarrow.parquet as pq

import vse_ray
from vse_ray.data.precompute.config import PrecomputeConfig
from vse_ray.data.store.schema import IMAGE_CACHE_DIR, IMAGE_CACHE_FILE, IMAGE_CACHE_META, SCHEMA_VERSION
from vse_ray.data.store.shards import ShardLedger, merge_nodes, part_name
from vse_ray.data.store.verify import MODEL_FILES, model_files, parquet_files
from vse_ray.file_lock import LOCK_NAME
from vse_ray.json_files import write_json_atomic

STATE_CONFIG = Path("_state") / "config.json"
FORMAT = "vse_ray.precompute"
# Every path a precompute writes, relative to its folder (POSIX, hidden temporaries named as what they
# become); --overwrite deletes a folder only when it holds nothing else. `logs`: the command's log file
# (vse_ray.log_file), written once the folder is claimed.
# `image_embeddings`: the image cache that `evaluate --image-cache` and a locked-image train write there.
_PART = r"part-\d+"
_CACHE = re.escape(IMAGE_CACHE_DIR)
_MADE_FOLDERS = re.compile(
    r"_state(/(features|captions))?|logs|(features|captions)(/split=[^/]+)?|relevance(/[^/]+){0,2}"
    rf"|{_CACHE}(/[^/]+(/split=[^/]+)?)?"
)
_MADE_FILES = re.compile(
    "|".join(
        (
            "|".join(re.escape(name) for name in ("manifest.json", "rejects.parquet", *MODEL_FILES)),
            r"_state/config\.json",
            r"_state/(features|captions)/[^/]+-\d{8}\.json",
            r"logs/vse_ray\.log",
            rf"(features|captions)/split=[^/]+/{_PART}\.(parquet|arrow)",
            rf"relevance/[^/]+/[^/]+/{_PART}\.parquet",
            rf"{_CACHE}/[^/]+/split=[^/]+/({re.escape(IMAGE_CACHE_FILE)}|{re.escape(IMAGE_CACHE_META)})",
        )
    )
)
# A hidden temporary file or folder (``.<name>.<pid>.tmp``, ``.<stem>.<pid>.tmp.<suffix>``, the image
# cache's ``.<name>.<pid>-<hex>.tmp``) of a known name.
TEMPORARY = re.compile(r"^\.(?P<stem>.+)\.\d+(-[0-9a-f]+)?\.tmp(?P<suffix>\.[^./]+)?$")


def _own_record(path: Path) -> dict | None:
    """The JSON object at ``path`` when vse_ray wrote it, else None.

    A record of this version carries ``format`` = :data:`FORMAT`; one written before that field existed is
    recognised by its own fields (``config_hash`` and the ``config`` object, plus ``schema_version`` in a
    manifest), never by its file name.
    """
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    if record.get("format") == FORMAT:
        return record
    earlier = isinstance(record.get("config_hash"), str) and isinstance(record.get("config"), dict)
    if path.name == "manifest.json":
        earlier = earlier and isinstance(record.get("schema_version"), int)
    return record if earlier else None


def _made_name(relative: Path) -> str:
    """``relative`` as a POSIX path, each hidden temporary part named as the file or folder it becomes."""
    parts = []
    for part in relative.parts:
        temporary = TEMPORARY.match(part)
        parts.append(temporary["stem"] + (temporary["suffix"] or "") if temporary else part)
    return "/".join(parts)


def _foreign_files(out: Path) -> list[str]:
    """Paths under ``out`` (relative, sorted) that no precompute writes: a file, folder or link of another
    name anywhere in the folder, a link even under a name of vse_ray's (a precompute writes none)."""
    foreign: list[str] = []
    for path in sorted(out.rglob("*")):
        relative = path.relative_to(out)
        if any(str(relative).startswith(f"{name}/") for name in foreign):
            continue  # inside a foreign folder, already named
        pattern = _MADE_FOLDERS if path.is_dir() and not path.is_symlink() else _MADE_FILES
        if path.is_symlink() or not (pattern.fullmatch(_made_name(relative)) or str(relative) == LOCK_NAME):
            foreign.append(str(relative))
    return foreign


def check_output(out: Path, config: PrecomputeConfig, overwrite: bool) -> bool:
    """Whether ``out`` must be deleted before this config's precompute (nothing is written or deleted).

    A folder counts as vse_ray's when its ``_state/config.json`` or ``manifest.json`` is a record vse_ray
    wrote (see :func:`_own_record`), judged by the record's fields, not by the file name. ``overwrite``
    deletes such a folder only when it holds nothing a precompute does not write.

    Raises:
        ValueError: If ``out`` was written with another config and not ``overwrite``, if it is a non-empty
            folder that vse_ray did not write, or if ``overwrite`` would delete files vse_ray did not write.
    """
    if out.exists() and any(path.name != LOCK_NAME for path in out.iterdir()):
        record = _own_record(out / STATE_CONFIG) or _own_record(out / "manifest.json")
        if record is None:
            raise ValueError(
                f"out folder {out} is not empty and holds no vse_ray precompute (no manifest.json or "
                f"{STATE_CONFIG} written by vse_ray); its files are kept: choose another --out "
                "(--overwrite deletes only vse_ray folders)"
            )
        previous = record["config_hash"]
        version = record.get("schema_version", 2)  # written since version 3; every earlier folder is 2
        if previous != config.hash() or version != SCHEMA_VERSION:
            if not overwrite:
                raise ValueError(
                    f"out folder {out} was written with another config (hash {previous[:12]}); the "
                    f"current config has hash {config.hash()[:12]}. Pass --overwrite to delete it and start "
                    "again, or choose another --out."
                    if previous != config.hash()
                    else f"out folder {out} was written in the store layout of schema version {version}, "
                    f"and this vse_ray writes version {SCHEMA_VERSION} (captions as Arrow IPC files), so "
                    "it cannot resume or redo it there. Pass --overwrite to delete it and start again, or "
                    "choose another --out; training still reads the folder as it is."
                )
            foreign = _foreign_files(out)
            if foreign:
                more = f" (and {len(foreign) - 1} more)" if len(foreign) > 1 else ""
                raise ValueError(
                    f"out folder {out} also holds {foreign[0]}{more}, which vse_ray did not write; "
                    "--overwrite deletes only vse_ray folders, so its files are kept: move them or choose "
                    "another --out"
                )
            return True
    return False


def claim_output(out: Path, config: PrecomputeConfig, overwrite: bool) -> None:
    """Make ``out`` hold this config's precompute: resume it, start it, or refuse to mix configs (the
    checks of :func:`check_output`)."""
    if check_output(out, config, overwrite):
        for path in out.iterdir():  # the lock file stays: a precompute holding it is deleting the rest
            if path.name != LOCK_NAME:
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    record = {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "config_hash": config.hash(),
        "config": config.resolved().to_dict(),
    }
    write_json_atomic(record, out / STATE_CONFIG)


def table_counts(out: Path, table: str, splits: tuple[str, ...]) -> tuple[dict, dict, list]:
    """Row counts per split, ``{file: {rows, sha256}}`` and rejects, read from the shard markers."""
    ledger = ShardLedger(out, table)
    counts, files, rejects = {}, {}, []
    for split in splits:
        markers = ledger.markers(split)
        counts[split] = sum(m["rows"] for m in markers)
        for marker in markers:
            files.update(marker["files"])
            rejects += [{**r, "split": split} for r in marker["rejects"]]
    return counts, files, rejects


def table_nodes(out: Path, table: str, splits: tuple[str, ...]) -> dict[str, list[str]]:
    """``{stage: [Ray node ids]}`` of the nodes that read, computed and wrote this table's shards."""
    ledger = ShardLedger(out, table)
    return merge_nodes(m.get("nodes", {}) for split in splits for m in ledger.markers(split))


def write_manifest(out: Path, config: PrecomputeConfig, extra: dict) -> dict:
    """Write ``manifest.json`` from the shard markers, the relevance files and ``extra`` (dims, timings)."""
    splits = config.splits
    images, feature_files, rejects = table_counts(out, "features", splits)
    captions, caption_files, _ = table_counts(out, "captions", splits)
    relevance_files = parquet_files(out, ("relevance",))
    relevance: dict[str, dict] = {}
    for name, info in relevance_files.items():
        _, split, source, part = name.split("/")
        entry = relevance.setdefault(f"{split}/{source}", {"folder": str(Path(name).parent), "rows": 0})
        entry["rows"] += info["rows"]
        if part == part_name(0):
            entry["captions"] = pq.read_schema(out / name).field("relevance").type.list_size
    manifest = {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "vse_ray_version": vse_ray.__version__,
        "config": config.resolved().to_dict(),
        "config_hash": config.hash(),
        "rows": {"images": images, "captions": captions, "rejects": len(rejects)},
        "shards": {**feature_files, **caption_files, **relevance_files},
        "files": model_files(out),
        "relevance": relevance,
        "rejects": rejects,
        **extra,
    }
    manifest["nodes"] = {table: table_nodes(out, table, splits) for table in ("features", "captions")}
    write_json_atomic(manifest, out / "manifest.json")
    return manifest
