"""`parity/run_parity.py`: both sides of a run get the same settings (VSE++, SCAN, SGRAF SGR, GSMN, VSRN,
CVSE); VSE++ reads pooled regions, GSMN the regions with `gsmn_files.py`'s boxes and caption graphs, which
vse_ray's `gsmn-data` reads as GSMN's own, CVSE the concept files and WordNet folder of `cvse_files.py`, which
both codes read."""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from vse_ray.data.precompute.concepts import token_concept_index
from vse_ray.data.precompute.lemmas import load_noun_lemmatizer
from vse_ray.models.gsmn import governors
from vse_ray.official.cvse_concepts import read_concept_vectors, read_numpy_pickle, read_official_concepts
from vse_ray.official.gsmn_data import write_gsmn_data
from vse_ray.train.config import TrainConfig

PARITY = Path(__file__).resolve().parents[2] / "parity"


@pytest.fixture(scope="module")
def run_parity():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(PARITY))
    try:
        yield importlib.import_module("run_parity")
    finally:
        sys.path.remove(str(PARITY))


def _parsed(run_parity, monkeypatch, *argv: str):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(sys, "argv", ["run_parity.py", "--official", "checkout", "--out", "out", *argv])
    return run_parity.parse_args()


@pytest.mark.parametrize("extra", [(), ("--batch", "32", "--hinges", "sum")], ids=["recipe", "batch_sum"])
@pytest.mark.parametrize("system", ["vsepp", "scan", "sgr", "gsmn", "vsrn"])
def test_both_sides_of_a_system_get_the_same_settings(
    run_parity, monkeypatch, tmp_path, system, extra
) -> None:  # type: ignore[no-untyped-def]
    args = _parsed(
        run_parity,
        monkeypatch,
        "--system",
        system,
        "--epochs",
        "3",
        "--embed-dim",
        "64",
        "--sim-dim",
        "16",
        *extra,
    )
    max_of_hinges = not extra
    (tmp_path / "f30k_precomp").mkdir()
    layout = (7, 24) if system == "vsepp" else (7, 12, 24)
    np.save(tmp_path / "f30k_precomp" / "train_ims.npy", np.zeros(layout, np.float32))
    if system == "vsrn":  # its decoder's max_len follows the longest caption
        for split, captions in (("train", "a b c\n"), ("dev", "a b c d e\n"), ("test", "a\n")):
            (tmp_path / "f30k_precomp" / f"{split}_caps.txt").write_text(captions * 5)
        (tmp_path / args.data_name).symlink_to(tmp_path / "f30k_precomp")
    command = run_parity.official_command(tmp_path, 5, args)
    options = command[command.index("--") + 1 :]
    official = {
        flag[2:]: (value if not value.startswith("--") else True)
        for flag, value in zip(options, [*options[1:], "--"], strict=True)
        if flag.startswith("--")
    }
    config = TrainConfig(**run_parity.vse_ray_config(tmp_path, tmp_path, 5, args))
    assert command[command.index("--seed") + 1] == "5" and config.seed == 5
    assert float(official["learning_rate"]) == config.lr
    assert int(official["lr_update"]) == config.lr_update
    assert int(official["num_epochs"]) == config.epochs == 3
    assert int(official["batch_size"]) == config.batch_size
    assert int(official["embed_size"]) == config.embed_dim == 64
    assert int(official["word_dim"]) == config.word_dim
    assert float(official["margin"]) == config.loss_params["margin"]
    assert float(official["grad_clip"]) == config.grad_clip
    assert int(official["img_dim"]) == 24
    assert int(official["batch_size"]) == (32 if extra else run_parity.BATCH[system])
    assert config.loss == ("vsepp" if max_of_hinges else "vse0")
    assert config.warmup_epochs == 0 and config.negatives == "diagonal"
    assert command[command.index("--system") + 1] == run_parity.LINEAGE[system]
    if system == "sgr":  # SGRAF's opts.py: max of hinges and the Bi-GRU are on unless their flags are given
        assert ("max_violation" in official) is not max_of_hinges and "bi_gru" not in official
        assert config.model == "sgraf" and config.model_params["module"] == official["module_name"].lower()
        assert int(official["sim_dim"]) == config.model_params["sim_dim"] == 16
        assert int(official["sgr_step"]) == config.model_params["sgr_steps"]
        assert config.model_params["n_regions"] == 12 and config.model_params["dropout"] == 0.4
        return
    assert ("max_violation" in official) is max_of_hinges and config.model == system
    if system == "scan":
        assert official["cross_attn"] == config.model_params["direction"] == "t2i"
        assert official["agg_func"] == "LogSumExp" and config.model_params["aggregation"] == "lse"
        assert float(official["lambda_lse"]) == config.model_params["lambda_lse"]
        assert float(official["lambda_softmax"]) == config.model_params["lambda_softmax"]
        assert official["bi_gru"] is True
    if system == "gsmn":
        assert official["is_sparse"] is True and config.model_params["sparse"] is True
        assert config.model_params["graph_path"] == str(tmp_path / "scenes_r12_gsmn_vse_ray" / "graphs.json")
        assert float(official["lambda_softmax"]) == config.model_params["lambda_softmax"] == 20
        assert official["bi_gru"] is True
        for name in ("num_block", "hid_dim"):
            assert int(official[name]) == config.model_params[name]
        assert int(official["feat_dim"]) == config.model_params["num_block"]
        assert config.model_params["n_kernels"] == 8
    if system == "vsrn":
        caption = config.model_params
        assert int(official["dim_vid"]) == 64 and caption["variant"] == "f30k"
        assert int(official["dim_hidden"]) == caption["caption_hidden"]
        assert int(official["dim_word"]) == caption["caption_word_dim"]
        assert int(official["max_len"]) == caption["max_len"] == 5 + 3  # the longest caption, no cut
        assert float(official["input_dropout_p"]) == caption["caption_dropout"]
        assert caption["caption_weight"] == 1.0


def test_data_names_and_result_folders(run_parity, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    assert _parsed(run_parity, monkeypatch).data_name == "scenes"  # VSE∞'s folders as before
    assert _parsed(run_parity, monkeypatch).tag == "adam"
    scan = _parsed(run_parity, monkeypatch, "--system", "scan", "--dataset", "objects")
    assert (scan.data_name, scan.tag, scan.regions) == ("objects_r12", "scan", 12)
    vsepp = _parsed(run_parity, monkeypatch, "--system", "vsepp", "--regions", "12")
    assert vsepp.data_name == "scenes_r12_pooled"
    sgr = _parsed(run_parity, monkeypatch, "--system", "sgr")
    assert (sgr.data_name, sgr.tag, sgr.regions) == ("scenes_r12", "sgr", 12)
    gsmn = _parsed(run_parity, monkeypatch, "--system", "gsmn", "--dataset", "objects")
    assert (gsmn.data_name, gsmn.tag, gsmn.regions) == ("objects_r12_gsmn", "gsmn", 12)


def test_pooled_features_are_each_images_mean_region(run_parity, tmp_path) -> None:  # type: ignore[no-untyped-def]
    regions, pooled = tmp_path / "regions", tmp_path / "pooled"
    regions.mkdir()
    rng = np.random.default_rng(0)
    ims = {}
    for split in ("train", "dev", "test"):
        ims[split] = rng.normal(size=(3, 5, 4)).astype(np.float32)
        np.save(regions / f"{split}_ims.npy", ims[split])
        (regions / f"{split}_caps.txt").write_text("a b\n" * 15)
    (regions / "vocab.json").write_text("{}")
    run_parity.pool_regions(regions, pooled)
    for split in ("train", "dev", "test"):
        np.testing.assert_allclose(np.load(pooled / f"{split}_ims.npy"), ims[split].mean(1), rtol=1e-6)
        assert (pooled / f"{split}_caps.txt").read_text() == "a b\n" * 15
    assert (pooled / "vocab.json").read_text() == "{}"


def test_gsmn_files_read_by_vse_ray_as_gsmns_own(run_parity, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The grid boxes reach vse_ray's box columns unchanged (image size 1); each word's governor is the next
    word, the last word the root; the official caption ids are `<start>`, the words (`<unk>` if unknown),
    `<end>`."""
    import gsmn_files

    regions, gsmn, boxed = tmp_path / "regions", tmp_path / "gsmn", tmp_path / "boxed"
    regions.mkdir()
    words = ["<pad>", "<start>", "<end>", "<unk>", "a", "red", "ball"]
    word2idx = {w: i for i, w in enumerate(words)}
    (regions / "vocab.json").write_text(json.dumps({"word2idx": word2idx}))
    captions = ["a red ball", "a blue ball", "ball", "red ball", "a ball"] * 2
    for split in ("train", "dev", "test"):
        np.save(regions / f"{split}_ims.npy", np.ones((2, 6, 3), np.float32))
        (regions / f"{split}_caps.txt").write_text("\n".join(captions) + "\n")
    gsmn_files.write_gsmn_folder(regions, gsmn)
    assert (gsmn / "dev_precaps_stan.txt").read_text().splitlines()[:2] == ["1,4,5,6,2", "1,4,3,6,2"]
    write_gsmn_data(gsmn, boxed)
    ims = np.load(boxed / "test_ims.npy")
    assert ims.shape == (2, 6, 7)
    np.testing.assert_array_equal(ims[1, :, 3:], gsmn_files.grid_boxes(6))
    boxes = gsmn_files.grid_boxes(6)
    assert len({tuple(c) for c in boxes[:, :2]}) == 6 and boxes.min() >= 0 and boxes.max() <= 1
    graphs = json.loads((boxed / "graphs.json").read_text())
    # positions: 0 <start>, words 1..3, 4 <end>; the root (word 3) has no governor
    assert governors(graphs["a red ball"], 5).tolist() == [-1, 2, 3, -1, -1]
    assert governors(graphs["ball"], 3).tolist() == [-1, -1, -1]


def test_a_cached_run_of_other_settings_stops_the_comparison(run_parity, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    args = _parsed(run_parity, monkeypatch, "--system", "scan", "--epochs", "2")
    cached = tmp_path / args.data_name / args.tag / "vse_ray_s0.json"
    cached.parent.mkdir(parents=True)
    settings = run_parity.vse_ray_config(tmp_path, tmp_path, 0, args)
    record = {"seed": 0, "val_rsum": [1.0, 2.0], "test_rsum": 3.0, "settings": settings}
    cached.write_text(json.dumps(record))
    assert run_parity.run_one("vse_ray", 0, args, tmp_path, tmp_path, tmp_path) == record
    for other in ("--epochs", "3"), ("--embed-dim", "64"):
        args = _parsed(run_parity, monkeypatch, "--system", "scan", "--epochs", "2", *other)
        with pytest.raises(SystemExit, match="a run of other settings"):
            run_parity.run_one("vse_ray", 0, args, tmp_path, tmp_path, tmp_path)


def test_lr_sets_both_sides_learning_rate(run_parity, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "f30k_precomp").mkdir()
    np.save(tmp_path / "f30k_precomp" / "train_ims.npy", np.zeros((7, 12, 24), np.float32))
    for lr, expected in ((None, 2e-4), ("2e-3", 2e-3)):
        extra = ("--lr", lr) if lr else ()
        args = _parsed(run_parity, monkeypatch, "--system", "sgr", *extra)
        command = run_parity.official_command(tmp_path, 0, args)
        last = len(command) - 1 - command[::-1].index("--learning_rate")  # the official parser keeps the last
        assert float(command[last + 1]) == expected
        assert run_parity.vse_ray_config(tmp_path, tmp_path, 0, args)["lr"] == expected


def test_a_run_counts_its_own_cpu_time(run_parity) -> None:  # type: ignore[no-untyped-def]
    busy = "import sys, time; end = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"
    busy += "print('done'); print('oops', file=sys.stderr); sys.exit(3)"
    code, stdout, stderr, cpu = run_parity.run_timed([sys.executable, "-c", busy], dict(os.environ))
    assert (code, stdout, stderr) == (3, "done\n", "oops\n")
    assert 0.3 <= cpu < 5


def test_cvse_sides_read_the_same_files(run_parity, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Both sides of a CVSE run get the same settings and read the same concept files: vse_ray's readers give
    the concepts, counts and vectors the released loader reads, and nltk's lemmatiser on the WordNet folder
    labels a test caption's words as vse_ray's does; a train image's labels are its captions' concepts."""
    import cvse_files
    from nltk.stem import WordNetLemmatizer

    args = _parsed(run_parity, monkeypatch, "--system", "cvse", "--epochs", "3", "--embed-dim", "64")
    regions, official = tmp_path / "scenes_r12", tmp_path / "official"
    regions.mkdir()
    words = ["<pad>", "<start>", "<end>", "<unk>", "a", "red", "ball", "balls", "two", "and", "box", "boxes"]
    (regions / "vocab.json").write_text(json.dumps({"word2idx": {w: i for i, w in enumerate(words)}}))
    captions = ["a red ball", "two red balls", "a box", "a red box and a ball", "two boxes"] * 2
    for split in ("train", "dev", "test"):
        np.save(regions / f"{split}_ims.npy", np.zeros((2, 12, 24), np.float32))
        (regions / f"{split}_caps.txt").write_text("\n".join(captions) + "\n")
    cvse_files.write_cvse_folder(regions, tmp_path / args.data_name)
    official.mkdir()
    (official / "f30k_precomp").symlink_to(tmp_path / args.data_name)
    command = run_parity.official_command(official, 5, args)
    options = command[command.index("--") + 1 :]
    flags = {f[2:]: v for f, v in zip(options, [*options[1:], "--"], strict=True) if f.startswith("--")}
    config = TrainConfig(**run_parity.vse_ray_config(tmp_path, tmp_path, 5, args))
    params = config.model_params
    assert config.model == "cvse" and params["reading"] == "released" and params["eval_dataset"] == "f30k"
    assert float(flags["learning_rate"]) == float(flags["learning_rate_MLGCN"]) == config.lr == 2e-4
    assert int(flags["lr_update"]) == config.lr_update == 25 and int(flags["num_epochs"]) == config.epochs
    assert int(flags["batch_size"]) == config.batch_size == 128 and int(flags["embed_size"]) == 64
    assert int(flags["word_dim"]) == config.word_dim and flags["wemb_type"] == "random_init"
    assert float(flags["dropout_rate"]) == params["dropout"] and params["n_regions"] == 12
    assert float(flags["Concept_label_ratio"]) == params["label_ratio"]
    assert int(flags["input_channel"]) == params["concept_dim"] == 300
    assert "max_violation" not in flags and "bi_gru" not in flags  # store_false: on
    # the same files: the concepts, their graph and vectors, the WordNet folder
    concepts = Path(flags["attribute_path"])
    assert concepts.resolve() == Path(params["concepts"]).resolve()
    assert Path(flags["inp_name"]).resolve() == Path(config.concept_vectors).resolve()
    graph = read_official_concepts(params["concepts"])
    names = json.loads(Path(flags["concept_name"]).read_text())
    # by the captions naming each concept, ties alphabetical; in the released file's order
    assert graph.words == ("ball", "box", "red", "two") and tuple(names) == graph.words
    assert int(flags["num_attribute"]) == params["n_concepts"] == 4
    released = read_numpy_pickle(flags["adj_file"])
    # captions naming each concept (balls → ball, boxes → box), and naming both
    np.testing.assert_array_equal(graph.counts, [6, 6, 6, 4])
    np.testing.assert_array_equal(released["adj_all"], graph.cooccurrence)
    assert (
        graph.cooccurrence[0, 2] == 6
        and graph.cooccurrence[1, 3] == graph.cooccurrence[0, 1] == 2
        and np.all(graph.cooccurrence.diagonal() == 0)
    )
    for copy in ("adj_O_P", "adj_O_M"):
        np.testing.assert_array_equal(released[copy], released["adj_all"])
    vectors = read_numpy_pickle(flags["inp_name"])
    assert vectors.shape == (4, 300) and vectors.dtype == np.float64
    np.testing.assert_array_equal(
        read_concept_vectors(config.concept_vectors, graph.words), vectors.astype(np.float32)
    )
    monkeypatch.setattr("nltk.data.path", [str(Path(params["wordnet"]).parents[1])])
    nltk_lemma = WordNetLemmatizer().lemmatize
    lemmatizer = load_noun_lemmatizer(params["wordnet"])
    assert [nltk_lemma(w) for w in words] == [lemmatizer.lemma(w) for w in words]
    index = token_concept_index({w: i for i, w in enumerate(words)}, graph.words, len(words), lemmatizer)
    released_labels = [
        graph.words.index(nltk_lemma(w)) if nltk_lemma(w) in graph.words else -1 for w in words
    ]
    assert index.tolist() == released_labels == [-1] * 5 + [2, 0, 0, 3, -1, 1, 1]
    # image 0 holds captions 0-4 (all four concepts), image 1 captions 5-9
    labels = json.loads((concepts / cvse_files.LABELS_FILE).read_text())
    assert labels == [
        {"img_id": "0", "concept_labels": [0, 1, 2, 3]},
        {"img_id": "1", "concept_labels": [0, 1, 2, 3]},
    ]
    assert (tmp_path / args.data_name / "train_ids.txt").read_text() == "0\n1\n"
