"""Tiny synthetic precompute on the shared Ray instance: schema, honesty, exactness, resume."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
import torch
from PIL import Image
from pycocoevalcap.cider.cider_scorer import CiderScorer

from vse_ray.arrow_columns import list_column
from vse_ray.data import load_captions, load_features, load_manifest, load_relevance, load_vocab
from vse_ray.data.precompute.config import ExecutionOptions, PrecomputeConfig
from vse_ray.data.precompute.run import precompute
from vse_ray.data.store.readers import iter_relevance
from vse_ray.data.store.shards import sha256_file
from vse_ray.data.store.verify import shard_rows, verify_data_dir
from vse_ray.data.synthetic.dataset import generate_synthetic, synthetic_image
from vse_ray.data.synthetic.scene import scene_descriptor
from vse_ray.features import CNNFeatureExtractor
from vse_ray.relevance import CiderDocFreq, CiderVectors, TfidfSvd, scene_similarity, tokenize
from vse_ray.special_tokens import END, START

pytestmark = pytest.mark.ray
CONFIG = PrecomputeConfig(
    n_train=40, n_val=10, n_test=10, image_size=32, cnn="small", shard_size=16, svd_dim=16, vocab_min_count=1
)
OPTIONS = ExecutionOptions(cnn_actors=1, sbert_actors=1, relevance_block=4)
SIZES = {"train": 40, "val": 10, "test": 10}


@pytest.fixture(scope="module")
def tiny(ray_session, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("precompute") / "synthetic"
    precompute(CONFIG, str(out), OPTIONS, verbose=False)
    return out


def test_tables_have_the_documented_schema_and_counts(tiny):
    features = pq.read_table(tiny / "features")  # the whole folder, plain pyarrow, hive split merged
    assert features.schema.field("feature").type == pa.list_(pa.float32(), 256)
    assert features.schema.field("image").type == pa.binary()
    assert features.num_rows == 60 and len(set(features["image_id"].to_pylist())) == 60
    captions = pads.dataset(tiny / "captions", format="arrow").to_table()  # plain pyarrow, Arrow IPC files
    assert captions.num_rows == 300 and len(set(captions["caption_id"].to_pylist())) == 300
    assert captions.schema.field("tokens").type == pa.list_(pa.int32())
    assert captions.schema.field("sbert").type == pa.list_(pa.float32(), 384)
    assert captions.schema.field("svd").type == pa.list_(pa.float32(), 16)
    assert captions.schema.field("cider_ngrams").type == pa.list_(pa.int64())
    assert captions.schema.field("cider_norms").type == pa.list_(pa.float64(), 4)
    for table in (features, captions):
        assert all(table[name].null_count == 0 for name in table.column_names)
    for split, n in SIZES.items():
        assert set(pq.read_table(tiny / "features" / f"split={split}")["split"].to_pylist()) == {split}
        assert load_captions(str(tiny), split).num_rows == 5 * n


def test_load_captions_maps_the_files_and_reads_the_columns_asked_for(tiny, tmp_path):
    """Training reads a few columns of the train split, memory-mapped: nothing of the files is copied into
    the process. A folder of schema version 2 (Parquet captions, one file out of order here) reads the
    same table, its columns one chunk each; a missing column names the folder."""
    whole = load_captions(str(tiny), "train")
    ids = whole["caption_id"].to_numpy()
    assert (ids[1:] > ids[:-1]).all() and whole["svd"].num_chunks > 1
    before = pa.total_allocated_bytes()
    some = load_captions(str(tiny), "train", ["svd", "image_id"])
    assert pa.total_allocated_bytes() == before  # views of the maps: no buffer allocated
    assert some.column_names == ["svd", "image_id"]
    assert some.equals(whole.select(["svd", "image_id"]))
    older = tmp_path / "captions" / "split=train"
    older.mkdir(parents=True)
    shards = sorted((tiny / "captions" / "split=train").glob("part-*.arrow"))
    for index, shard in enumerate(reversed(shards)):
        pq.write_table(pa.ipc.open_file(shard).read_all(), older / f"part-{index}.parquet")
    from_parquet = load_captions(str(tmp_path), "train", ["svd", "image_id"])
    assert from_parquet.equals(some)
    assert all(from_parquet[name].num_chunks == 1 for name in from_parquet.column_names)
    with pytest.raises(ValueError, match=r"split=train: no column\(s\) \['nope'\]"):
        load_captions(str(tiny), "train", ["image_id", "nope"])


def test_features_are_the_cnn_of_the_rendered_pixels(tiny):
    """Honesty: stored images are the renderer's pixels and features come from them through the CNN."""
    ids, feats = load_features(str(tiny), "val")
    np.testing.assert_array_equal(ids, np.arange(40, 50))
    table = pq.read_table(tiny / "features" / "split=val").sort_by("image_id")
    pixels = np.stack([np.asarray(Image.open(io.BytesIO(b))) for b in table["image"].to_pylist()])
    np.testing.assert_array_equal(pixels, np.stack([synthetic_image(0, int(i), 32) for i in ids]))
    expected = CNNFeatureExtractor("small", None, init_seed=0).features(pixels)
    np.testing.assert_allclose(feats, expected, rtol=1e-4, atol=1e-5)


def test_captions_tokens_and_vectors(tiny):
    data = generate_synthetic(40, 10, 10, image_size=32, render=False)
    captions = load_captions(str(tiny), "test")
    texts = captions["text"].to_pylist()
    assert texts == [c for k in range(50, 60) for c in data.captions[k]]
    assert captions["image_id"].to_pylist() == [k for k in range(50, 60) for _ in range(5)]
    vocab = load_vocab(str(tiny))
    inverse = {i: w for w, i in vocab.items()}
    tokens = captions["tokens"].to_pylist()
    assert all(t[0] == START and t[-1] == END for t in tokens)
    assert " ".join(inverse[i] for i in tokens[3][1:-1]) == tokenize(texts[3])
    svd = TfidfSvd.load(tiny / "tfidf_svd.npz")
    np.testing.assert_allclose(
        np.stack(captions["svd"].to_numpy(zero_copy_only=False)), svd.transform(texts), atol=1e-6
    )
    sbert = np.stack(captions["sbert"].to_numpy(zero_copy_only=False))
    np.testing.assert_allclose(np.linalg.norm(sbert, axis=1), 1.0, atol=1e-5)
    # CIDEr-D vectors under the train document frequencies, for every split
    doc_freq = CiderDocFreq.from_dict(json.loads((tiny / "cider_df.json").read_text()))
    cider = CiderVectors.from_texts([tokenize(t) for t in texts], doc_freq)
    for column, values in (("cider_ngrams", cider.ngrams), ("cider_tfidf", cider.tfidf)):
        indptr, stored = list_column(captions[column])
        np.testing.assert_array_equal(indptr, cider.indptr)
        np.testing.assert_array_equal(stored, values)
    np.testing.assert_array_equal(list_column(captions["cider_norms"])[1].reshape(-1, 4), cider.norms)
    np.testing.assert_array_equal(captions["cider_length"].to_numpy(), cider.length)


def test_sbert_and_svd_relevance_equal_an_explicit_loop(tiny):
    captions = load_captions(str(tiny), "val")
    ids, _ = load_features(str(tiny), "val")
    owner = captions["image_id"].to_numpy()
    for source in ("sbert", "svd"):
        vecs = np.stack(captions[source].to_numpy(zero_copy_only=False))
        matrix = load_relevance(str(tiny), "val", source)
        assert matrix.shape == (10, 50) and matrix.dtype == np.float32
        for i, image_id in enumerate(ids):
            refs = [r for r in range(len(owner)) if owner[r] == image_id]
            for j in range(len(owner)):
                expected = sum(float(vecs[r] @ vecs[j]) for r in refs) / len(refs)
                assert matrix[i, j] == pytest.approx(expected, abs=1e-5)


def test_cider_relevance_equals_pycocoevalcap(tiny):
    captions = load_captions(str(tiny), "test")
    ids, _ = load_features(str(tiny), "test")
    texts = [tokenize(t) for t in captions["text"].to_pylist()]
    owner = captions["image_id"].to_numpy()
    refs = [[texts[r] for r in np.flatnonzero(owner == image_id)] for image_id in ids]
    matrix = load_relevance(str(tiny), "test", "cider")
    for j in (0, 7, 31, 49):
        scorer = CiderScorer(n=4, sigma=6.0)
        for refs_i in refs:  # one entry per image: doc freqs over the split's reference sets
            scorer.cook_append(texts[j], refs_i)
        _, scores = scorer.compute_score()
        np.testing.assert_allclose(matrix[:, j], scores, rtol=1e-5, atol=1e-5)


def test_relevance_shards_read_by_pyarrow_ray_data_and_in_chunks(tiny, ray_session):
    whole = load_relevance(str(tiny), "val", "cider")
    assert len(list((tiny / "relevance" / "val" / "cider").glob("part-*.parquet"))) == 3  # rows 0, 4, 8
    table = pq.read_table(tiny / "relevance" / "val" / "cider")  # plain pyarrow, every row shard
    assert table.schema.field("relevance").type == pa.list_(pa.float32(), 50)
    assert table["image_id"].to_pylist() == list(range(40, 50))
    np.testing.assert_array_equal(np.stack(table["relevance"].to_numpy(zero_copy_only=False)), whole)
    rows = ray_session.data.read_parquet(str(tiny / "relevance" / "val" / "cider")).take_all()
    by_id = {int(r["image_id"]): np.asarray(r["relevance"]) for r in rows}
    np.testing.assert_array_equal(np.stack([by_id[i] for i in range(40, 50)]), whole)
    chunks = list(iter_relevance(str(tiny), "val", "cider", chunk_rows=3))
    assert [len(ids) for ids, _ in chunks] == [3, 1, 3, 1, 2]  # at most 3 rows, within each shard
    np.testing.assert_array_equal(np.concatenate([r for _, r in chunks]), whole)


def test_scene_descriptors_and_relevance_come_from_the_scenes(tiny):
    data = generate_synthetic(40, 10, 10, image_size=32, render=False)
    captions = load_captions(str(tiny), "val")
    stored = np.stack(captions["scene"].to_numpy(zero_copy_only=False))
    owner = captions["image_id"].to_numpy()
    np.testing.assert_array_equal(stored, np.stack([scene_descriptor(data.scenes[k]) for k in owner]))
    matrix = load_relevance(str(tiny), "val", "scene")
    ids, _ = load_features(str(tiny), "val")
    descriptors = torch.from_numpy(stored)
    for i, image_id in enumerate(ids):
        mine = torch.from_numpy(scene_descriptor(data.scenes[image_id]))[None]
        for j in range(len(owner)):
            assert matrix[i, j] == pytest.approx(
                float(scene_similarity(mine, descriptors[j : j + 1])), abs=1e-6
            )
    assert (matrix[np.arange(10)[:, None] == (owner - 40)[None, :]] == 1).all()


def test_manifest_records_counts_checksums_and_config(tiny):
    manifest = load_manifest(str(tiny))
    assert manifest["schema_version"] == 3 and manifest["config_hash"] == CONFIG.hash()
    assert manifest["rows"]["images"] == SIZES and manifest["rows"]["rejects"] == 0
    assert manifest["dims"] == {
        "feature": 256,
        "feature_shape": [256],
        "regions": None,
        "feature_dtype": "float32",
        "sbert": 384,
        "svd": 16,
    }
    patterns = ("features/split=*/*.parquet", "captions/split=*/*.arrow", "relevance/*/*/*.parquet")
    files = sorted(str(p.relative_to(tiny)) for g in patterns for p in tiny.glob(g))
    assert sorted(manifest["shards"]) == files
    for name, info in manifest["shards"].items():
        assert sha256_file(tiny / name) == info["sha256"]
        assert shard_rows(tiny / name) == info["rows"]
    assert sorted(manifest["relevance"]) == [
        f"{s}/{r}" for s in ("test", "val") for r in ("cider", "sbert", "scene", "svd")
    ]
    assert json.loads((tiny / "cider_df.json").read_text())["log_num_docs"] == pytest.approx(np.log(40))
    assert manifest["format"] == "vse_ray.precompute"
    names = ("vocab.json", "cider_df.json", "tfidf_svd.npz", "concepts.npz")
    assert manifest["files"] == {name: {"sha256": sha256_file(tiny / name)} for name in names}
    verify_data_dir(tiny, ("train", "val", "test"))  # every image has its 5 captions


def test_loaders_name_a_missing_split(tiny):
    with pytest.raises(ValueError, match=r"split 'dev' does not exist .* it has \['test', 'train', 'val'\]"):
        load_features(str(tiny), "dev")
    with pytest.raises(ValueError, match="relevance sources"):
        load_relevance(str(tiny), "val", "spice")


def test_changed_config_is_refused(tiny):
    with pytest.raises(ValueError, match="another config"):
        precompute(PrecomputeConfig(**{**CONFIG.__dict__, "n_train": 41}), str(tiny), OPTIONS, verbose=False)


def test_rerun_skips_and_interrupted_run_completes_identically(tiny):
    snapshot = {p: sha256_file(p) for p in tiny.rglob("*") if p.is_file() and "_state" not in p.parts}
    assert precompute(CONFIG, str(tiny), OPTIONS, verbose=False).processed == {"images": 0, "captions": 0}
    # Simulate a run killed inside shard train-00000016: its marker never written, a partial file left over.
    (tiny / "_state" / "features" / "train-00000016.json").unlink()
    (tiny / "features" / "split=train" / "part-00000016.parquet").unlink()
    (tiny / "features" / "split=train" / "part-00000020.parquet").write_bytes(b"partial")
    shutil.rmtree(tiny / "relevance" / "val" / "cider")
    summary = precompute(CONFIG, str(tiny), OPTIONS, verbose=False)
    assert summary.processed == {"images": 16, "captions": 0}
    after = {p: sha256_file(p) for p in tiny.rglob("*") if p.is_file() and "_state" not in p.parts}
    changed = {p.name for p in after if after[p] != snapshot.get(p)}
    assert set(after) == set(snapshot) and changed <= {"manifest.json"}  # same files, same bytes


def test_the_ladder_codes_tokens_file_gives_its_vocabulary_and_tokens(ray_session, tmp_path):
    """`vocab_file` naming the ladder code's tokens file ([tokens, counts], gzip): its run-time vocabulary
    (<padding> 0 ... <unknown> 3, then the words counted 5 times or more, sorted), captions tokenised with the
    punctuation removed ("medium-sized" is two words there)."""
    import gzip
    import string

    from nltk.tokenize import NLTKWordTokenizer

    def ladder_words(text: str) -> list[str]:
        kept = "".join(" " if c in string.punctuation and c != "\\" else c for c in text.lower())
        return NLTKWordTokenizer().tokenize(" ".join(kept.split()))

    data = generate_synthetic(40, 10, 10, image_size=32, render=False)
    counts: dict[str, int] = {}
    for caption in (c for caps in data.captions for c in caps):
        for word in ladder_words(caption):
            counts[word] = counts.get(word, 0) + 1
    counts[","] = counts["-"] = 99  # counted, yet never a token of a caption once punctuation is removed
    path = tmp_path / "f30k.all.toks.gz"
    path.write_bytes(gzip.compress(json.dumps([{}, counts]).encode()))
    out = tmp_path / "ladder"
    config = PrecomputeConfig(**{**CONFIG.__dict__, "vocab_file": str(path), "relevance_sources": ("svd",)})
    precompute(config, str(out), OPTIONS, verbose=False)
    kept = sorted(w for w, n in counts.items() if n >= 5)
    word2idx = {w: i for i, w in enumerate(["<pad>", "<start>", "<end>", "<unk>", *kept])}
    assert load_vocab(str(out)) == word2idx and len(kept) < len(counts)  # rare words read <unknown>
    captions = load_captions(str(out), "test")
    for text, tokens in zip(captions["text"].to_pylist(), captions["tokens"].to_pylist(), strict=True):
        assert tokens == [1, *(word2idx.get(w, 3) for w in ladder_words(text)), 2], text


def test_released_vocabulary_keeps_its_ids_and_tokenizer(ray_session, tmp_path):
    """`vocab_file`: the file's ids (<start> 1, <end> 2, <unk> 3 as SCAN/SGRAF number them), captions
    tokenised as nltk's word_tokenize(caption.lower()), the file recorded in the manifest."""
    from nltk.tokenize import NLTKWordTokenizer

    data = generate_synthetic(40, 10, 10, image_size=32, render=False)
    words = sorted(
        {w for caps in data.captions for c in caps for w in NLTKWordTokenizer().tokenize(c.lower())}
    )
    specials = ["<pad>", "<start>", "<end>", "<unk>"]
    word2idx = {w: i for i, w in enumerate(specials + words[::-1][1:])}  # the first word stays unknown
    path = tmp_path / "f30k_precomp_vocab.json"
    path.write_text(json.dumps({"word2idx": word2idx, "idx2word": {}, "idx": len(word2idx)}))
    out = tmp_path / "released"
    config = PrecomputeConfig(**{**CONFIG.__dict__, "vocab_file": str(path), "relevance_sources": ("svd",)})
    precompute(config, str(out), OPTIONS, verbose=False)
    assert load_vocab(str(out)) == word2idx
    captions = load_captions(str(out), "test")
    for text, tokens in zip(captions["text"].to_pylist(), captions["tokens"].to_pylist(), strict=True):
        ids = [word2idx.get(w, 3) for w in NLTKWordTokenizer().tokenize(text.lower())]
        assert tokens == [1, *ids, 2], text
    assert load_manifest(str(out))["vocab"]["sha256"] == sha256_file(path)
