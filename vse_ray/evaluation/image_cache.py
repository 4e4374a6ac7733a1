"""A frozen image tower's embeddings, computed once into the data folder by a Ray Data actor pool.

A model whose image side is a fixed function of the stored image (a CLIP tower scored zero-shot) gives the
same vectors on every run; ``vse-ray evaluate --model clip --image-cache`` and a locked-image training with
``image_cache`` (:mod:`vse_ray.train.locked_image`) compute them once and later runs read them instead of
running the tower again. Layout, beside the precompute tables (left as they are)::

    image_embeddings/<model>-<params hash>/split=<split>/part-00000000.parquet
        image_id int64, embedding fixed_size_list<float32>[E]: `encode_images` of each stored image (unit
        vectors), in the split's stored image order
    image_embeddings/<model>-<params hash>/split=<split>/cache.json
        model, model_params, files, rows, embed_dim: what computed them

The stage reads the split's ``image`` column with Ray Data, decodes it in ``map_batches`` and runs the tower
in a pool of actors, one per GPU when the cluster has GPUs, else CPU actors sharing the cores (the precompute
stages' resource plan, :func:`vse_ray.data.precompute.resources.plan_resources`). The cache is named by the
model's options and the files they name (`model_label`): a weights file or folder is known by its absolute
path and each file's size and modification time, so other weights under the same relative path, or weights
rewritten in place, get a cache (and a zero-shot run) of their own. The split's folder appears whole, renamed
from a hidden folder of a unique name: two commands computing one cache at once never share a file, and the
second finds the first's folder finished and keeps it.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from vse_ray.arrow_columns import fixed_size_list, vectors
from vse_ray.data.store.readers import read_features_table
from vse_ray.data.store.schema import IMAGE_CACHE_DIR, IMAGE_CACHE_FILE, IMAGE_CACHE_META
from vse_ray.data.store.split_data import ImageStore, decode_png_column


def named_files(model_params: dict[str, Any]) -> dict[str, list[list[Any]]]:
    """``{option value: [[absolute path, size, mtime_ns], ...]}`` of each string option naming a file or a
    folder here (a folder: every file under it): what identifies the weights and configs a model reads.

    A file's size and modification time (ns) stand for its content: a stat costs microseconds, where
    hashing a published CLIP checkpoint (0.6-1.7 GB) would cost seconds in every command and worker, and
    a rewrite in place changes the time."""
    found: dict[str, list[list[Any]]] = {}
    for value in model_params.values():
        path = Path(value).expanduser() if isinstance(value, str) and value else None
        if path is None or not path.exists():
            continue
        path = path.resolve()
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        found[value] = [[str(f), f.stat().st_size, f.stat().st_mtime_ns] for f in files]
    return found


def model_label(model: str, model_params: dict[str, Any]) -> str:
    """``<model>-<first digits of the sha256 of its options and their files>``: the name of a model's cache
    folder, and of its zero-shot report and run (`named_files`: other weights give another name)."""
    key = {"model_params": model_params, "files": named_files(model_params)}
    canonical = json.dumps(key, sort_keys=True, default=str)
    return f"{model}-{hashlib.sha256(canonical.encode()).hexdigest()[:8]}"


def cache_folder(data_dir: str, label: str, split: str) -> Path:
    """``<data_dir>/image_embeddings/<label>/split=<split>``."""
    return Path(data_dir).expanduser().resolve() / IMAGE_CACHE_DIR / label / f"split={split}"


class TowerEmbedder:
    """Ray Data actor: a batch's ``image`` PNGs → ``embedding`` rows of the model's `encode_images`."""

    def __init__(self, model: str, model_params: dict[str, Any], device: str, num_threads: int | None):
        import torch

        from vse_ray.models import build_model

        if num_threads:
            torch.set_num_threads(num_threads)
        self.device = torch.device(device)
        self.model = build_model(model, **model_params).to(self.device).eval()

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        import torch

        pixels = torch.from_numpy(decode_png_column(pa.array(list(batch["image"]), type=pa.binary())))
        with torch.no_grad():
            embedding = self.model.encode_images(pixels.to(self.device)).float().cpu().numpy()
        return {"image_id": np.asarray(batch["image_id"], dtype=np.int64), "embedding": embedding}


def compute_image_cache(
    data_dir: str,
    split: str,
    model: str,
    model_params: dict[str, Any],
    label: str,
    batch_size: int = 64,
    actors: int | None = None,
) -> Path:
    """Run the image tower of `model` over the stored images of `split` once and write the cache folder
    (atomically: a half-written cache is never read); returns it. Ray must be running."""
    import ray

    from vse_ray.data.precompute.resources import plan_resources

    folder = cache_folder(data_dir, label, split)
    source = Path(data_dir).expanduser().resolve() / "features" / f"split={split}"
    res = plan_resources(actors, "image cache actors")
    ds = ray.data.read_parquet(str(source), columns=["image_id", "image"])
    ds = ds.map_batches(
        TowerEmbedder,
        fn_constructor_kwargs={
            "model": model,
            "model_params": model_params,
            "device": res.device,
            "num_threads": res.torch_threads,
        },
        batch_size=batch_size,
        compute=ray.data.ActorPoolStrategy(size=res.actors),
        num_cpus=res.actor_cpus,
        num_gpus=res.actor_gpus,
    )
    rows = [batch for batch in ds.iter_batches(batch_format="numpy", batch_size=None)]
    ids = np.concatenate([b["image_id"] for b in rows])
    embeddings = np.concatenate([b["embedding"] for b in rows]).astype(np.float32)
    order = read_features_table(data_dir, split, ["image_id"])["image_id"].to_numpy()
    position = {int(image_id): row for row, image_id in enumerate(ids)}
    take = np.array([position[int(i)] for i in order], dtype=np.int64)  # the split's stored order
    return write_image_cache(folder, order, embeddings[take], model, model_params)


def write_image_cache(
    folder: Path, image_ids: np.ndarray, embeddings: np.ndarray, model: str, model_params: dict[str, Any]
) -> Path:
    """Write a cache folder of `embeddings` (n, E), row k the embedding of `image_ids[k]` (the split's stored
    order), atomically: both files go into a hidden folder of a unique name, renamed to `folder` whole.
    When another writer's finished folder is there first, it is kept (it holds the same rows). Returns the
    folder."""
    table = pa.table(
        {
            "image_id": np.asarray(image_ids, dtype=np.int64),
            "embedding": fixed_size_list(np.asarray(embeddings, dtype=np.float32)),
        }
    )
    meta = {
        "model": model,
        "model_params": model_params,
        "files": named_files(model_params),
        "rows": len(image_ids),
        "embed_dim": int(embeddings.shape[1]),
    }
    folder.parent.mkdir(parents=True, exist_ok=True)
    temporary = folder.with_name(f".{folder.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    temporary.mkdir()  # a name no other writer has (the pid), nor another thread of this one
    try:
        pq.write_table(table, temporary / IMAGE_CACHE_FILE)
        (temporary / IMAGE_CACHE_META).write_text(json.dumps(meta, indent=2, default=str))
        os.rename(temporary, folder)  # refused when another writer's folder is there: never replaced
    except BaseException as err:
        shutil.rmtree(temporary, ignore_errors=True)
        if not (isinstance(err, OSError) and (folder / IMAGE_CACHE_FILE).is_file()):
            raise
    return folder


def has_image_cache(data_dir: str, label: str, split: str) -> bool:
    """Whether the data folder holds a finished cache of `split` for the model `label` names."""
    return (cache_folder(data_dir, label, split) / IMAGE_CACHE_FILE).is_file()


def ensure_image_cache(
    data_dir: str, split: str, model: str, model_params: dict[str, Any], label: str, batch_size: int
) -> None:
    """Compute the cache of `split` (`compute_image_cache`, Ray started when it is not) unless it is there."""
    if not has_image_cache(data_dir, label, split):
        from vse_ray.ray_session import ensure_ray  # Ray is imported only when a cache is computed

        ensure_ray()
        compute_image_cache(data_dir, split, model, model_params, label, batch_size)


def read_image_cache(data_dir: str, label: str, split: str) -> tuple[np.ndarray, np.ndarray] | None:
    """``(image_ids, embeddings (n, E) float32)`` of a finished cache, in the split's stored order; None
    when there is none. The embeddings are an array of their own: Arrow's view of its buffer is read-only,
    which a tensor made from it (`ImageStore.tensor_rows`) must not be."""
    path = cache_folder(data_dir, label, split) / IMAGE_CACHE_FILE
    if not path.is_file():
        return None
    table = pq.read_table(path)
    return table["image_id"].to_numpy().astype(np.int64), np.array(vectors(table["embedding"]))


def cached_images(
    data_dir: str, split: str, model: str, model_params: dict[str, Any], label: str, batch_size: int
) -> ImageStore:
    """The image side of `split` as the cache for `label` holds it (computed first when there is none)."""
    ensure_image_cache(data_dir, split, model, model_params, label, batch_size)
    cached = read_image_cache(data_dir, label, split)
    assert cached is not None
    return ImageStore(*cached)
