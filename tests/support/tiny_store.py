"""A tiny precompute-format folder (written with plain pyarrow per the documented layout) for model tests.

Ten classes (colour × shape); image features are class prototypes plus noise, captions name the class, so a
model can learn it in a few epochs. S-BERT/SVD columns are class vectors plus noise (graded relevance); the
``scene`` column describes each class as a one-object scene (the scene relevance source).
"""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from PIL import Image

from vse_ray.data.store.schema import relevance_table
from vse_ray.data.store.verify import describe_folder
from vse_ray.data.synthetic.scene import ObjectGroup, Scene, scene_descriptor
from vse_ray.relevance import CiderVectors, scene_similarity, tokenize
from vse_ray.relevance.cider import cider_matrix
from vse_ray.relevance.cider_columns import cider_arrays
from vse_ray.relevance.cider_doc_freq import cider_doc_freq
from vse_ray.relevance.sources import CIDER_COLUMNS
from vse_ray.train.config import TrainConfig

COLOURS = ("red", "green", "blue", "yellow", "purple")
SHAPES = ("ball", "box")
TEMPLATES = ("a {c} {s}", "the {c} {s}", "one {c} {s} here", "a {s} that is {c}", "a picture of a {c} {s}")
SPLIT_SIZES = {"train": 96, "val": 20, "test": 20}
FEATURE_DIM, SBERT_DIM, SVD_DIM = 32, 16, 8


def _vocab() -> dict[str, int]:
    words = sorted({w for t in TEMPLATES for w in t.split() if "{" not in w} | set(COLOURS) | set(SHAPES))
    return {"<pad>": 0, "<unk>": 1, "<start>": 2, "<end>": 3} | {w: i + 4 for i, w in enumerate(words)}


def _png(colour_index: int, rng: np.random.Generator, side: int = 16) -> bytes:
    pixels = rng.integers(0, 40, (side, side, 3), dtype=np.uint8)
    pixels[side // 4 : 3 * side // 4, side // 4 : 3 * side // 4, colour_index % 3] = 200 + 10 * (
        colour_index // 3
    )
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG")
    return buf.getvalue()


def _class_scenes() -> np.ndarray:
    """(10, D) scene descriptors: class c is one medium {colour} {shape}, centred, on a gray background."""
    return np.stack(
        [
            scene_descriptor(
                Scene("gray", "plain", (ObjectGroup(SHAPES[c // 5], COLOURS[c % 5], "medium", "center", 1),))
            )
            for c in range(10)
        ]
    )


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def region_table(ids: np.ndarray, split: str, feats: np.ndarray, dtype: str) -> pa.Table:
    """(n, R, D) features as the documented region layout (nested fixed-size lists), no PNG column."""
    n, regions, dim = feats.shape
    values = pa.array(feats.astype(dtype).ravel())
    nested = pa.FixedSizeListArray.from_arrays(pa.FixedSizeListArray.from_arrays(values, dim), regions)
    split_col = pa.array([split] * n).dictionary_encode()
    return pa.table({"image_id": ids, "split": split_col, "feature": nested})


def write_tiny_store(
    root: Path, seed: int = 0, regions: int | None = None, dtype: str = "float32", image_side: int = 16
) -> Path:
    """Write the folder under `root` and return its path; with `regions`, R region features per image
    (each the class prototype plus noise) in Arrow IPC shards of `dtype`; stored images of `image_side`."""
    rng = np.random.default_rng(seed)
    vocab = _vocab()
    protos = {n: rng.normal(size=(10, d)) for n, d in (("f", FEATURE_DIM), ("s", SBERT_DIM), ("v", SVD_DIM))}
    image_id, caption_id = 0, 0
    scenes = _class_scenes()
    for split, n_images in SPLIT_SIZES.items():
        classes = rng.integers(0, 10, n_images)
        ids = np.arange(image_id, image_id + n_images, dtype=np.int64)
        image_id += n_images
        feats = protos["f"][classes] + 0.5 * rng.normal(size=(n_images, FEATURE_DIM))
        texts, cap_img = [], []
        for img, cls in zip(ids, classes, strict=True):
            colour, shape = COLOURS[cls % 5], SHAPES[cls // 5]
            texts += [t.format(c=colour, s=shape) for t in TEMPLATES]
            cap_img += [img] * len(TEMPLATES)
        cap_cls = np.repeat(classes, len(TEMPLATES))
        n_caps = len(texts)
        sbert = _unit(protos["s"][cap_cls] + 0.3 * rng.normal(size=(n_caps, SBERT_DIM)))
        svd = _unit(protos["v"][cap_cls] + 0.3 * rng.normal(size=(n_caps, SVD_DIM)))
        feature_table = pa.table(
            {
                "image_id": ids,
                "split": [split] * n_images,
                "feature": pa.FixedSizeListArray.from_arrays(
                    pa.array(feats.astype(np.float32).ravel()), FEATURE_DIM
                ),
                "image": [_png(int(c), rng, image_side) for c in classes],
            }
        )
        refs = [[tokenize(t) for t in texts[k * 5 : (k + 1) * 5]] for k in range(n_images)]
        if split == "train":  # first: the CIDEr-D vectors of every split use its document frequencies
            doc_freq = cider_doc_freq(refs)
        cider = CiderVectors.from_texts([tokenize(t) for t in texts], doc_freq)
        cider_columns = {
            "cider_ngrams": np.split(cider.ngrams, cider.indptr[1:-1]),
            "cider_tfidf": np.split(cider.tfidf, cider.indptr[1:-1]),
            "cider_norms": cider.norms,
            "cider_length": cider.length,
        }
        caption_table = pa.table(
            {
                "caption_id": np.arange(caption_id, caption_id + n_caps, dtype=np.int64),
                "image_id": np.array(cap_img, dtype=np.int64),
                "split": [split] * n_caps,
                "text": texts,
                "tokens": pa.array(
                    [[vocab["<start>"], *(vocab[w] for w in t.split()), vocab["<end>"]] for t in texts],
                    type=pa.list_(pa.int32()),
                ),
                "sbert": pa.FixedSizeListArray.from_arrays(pa.array(sbert.ravel()), SBERT_DIM),
                "svd": pa.FixedSizeListArray.from_arrays(pa.array(svd.ravel()), SVD_DIM),
                **dict(zip(CIDER_COLUMNS, cider_arrays(cider_columns), strict=True)),
                "scene": pa.FixedSizeListArray.from_arrays(
                    pa.array(scenes[cap_cls].ravel()), scenes.shape[1]
                ),
            }
        )
        caption_id += n_caps
        for kind, table in (("features", feature_table), ("captions", caption_table)):
            (root / kind / f"split={split}").mkdir(parents=True)
            if kind == "features" and regions:
                noise = rng.normal(size=(n_images, regions, FEATURE_DIM))
                table = region_table(ids, split, feats[:, None, :] + 0.5 * noise, dtype)
            if kind == "captions" or regions:  # Arrow IPC, one record batch, as precompute writes them
                with pa.ipc.new_file(
                    root / kind / f"split={split}" / "part-00000000.arrow", table.schema
                ) as w:
                    w.write_table(table.combine_chunks(), max_chunksize=max(table.num_rows, 1))
                continue
            pq.write_table(table, root / kind / f"split={split}" / "part-0.parquet")
        if split == "train":
            continue
        own = sbert.reshape(n_images, len(TEMPLATES), SBERT_DIM)
        matrices = {
            "sbert": (own @ sbert.T).mean(axis=1),
            "svd": (_unit(svd.reshape(n_images, 5, SVD_DIM).mean(axis=1)) @ svd.T),
            "cider": cider_matrix([tokenize(t) for t in texts], refs).T,
            "scene": scene_similarity(
                torch.from_numpy(scenes[classes]), torch.from_numpy(scenes[cap_cls])
            ).numpy(),
        }
        for name, matrix in matrices.items():
            (root / "relevance" / split / name).mkdir(parents=True)
            path = root / "relevance" / split / name / "part-00000000.parquet"
            pq.write_table(relevance_table(ids, matrix, n_caps), path)
    (root / "vocab.json").write_text(json.dumps(vocab))
    (root / "cider_df.json").write_text(json.dumps(doc_freq.to_dict()))
    (root / "manifest.json").write_text(
        json.dumps(
            {
                **describe_folder(root),
                "dataset": "tiny",
                "dims": {
                    "feature": FEATURE_DIM,
                    "feature_shape": [regions, FEATURE_DIM] if regions else [FEATURE_DIM],
                    "regions": regions,
                    "sbert": SBERT_DIM,
                    "svd": SVD_DIM,
                },
                "vocab_size": len(vocab),
            }
        )
    )
    return root


def tiny_config(data_dir: Path, output_dir: Path, **overrides) -> TrainConfig:
    """A fast configuration on the tiny folder (small dims, high learning rate, 3 epochs)."""
    base = TrainConfig(
        data_dir=str(data_dir),
        loss="vsepp",
        epochs=3,
        batch_size=16,
        lr=2e-3,
        word_dim=16,
        embed_dim=32,
        cs_ks=(5, 10),
        ncs_ks=(1, 5),
        output_dir=str(output_dir),
    )
    return dataclasses.replace(base, **overrides)
