"""Training speed of `vse-ray train` against the authors' training code, same data, settings and threads.

For each system, the official training script (its own `main`, from a checkout under `--official-root`) and
`vse-ray train` (the command, with Ray, MLflow and checkpoints) train the same number of epochs on the same
precomp files: a synthetic region dataset of `--fraction` of Flickr30K's size
(`parity/make_region_dataset.py`, 36 x 2,048 float32 regions, or `--dim`; VSE++ reads their mean, a pooled
(N, 2,048) feature), batch 128, with `OMP_NUM_THREADS=--threads` on both sides and `--cpus-per-worker
--threads` on vse_ray's, in the command's default mode (on one machine's CPU: in its own process, without Ray)
unless `--vse-ray-workers N` asks for N Ray Train workers (0: in its own process). vse_ray needs at least 10
dev images (`--fraction` ≥ 0.01).

Systems and their checkouts (`--official-root/<folder>`), run with the official code's released settings
and on vse_ray's side the recipe of the same settings. The checkouts are patched at run time only (nothing of
them is copied here; the patches change no arithmetic): `tensorboard_logger`, `imageio`, `cv2`, `torchtext`
and VSRN's `misc.rewards` are empty modules, `Tensor.cuda` is a no-op, nltk's `word_tokenize` is `str.split`
(the captions are lower-case words without punctuation), the dev split's fixed length of 5,000 captions is
its real length, and the batch ids reach `encode_data` as a list (NumPy 2 reads a tuple index as one index
per axis):

- ``vse_inf``: woodfrog/vse_infty, branch ``bigru`` (folder ``vse_infty``), the released settings of
  `recipes/vse_inf_bigru_f30k.yaml` (AdamW, caption augmentation, region drop, one VSE0 warm-up epoch);
- ``vsepp``: fartashf/vsepp (folder ``vsepp``), precomputed features, `--max_violation`, lr 2e-4; the
  vocabulary pickle is built from the dataset's `vocab.json`;
- ``scan``: kuanghuei/SCAN (folder ``SCAN``), t2i LogSumExp (λ_lse 6, λ_softmax 9), Bi-GRU, max of hinges,
  lr 5e-4; vse_ray: `scan_bcls_f30k`'s settings with SCAN's loss (`vsepp`, margin 0.2);
- ``sgraf``: Paranioar/SGRAF (folder ``SGRAF``), `--module_name SGR` and its `opts.py` defaults; vse_ray:
  `sgraf_sgr_f30k`;
- ``vsrn``: KunpengLi1994/VSRN (folder ``VSRN``), its README's Flickr30K command (`--max_violation --lr_update
  10 --max_len 60`, embedding 2,048, the caption decoder); vocabulary pickle built from `vocab.json`; vse_ray:
  `vsrn_baseline_sam_f30k`;
- ``cvse``: BruceW91/CVSE (folder ``CVSE``), `train_f30k.py`'s defaults (300 concepts, `--wemb_type
  random_init`) on concept files made up in the released formats (`write_cvse_inputs`); nltk has no WordNet
  data here, so the released loader's `WordNetLemmatizer` is vse_ray's offline noun lemmatiser
  (`vse_ray.data.precompute.lemmas`, equal to nltk's) on the same made-up WordNet folder; vse_ray:
  `cvse_baseline_sam_f30k` (the released reading) given those concept files, vectors and WordNet folder.

VSE++, SCAN, SGRAF and VSRN run from a temporary copy of their Python files with the Python 2 idioms of
`parity/official_code.py`'s `EDITS` spelled for Python 3 (integer division, bytes captions, `iteritems`,
`loss.data[0]`, VSRN's integer `bidirectional` and a `.contiguous()` its `.view` needs); vse_ray's recipes run
on the benchmark's store (float32 features, SVD relevance: `STORE`).

Both sides are timed by the same wrappers (`timing_hook/sitecustomize.py`): every step, validation,
checkpoint, data open and (vse_ray) batch build and report is one event. The report gives:

- steady-state training samples/s: 128 x the steps counted / the time between their starts (data and step),
  within each epoch, leaving out each epoch's first `--skip` steps;
- the one-off costs: start (process, imports, and for vse_ray Ray, MLflow and the worker, up to the data
  open), data open, set-up (model and optimiser), validation, checkpoint, report (vse_ray: epoch metrics to
  MLflow and Ray Train's checkpoint copy), and the end (after the last event to the process's exit);
- the end-to-end wall time of each command and the ratio official / vse_ray (≥ 1: vse_ray is as fast);
- the 1-minute load average, sampled every 10 s of each run (min–max and mean).

    python benchmarks/bench_vs_official.py --official-root /tmp/official --out /tmp/bench_vs \\
        --systems vse_inf vsepp --fraction 0.1 --epochs 2 --threads 1
    python benchmarks/bench_vs_official.py --official-root /tmp/official --out /tmp/bench_vs \\
        --systems scan sgraf vsrn cvse --fraction 0.01 --epochs 1 --skip 2

Memory: one SGRAF SGR training step at batch 128 holds about 12 GB on either side (the autograd graph of
16,384 image-caption pairs), VSRN's about 6 GB. Where the machine cannot hold both sides, run them apart
(`--sides official`, then `--sides vse_ray`) and report the two run folders with `--records`; a run stopped
after some steps keeps its events and load samples, and `--records` reports the steps it made.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pickle
import subprocess
import sys
import time
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
PARITY = HERE.parent / "parity"  # the authors' code run on a modern stack, and the region dataset maker
sys.path.insert(0, str(PARITY))
from official_code import COCO_API, EDITS, patched_checkout, run_offline_on_cpu  # noqa: E402

HOOK = HERE / "timing_hook"
F30K_IMAGES = (29000, 1014, 1000)  # train, dev, test
CHECKOUTS = {
    "vse_inf": "vse_infty",
    "vsepp": "vsepp",
    "scan": "SCAN",
    "sgraf": "SGRAF",
    "vsrn": "VSRN",
    "cvse": "CVSE",
}
SCRIPTS = {"cvse": "train_f30k.py"}  # the others: train.py
REGION_SYSTEMS = ("vse_inf", "scan", "sgraf", "vsrn", "cvse")
# vse_ray's side: the recipe of the released code's settings (SCAN: scan_bcls_f30k's with SCAN's own loss,
# the max of hinges), on the benchmark's store: float32 features as the official code reads them (the
# recipes store float16) and the SVD relevance only (none of these losses reads one)
STORE = "precompute: {{feature_dtype: float32, relevance_sources: [svd], vocab_file: {vocab}}}\n"
RECIPES = {
    "scan": "base: scan_bcls_f30k\ntrain:\n  loss: vsepp\n  loss_params: {margin: 0.2}\n",
    "sgraf": "base: sgraf_sgr_f30k\n",
    "vsrn": "base: vsrn_baseline_sam_f30k\n",
    "cvse": "base: cvse_baseline_sam_f30k\n",
}
N_CONCEPTS, CONCEPT_DIM = 300, 300  # CVSE's released --num_attribute and --input_channel
BATCH = 128


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--official-root", help="folder of the checkouts (folders of CHECKOUTS)")
    parser.add_argument("--out", required=True, help="working and report folder")
    parser.add_argument("--systems", nargs="+", choices=sorted(CHECKOUTS), default=["vse_inf", "vsepp"])
    parser.add_argument("--fraction", type=float, default=0.1, help="of Flickr30K's images")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument(
        "--dim", type=int, default=2048, help="region feature width (2,048: bottom-up features)"
    )
    parser.add_argument(
        "--embed-dim", type=int, default=1024, help="vse_inf: joint embedding size on both sides"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads on each side")
    parser.add_argument("--official-workers", type=int, default=0, help="official DataLoader workers")
    parser.add_argument(
        "--vse-ray-workers",
        type=int,
        help="`vse-ray train --num-workers` (0: in the command's process, without Ray; default: not given, "
        "the command's default)",
    )
    parser.add_argument("--skip", type=int, default=3, help="first steps of each epoch not counted")
    parser.add_argument(
        "--together",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run both sides at the same time, so they share whatever else loads the machine",
    )
    parser.add_argument(
        "--sides", nargs="+", choices=("official", "vse_ray"), default=["official", "vse_ray"]
    )
    parser.add_argument(
        "--records",
        nargs=2,
        metavar=("OFFICIAL_RUN", "VSE_RAY_RUN"),
        help="report two runs made before (their folders under OUT/runs, one a side, e.g. run apart with "
        "--sides where memory does not hold both, or stopped after some steps) for the one system of "
        "--systems, instead of running",
    )
    parser.add_argument("--role", choices=("official",), help=argparse.SUPPRESS)  # the official run's process
    parser.add_argument("--system", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    return parser.parse_args()


# ---------------------------------------------------------------------------------------------------- data


def make_data(out: Path, fraction: float, systems: list[str], dim: int = 2048) -> dict[str, Path]:
    """The region folder (regions of width `dim`), the pooled folder, the layouts the official codes read, and
    vse_ray's data folders of `systems` (all cached)."""
    tag = f"{fraction}" if dim == 2048 else f"{fraction}_d{dim}"
    regions = out / f"regions_{tag}"
    if not (regions / "vocab.json").exists():
        sizes = [str(max(1, round(n * fraction))) for n in F30K_IMAGES]
        maker = [sys.executable, str(PARITY / "make_region_dataset.py"), "--out", str(regions)]
        subprocess.run([*maker, "--sizes", *sizes, "--dim", str(dim)], check=True)
    pooled = out / f"pooled_{tag}"
    pooled.mkdir(exist_ok=True)
    for split in ("train", "dev", "test"):
        if not (pooled / f"{split}_ims.npy").exists():
            ims = np.load(regions / f"{split}_ims.npy", mmap_mode="r")
            np.save(pooled / f"{split}_ims.npy", np.asarray(ims).mean(axis=1, dtype=np.float32))
        _link(pooled / f"{split}_caps.txt", regions / f"{split}_caps.txt")
    _link(pooled / "vocab.json", regions / "vocab.json")
    # vse_infty reads <data_path>/precomp/ and <vocab_path>/f30k_precomp_vocab.json
    vse_inf = out / f"official_vse_inf_{tag}"
    (vse_inf / "precomp").mkdir(parents=True, exist_ok=True)
    for file in regions.iterdir():
        _link(vse_inf / "precomp" / file.name, file)
    _link(vse_inf / "f30k_precomp_vocab.json", regions / "vocab.json")
    # vsepp reads <data_path>/f30k_precomp/ (pooled)
    vsepp = out / f"official_vsepp_{tag}"
    (vsepp / "f30k_precomp").mkdir(parents=True, exist_ok=True)
    for file in pooled.iterdir():
        _link(vsepp / "f30k_precomp" / file.name, file.resolve())
    # SCAN, SGRAF, VSRN, CVSE read <data_path>/f30k_precomp/ (regions; CVSE also its image ids) and
    # <vocab_path>/f30k_precomp_vocab.json (SCAN, SGRAF; VSRN and CVSE a pickle made at run time)
    official = out / f"official_regions_{tag}"
    (official / "f30k_precomp").mkdir(parents=True, exist_ok=True)
    for file in regions.iterdir():
        _link(official / "f30k_precomp" / file.name, file)
    _link(official / "f30k_precomp_vocab.json", regions / "vocab.json")
    if "cvse" in systems:
        write_cvse_inputs(regions, official)
    stores = {}
    for name, folder, users in (("regions", regions, REGION_SYSTEMS), ("pooled", pooled, ("vsepp",))):
        store = out / f"vse_ray_{name}_{tag}"
        if set(users) & set(systems) and not (store / "manifest.json").exists():
            subprocess.run(
                [
                    *("vse-ray", "precompute", "--dataset", "precomp", "--precomp-dir", str(folder)),
                    *("--vocab", str(folder / "vocab.json"), "--relevance", "svd"),
                    *("--feature-dtype", "float32", "--out", str(store)),
                ],
                check=True,
            )
        stores[name] = store
    paths = {"vse_inf": vse_inf, "vsepp": vsepp, "store_vsepp": stores["pooled"], "cvse_inputs": official}
    for system, recipe in RECIPES.items():
        paths[f"recipe_{system}"] = out / f"recipe_{system}.yaml"
        paths[f"recipe_{system}"].write_text(recipe + STORE.format(vocab=regions / "vocab.json"))
    for system in REGION_SYSTEMS:
        paths[f"store_{system}"] = stores["regions"]
        paths.setdefault(system, official)
    return paths


def write_cvse_inputs(regions: Path, official: Path) -> None:
    """CVSE's released inputs, made up in their formats (`vse_ray/official/cvse_concepts.py` reads them):

    - `f30k_precomp/{split}_ids.txt`: one image id a line (the image's row plus the split's offset);
    - `concepts/`: `category_concepts.json` ({word: index} of `N_CONCEPTS` words: the training vocabulary's
      words, then made-up words no caption holds), `f30k_adj_concepts.pkl` ({"nums": captions holding each
      concept, at least 1; "adj_all", "adj_O_P", "adj_O_M": captions holding both}),
      `f30k_concepts_glove_word2vec.pkl` ((K, `CONCEPT_DIM`) float64 N(0, 1) vectors) and
      `all_f30k_concept_label.json` (each training image's concepts: the words of its five captions);
    - `wordnet/`: `index.noun` naming every vocabulary word a noun and an empty `noun.exc`, so the released
      loader's lemmas (nltk's WordNetLemmatizer) and vse_ray's are each word itself.
    """
    concepts, wordnet = official / "concepts", official / "wordnet"
    if (concepts / "all_f30k_concept_label.json").exists():
        return
    words = [w for w in json.loads((regions / "vocab.json").read_text())["word2idx"] if not w.startswith("<")]
    names = (words + [f"concept{i}" for i in range(N_CONCEPTS)])[:N_CONCEPTS]
    index = {word: i for i, word in enumerate(names)}
    offset = 0
    for split in ("train", "dev", "test"):
        n = len(np.load(regions / f"{split}_ims.npy", mmap_mode="r"))
        (official / "f30k_precomp" / f"{split}_ids.txt").write_text(
            "".join(f"{offset + i}\n" for i in range(n))
        )
        offset += n
    captions = (regions / "train_caps.txt").read_text().splitlines()
    held = np.zeros((len(captions), N_CONCEPTS), dtype=np.int64)
    for row, caption in enumerate(captions):
        held[row, [index[w] for w in set(caption.split()) if w in index]] = 1
    concepts.mkdir(parents=True, exist_ok=True)
    (concepts / "category_concepts.json").write_text(json.dumps(index))
    with open(concepts / "f30k_adj_concepts.pkl", "wb") as file:
        together = held.T @ held
        graphs = {key: together.copy() for key in ("adj_O_P", "adj_O_M", "adj_all")}  # copies, as released
        pickle.dump({"nums": np.maximum(held.sum(0), 1), **graphs}, file)
    with open(concepts / "f30k_concepts_glove_word2vec.pkl", "wb") as file:
        pickle.dump(np.random.default_rng(0).normal(size=(N_CONCEPTS, CONCEPT_DIM)), file)
    images = held.reshape(-1, 5, N_CONCEPTS).max(axis=1)
    labels = [
        {"img_id": str(i), "concept_labels": np.flatnonzero(row).tolist()} for i, row in enumerate(images)
    ]
    (concepts / "all_f30k_concept_label.json").write_text(json.dumps(labels))
    wordnet.mkdir(exist_ok=True)
    (wordnet / "index.noun").write_text("".join(f"{w} n 1 0 1 0 00000000  \n" for w in sorted(words)))
    (wordnet / "noun.exc").write_text("")


def _link(link: Path, target: Path) -> None:
    if not link.exists():
        link.symlink_to(target)


# --------------------------------------------------------------------------------------- the official side


def official_argv(system: str, data: Path, run: Path, args: argparse.Namespace) -> list[str]:
    """The official training script's command line for `system` (the settings of the module docstring)."""
    common = [
        *("--batch_size", str(BATCH), "--num_epochs", str(args.epochs), "--margin", "0.2"),
        *("--word_dim", "300", "--embed_size", str(args.embed_dim if system == "vse_inf" else 1024)),
        *("--grad_clip", "2", "--lr_update", "15"),
        *("--workers", str(args.official_workers), "--logger_name", str(run / "log")),
    ]
    f30k = ["--data_path", str(data), "--data_name", "f30k_precomp"]
    extra = {
        "vse_inf": [
            *("--data_path", str(data), "--data_name", "precomp", "--vocab_path", str(data)),
            *("--learning_rate", "5e-4", "--vse_mean_warmup_epochs", "1", "--model_name", str(run / "ckpt")),
            *("--img_dim", str(args.dim)),
        ],
        "vsepp": [
            *f30k,
            *("--vocab_path", str(run), "--learning_rate", "2e-4", "--max_violation", "--img_dim", "2048"),
        ],
        "scan": [
            *f30k,
            *("--vocab_path", str(data), "--model_name", str(run / "ckpt"), "--learning_rate", "5e-4"),
            *("--lr_update", "10", "--max_violation", "--bi_gru", "--agg_func", "LogSumExp"),
            *("--cross_attn", "t2i", "--lambda_lse", "6", "--lambda_softmax", "9"),
        ],
        # opts.py: --bi_gru and --max_violation are on unless given (store_false)
        "sgraf": [
            *f30k,
            *("--vocab_path", str(data), "--model_name", str(run / "ckpt"), "--learning_rate", "2e-4"),
            *("--lr_update", "30", "--module_name", "SGR", "--sim_dim", "256", "--sgr_step", "3"),
        ],
        "vsrn": [
            *f30k,
            *("--vocab_path", str(run), "--learning_rate", "2e-4", "--lr_update", "10", "--max_violation"),
            *("--max_len", "60", "--embed_size", "2048"),
        ],
        # --max_violation, --bi_gru, --use_BatchNorm on (store_false); the released concept files' options
        "cvse": [
            *f30k,
            *("--vocab_path", str(run), "--model_name", str(run / "ckpt"), "--resume", ""),
            *("--learning_rate", "2e-4", "--lr_update", "25", "--wemb_type", "random_init"),
            *(
                "--attribute_path",
                str(data / "concepts"),
                "--adj_file",
                str(data / "concepts/f30k_adj_concepts.pkl"),
            ),
            *("--concept_name", str(data / "concepts/category_concepts.json")),
            *("--inp_name", str(data / "concepts/f30k_concepts_glove_word2vec.pkl")),
        ],
    }
    return [*common, *extra[system]]


def run_official(args: argparse.Namespace) -> None:
    """In the official run's process: patch the checkout's modules, wrap them with timers, run its `main`."""
    sys.path.insert(0, str(HOOK))
    from sitecustomize import timed  # the same event writer as vse_ray's side

    system, run, data_root = args.system, Path(args.out), Path(args.data)
    checkout = Path(args.official_root) / CHECKOUTS[system]
    code = patched_checkout(checkout, system) if system in EDITS else checkout
    sys.path.insert(0, str(code))
    # misc.rewards (VSRN's self-critical training) needs a CIDEr-D package from the checkout; unused here
    run_offline_on_cpu(("tensorboard_logger", "imageio", "cv2", "torchtext", "misc.rewards", *COCO_API))
    (run / "log").mkdir(parents=True, exist_ok=True)  # tensorboard_logger would make it
    sys.argv = [SCRIPTS.get(system, "train.py"), *official_argv(system, data_root, run, args)]
    if system == "vse_inf":
        import train
        from lib import vse
        from lib.datasets import image_caption as data

        dataset = data.PrecompRegionDataset
        model_class = vse.VSEModel
    elif system == "vsepp":
        import data
        import model
        import train

        _vsepp_vocabulary(run)
        dataset = data.PrecompDataset
        model_class = model.VSE
    else:
        import data
        import vocab

        if system in ("vsrn", "cvse"):  # they read a pickled vocabulary of their own class
            write_vocab_pickle(
                vocab.Vocabulary, data_root / "f30k_precomp_vocab.json", run / "f30k_precomp_vocab.pkl"
            )
        if system == "cvse":  # nltk has no WordNet data here: the lemmas of the same WordNet folder
            from vse_ray.data.precompute.lemmas import load_noun_lemmatizer

            nouns = load_noun_lemmatizer(data_root / "wordnet")
            data.lemmatizer = types.SimpleNamespace(lemmatize=nouns.lemma)
        train = importlib.import_module(SCRIPTS.get(system, "train.py").removesuffix(".py"))
        dataset = data.PrecompDataset_Flickr30k if system == "cvse" else data.PrecompDataset
        model_class = {"scan": "SCAN", "sgraf": "SGRAF", "vsrn": "VSRN", "cvse": "CVSE"}[system]
        model_class = getattr(train, model_class)
    init = dataset.__init__

    def real_length(self: Any, *a: Any, **k: Any) -> None:  # the dev split's fixed 5,000 is its real length
        init(self, *a, **k)
        self.length = len(self.captions)

    dataset.__init__ = real_length
    collate = data.collate_fn

    def listed_ids(batch: Any) -> tuple:  # NumPy 2 reads a tuple index as one index per axis
        return tuple(list(part) if isinstance(part, tuple) else part for part in collate(batch))

    data.collate_fn = listed_ids
    data.get_loaders = timed("data_open", data.get_loaders)
    train.validate = timed("validate", train.validate)
    train.save_checkpoint = timed("checkpoint", train.save_checkpoint)
    model_class.train_emb = timed("step", model_class.train_emb)
    train.main()


def write_vocab_pickle(vocabulary: type, words_json: Path, out: Path) -> None:
    """The dataset's vocabulary (`vocab.json`), pickled as the official code's `Vocabulary` object."""
    words = json.loads(words_json.read_text())
    vocab = vocabulary()
    for index in sorted(words["idx2word"], key=int):
        vocab.add_word(words["idx2word"][index])
    with open(out, "wb") as file:
        pickle.dump(vocab, file)


def _vsepp_vocabulary(run: Path) -> None:
    """fartashf/vsepp reads a pickled vocabulary of its own class: made from the dataset's `vocab.json`."""
    import vocab as vocab_module

    data_path = Path(sys.argv[sys.argv.index("--data_path") + 1])
    write_vocab_pickle(
        vocab_module.Vocabulary, data_path / "f30k_precomp/vocab.json", run / "f30k_precomp_vocab.pkl"
    )


# ------------------------------------------------------------------------------------------- running both


def vse_ray_argv(system: str, paths: dict[str, Path], run: Path, args: argparse.Namespace) -> list[str]:
    """`vse-ray train` with the settings of `official_argv`."""
    common = [
        *("train", "--data", str(paths[f"store_{system}"]), "--epochs", str(args.epochs)),
        *("--batch-size", str(BATCH), "--cpus-per-worker", str(args.threads), "--output-dir", str(run)),
        *(() if args.vse_ray_workers is None else ("--num-workers", str(args.vse_ray_workers))),
    ]
    if system in RECIPES:
        extra = []
        if system == "cvse":  # the released concept files and WordNet folder the official side reads
            inputs = paths["cvse_inputs"]
            extra = [
                *("--set", f"model_params.concepts={inputs / 'concepts'}"),
                *("--set", f"model_params.wordnet={inputs / 'wordnet'}"),
                *("--concept-vectors", str(inputs / "concepts/f30k_concepts_glove_word2vec.pkl")),
            ]
        return [*common, "--recipe", str(paths[f"recipe_{system}"]), *extra]
    if system == "vse_inf":
        # the training settings of recipes/vse_inf_bigru_f30k.yaml (the recipe itself asks for float16 data)
        sets = (
            "model_params.text_encoder=bigru model_params.region_drop=0.2 optimizer=adamw weight_decay=0.01 "
            "warmup_loss=vse0 warmup_params.margin=0.2 "
            "caption_mask=0.1 caption_replace=0.02 caption_delete=0.08"
        )
        return [
            *common,
            *(
                "--model",
                "vse_inf",
                "--loss",
                "vsepp",
                "--param",
                "margin=0.2",
                "--lr",
                "5e-4",
                "--lr-update",
                "15",
            ),
            *(
                "--grad-clip",
                "2",
                "--word-dim",
                "300",
                "--embed-dim",
                str(args.embed_dim),
                "--warmup-epochs",
                "1",
            ),
            *("--negatives", "diagonal"),
            *(arg for item in sets.split() for arg in ("--set", item)),
        ]
    return [
        *common,
        *(
            "--model",
            "vsepp",
            "--loss",
            "vsepp",
            "--param",
            "margin=0.2",
            "--lr",
            "2e-4",
            "--lr-update",
            "15",
        ),
        *("--grad-clip", "2", "--word-dim", "300", "--embed-dim", "1024", "--warmup-epochs", "0"),
        *("--negatives", "diagonal"),
    ]


def timed_run(side: str, system: str, paths: dict[str, Path], out: Path, args: argparse.Namespace) -> dict:
    """One side's run of `system`: its events, wall time, and the load average around it."""
    run = out / "runs" / f"{system}_{side}_{time.strftime('%H%M%S')}"
    run.mkdir(parents=True)
    events = run / "events.jsonl"
    threads = str(args.threads)
    env = {**os.environ, "BENCH_EVENTS": str(events), "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HOOK), os.environ.get("PYTHONPATH", "")) if p)
    if side == "official":
        cmd = [
            *(sys.executable, __file__, "--role", "official", "--system", system, "--out", str(run)),
            *(
                "--official-root",
                args.official_root,
                "--data",
                str(paths[system]),
                "--epochs",
                str(args.epochs),
            ),
            *("--official-workers", str(args.official_workers)),
            *("--dim", str(args.dim), "--embed-dim", str(args.embed_dim)),
        ]
    else:
        cmd = ["vse-ray", *vse_ray_argv(system, paths, run, args)]
    loads = [os.getloadavg()[0]]
    start = time.time()
    with open(run / "stdout.txt", "w") as log:
        process = subprocess.Popen(cmd, env=env, cwd=run, stdout=log, stderr=subprocess.STDOUT)
        while process.poll() is None:  # the 1-minute load average every 10 s, kept should the run be stopped
            time.sleep(0.5)
            if time.time() - start > 10 * len(loads):
                loads.append(os.getloadavg()[0])
                (run / "partial.json").write_text(json.dumps({"start": start, "load": loads}))
    end = time.time()
    loads.append(os.getloadavg()[0])
    if process.returncode != 0:
        raise RuntimeError(f"{system} {side} failed (rc {process.returncode}), see {run / 'stdout.txt'}")
    recorded = [json.loads(line) for line in events.read_text().splitlines()]
    record = {"start": start, "end": end, "events": recorded, "load": loads}
    (run / "record.json").write_text(json.dumps(record))
    return record


def step_epochs(record: dict) -> list[list[dict]]:
    """The step events of one run, per epoch (validation events separate the epochs)."""
    steps = sorted((e for e in record["events"] if e["name"] == "step"), key=lambda e: e["t0"])
    cuts = [e["t0"] for e in record["events"] if e["name"] == "validate"]
    epochs: list[list[dict]] = [[] for _ in range(len(cuts) + 1)]
    for step in steps:
        epochs[sum(step["t0"] > c for c in cuts)].append(step)
    return epochs


def steady_rate(record: dict, skip: int, window: tuple[float, float] = (0.0, float("inf"))) -> float:
    """Samples/s over the intervals between consecutive step starts of an epoch, leaving out each epoch's
    first `skip` steps, counting only intervals inside `window` (wall-clock seconds)."""
    counted, seconds = 0, 0.0
    for epoch in step_epochs(record):
        starts = [s["t0"] for s in epoch][skip:]
        for a, b in zip(starts, starts[1:], strict=False):
            if window[0] <= a and b <= window[1]:
                counted, seconds = counted + 1, seconds + b - a
    return BATCH * counted / seconds if counted else float("nan")


def summarise(record: dict, skip: int) -> dict[str, Any]:
    """Steady-state samples/s and the one-off costs of one run (see the module docstring)."""
    events = sorted(record["events"], key=lambda e: e["t0"])
    by = lambda name: [e for e in events if e["name"] == name]  # noqa: E731
    steps, epochs = by("step"), step_epochs(record)
    rate = steady_rate(record, skip)
    spent = lambda name: sum(e["t1"] - e["t0"] for e in by(name))  # noqa: E731
    first_open = by("data_open")[0]
    train = sum(epoch[-1]["t1"] - epoch[0]["t0"] for epoch in epochs if epoch)
    row = {
        "samples_per_s": rate,
        "step_s": BATCH / rate,
        "batch_s": spent("batch") / max(len(by("batch")), 1),
        "steps": len(steps),
        "threads": sorted({e["threads"] for e in steps}),
        "total_s": record["end"] - record["start"],
        "start_s": first_open["t0"] - record["start"],
        "data_open_s": spent("data_open"),
        "setup_s": steps[0]["t0"] - first_open["t1"],
        "train_s": train,
        "validate_s": spent("validate"),
        "checkpoint_s": spent("checkpoint"),
        "report_s": spent("report"),
        "end_s": record["end"] - max(e["t1"] for e in events),
        "load": record["load"],
    }
    row["other_s"] = row["total_s"] - sum(
        row[k] for k in ("start_s", "data_open_s", "setup_s", "train_s", "end_s")
    )
    return row


def table(results: dict[str, dict[str, dict]]) -> str:
    """The Markdown report: per system, each side's rate and costs, and the ratios."""
    keys = ("start_s", "data_open_s", "setup_s", "validate_s", "checkpoint_s", "report_s", "end_s", "total_s")
    lines = [
        "| system | side | samples/s | step s | " + " | ".join(k[:-2] for k in keys) + " | load |",
        "|---|---|---:|---:|" + "---:|" * len(keys) + "---|",
    ]
    ratios = []
    for system, sides in results.items():
        for side, row in sides.items():
            costs = " | ".join(f"{row[k]:.1f}" for k in keys)
            loads = row["load"]
            load = f"{min(loads):.1f}–{max(loads):.1f} (mean {sum(loads) / len(loads):.1f})"
            lines.append(
                f"| {system} | {side} | {row['samples_per_s']:.1f} | {row['step_s']:.3f} | {costs} | {load} |"
            )
        if set(sides) == {"official", "vse_ray"}:
            o, v = sides["official"], sides["vse_ray"]
            rate = v["samples_per_s"] / o["samples_per_s"]
            overlap = v.get("overlap_samples_per_s", float("nan")) / o.get(
                "overlap_samples_per_s", float("nan")
            )
            ratios.append(
                f"- {system}: samples/s vse_ray ÷ official **{rate:.2f}×** "
                f"(while both stepped: {overlap:.2f}×); "
                f"end to end official ÷ vse_ray **{o['total_s'] / v['total_s']:.2f}×** "
                f"({o['total_s']:.1f} s against {v['total_s']:.1f} s)"
            )
    return "\n".join([*lines, "", *ratios]) + "\n"


def read_record(run: Path) -> dict:
    """The record of a run folder; of a run stopped before its end, the steps it made (its end: the last
    event's, so the one-off costs after it read 0)."""
    if (run / "record.json").exists():
        return json.loads((run / "record.json").read_text())
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    return {
        **json.loads((run / "partial.json").read_text()),
        "end": max(e["t1"] for e in events),
        "events": events,
    }


def compare(records: list[dict], sides: list[str], skip: int) -> dict[str, dict]:
    """Each side's summary; with two sides, also their rates while both were stepping (same load)."""
    results = {side: summarise(r, skip) for side, r in zip(sides, records, strict=True)}
    if len(records) == 2:
        spans = [
            (min(s["t0"] for s in steps), max(s["t1"] for s in steps))
            for steps in ([e for e in r["events"] if e["name"] == "step"] for r in records)
        ]
        window = (max(a for a, _ in spans), min(b for _, b in spans))
        for side, record in zip(sides, records, strict=True):
            results[side]["overlap_samples_per_s"] = steady_rate(record, skip, window)
    return results


def main() -> None:
    args = parse_args()
    if args.role == "official":
        run_official(args)
        return
    if not args.official_root:
        raise SystemExit("--official-root: the folder of the official checkouts is required")
    for system in args.systems:
        checkout = Path(args.official_root) / CHECKOUTS[system] / SCRIPTS.get(system, "train.py")
        if "official" in args.sides and not args.records and not checkout.exists():
            raise SystemExit(f"{checkout}: not found (a checkout of {system}'s official code)")
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, dict]] = {}
    if args.records:  # two runs made before, one a side
        records = [read_record(Path(run)) for run in args.records]
        results[args.systems[0]] = compare(records, ["official", "vse_ray"], args.skip)
    else:
        paths = make_data(out, args.fraction, args.systems, args.dim)
    for system in [] if args.records else args.systems:
        with ThreadPoolExecutor(len(args.sides) if args.together else 1) as pool:
            runs = [pool.submit(timed_run, side, system, paths, out, args) for side in args.sides]
            records = [run.result() for run in runs]
        results[system] = compare(records, args.sides, args.skip)
    for system, sides in results.items():
        for side, row in sides.items():
            print(system, side, json.dumps(row), flush=True)
    text = table(results)
    stamp = time.strftime("%Y%m%d_%H%M%S")
    (out / f"bench_vs_official_{stamp}.md").write_text(text)
    (out / f"bench_vs_official_{stamp}.json").write_text(json.dumps(results, indent=1))
    print(text)


if __name__ == "__main__":
    main()
