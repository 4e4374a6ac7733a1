"""Run parity: whole runs of vse_ray against the authors' code, seed for seed, on one dataset.

`--system` names the model and its official code: VSE∞ BiGRU (woodfrog/vse_infty, branch ``bigru``; the
default), VSE++ (fartashf/vsepp), SCAN (kuanghuei/SCAN), SGRAF's SGR (Paranioar/SGRAF), GSMN
(CrossmodalGroup/GSMN), VSRN (KunpengLi1994/VSRN) or CVSE (BruceW91/CVSE). Both sides train on the same
precomp folder (`make_region_dataset.py`, `make_objects_dataset.py`; VSE++ reads each image's regions averaged
into one pooled feature, GSMN the regions with the boxes and caption graphs of `gsmn_files.py`, CVSE the
regions with the concept files and WordNet folder of `cvse_files.py`), with the settings both
codes express; validation rsum after every epoch, test rsum of the last epoch's model, no learning-rate decay
within the run.

- VSE∞ (`official_vse_inf.py`): batch 128, lr 5e-4, embedding 256, word embedding 300, margin 0.2, clip 2, one
  VSE0 warm-up epoch then VSE++, region drop 0.2, same-image captions as negatives (`negatives: diagonal`).
  `--settings adam`: Adam without weight decay and no caption augmentation on both sides; `--settings
  released`: the released optimiser (AdamW, torch's default weight decay 0.01) and caption augmentation (20 %
  of the tokens: mask 0.1, random 0.02, delete 0.08) on both sides.
- VSE++ (`official_lineage.py`): the settings of `recipes/vsepp_f30k_vgg19_1c.yaml` (fartashf/vsepp on
  precomputed features, `EncoderImagePrecomp`): Adam at 2e-4, decay every 15 epochs, batch 128, word
  embedding 300, margin 0.2, max of hinges from the first step, clip 2, image embeddings L2-normalised, no
  feature norm; the joint space `--embed-dim`.
- SCAN (`official_lineage.py`): the SCAN settings of `recipes/scan_bcls_f30k.yaml` with SCAN's own loss, as
  its header says to compare (`--set loss=vsepp`): t2i, LogSumExp (λ_lse 6, λ_softmax 9), Bi-GRU, clipped L2
  norm of the words, max of hinges (margin 0.2), Adam at 5e-4, decay every 10 epochs, batch 128, word
  embedding 300, clip 2; the joint space `--embed-dim`.
- SGRAF SGR (`official_lineage.py`): the settings of `recipes/sgraf_sgr_f30k.yaml`: the SGR module of 3
  reasoning steps, Bi-GRU, max of hinges (margin 0.2), Adam at 2e-4, decay every 30 epochs, batch 128, word
  embedding 300, clip 2, dropout 0.4; the joint space `--embed-dim`, the similarity vectors `--sim-dim`.
- GSMN (`official_lineage.py`): the settings of `recipes/gsmn_sparse_f30k.yaml`: the sparse model (the
  textual graph over the caption's dependency edges), λ_softmax 20, Bi-GRU, `num_block` 16, `hid_dim` 32,
  8 kernels, max of hinges (margin 0.2), Adam at 2e-4, decay every 15 epochs, batch 64, word embedding 300,
  clip 2; the joint space `--embed-dim`. vse_ray reads the folder `vse-ray gsmn-data` writes from GSMN's
  files (box columns, `graphs.json`).
- VSRN (`official_lineage.py`): the settings of `recipes/vsrn_baseline_sam_f30k.yaml` (VSRN as released,
  its Flickr30K command): the f30k image head (BatchNorm on the image embedding), VSE++ max of hinges (margin
  0.2) plus the caption decoder's loss (weight 1, dropout 0.2), Adam at 2e-4 (decay after 30 epochs, the
  length of the recipe's base run: none within these runs), batch 128, word embedding 300, clip 2; the joint
  space `--embed-dim` (the reasoning layers' width and the decoder's region input follow it), the decoder's
  sizes `VSRN_DECODER` and its `max_len` 3 more than the longest caption of the dataset (no caption cut; the
  released decoder always runs `max_len` - 1 steps, vse_ray's up to the batch's longest caption, on the same
  masked loss).
- CVSE (`official_lineage.py`): the settings of `recipes/cvse_baseline_sam_f30k.yaml` (BruceW91/CVSE as
  released, `train_f30k.py`; vse_ray's `reading: released`, `eval_dataset: f30k`): α 0.85 in training and
  evaluation, evaluation by 0.95 × fused + 0.05 × consensus cosine with label completion, loss 3 × VSE++ max
  of hinges (margin 0.2) on the fused level + 5 × instance + 1 × consensus + 2 × KL, concept label ratio
  0.35, dropout 0.4, Bi-GRU, Adam at 2e-4 (the GCN's too; decay after 25 epochs: none within these runs),
  batch 128, word embedding 300 started Xavier-uniform (`--wemb_type random_init`), clip 2 (every module);
  the joint space `--embed-dim`. Both read `cvse_files.py`'s concepts (all the train captions' content
  lemmas, `--num_attribute`; vse_ray: `model_params.concepts`), their synthetic 300-d input vectors
  (vse_ray: `--concept-vectors`) and its WordNet folder (vse_ray: `model_params.wordnet`). A training
  caption's concept labels are its image's (the released annotation file) in the official code, its own
  concept words in vse_ray's (the recipe's deviation `labels`).

`--batch` and `--hinges sum` change both sides alike (the lineage systems only). With the max of hinges from
the first step, SGRAF's SGR and GSMN sit at chance longer than a run fits on 2 cores (SGRAF's authors: SGR's
loss starts to fall about epoch 12-13 of Flickr30K, Paranioar/SGRAF issue 13); with the sum of hinges (VSE0:
each official parser's `--max_violation` flag) both leave chance within a few hundred steps. Not CVSE: its
released flag sets its three rank terms, vse_ray's `--loss` the fused one only.

The official side runs its runner on a checkout given as `--official`; vse_ray's side runs `run_training`
(the engine `vse-ray train` runs in each worker) in a process per seed on the folder `vse-ray precompute
--dataset precomp` made from the same files, with vse_ray's own vocabulary as a new user's. Each process uses
one thread; `--jobs` run at once. The report (Markdown and JSON in `--out`) has each seed's test rsum and
validation rsum per epoch, the means and standard deviations, and the targets, over all seeds and over each
block of eight:

- |Δ mean test rsum| ≤ 5;
- sd(vse_ray) ≤ 1.5 × sd(official) + 2;
- the epoch-1 validation rsums of the two sides not told apart (Mann-Whitney p > 0.05).

With the targets it reads the whole distribution, since eight seeds of a chaotic run decide little: rank,
Kolmogorov-Smirnov and Levene tests of the test rsums, the lower tail (runs below the official median less
three median absolute deviations; Fisher's exact test), and how often eight seeds a side resampled from the
runs meet the first two targets: vse_ray against the official runs, the official runs against themselves,
and, as the reference, with the two runs of each seed given their side at random 400 times (both from one law:
the rate the targets allow two equal codes on this data). Both codes draw a seed's initial weights alike, so
the report also pairs the epoch-1 rsums by seed.

    python parity/run_parity.py --official ~/src/vse_infty --out runs/parity --seeds 8 --jobs 2
    python parity/run_parity.py --system scan --official ~/src/SCAN --out runs/parity --dataset objects \\
        --regions 12 --seeds 4 --jobs 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from cvse_files import ADJ_FILE, CONCEPTS, NAMES_FILE, VECTORS_FILE, WORDNET, write_cvse_folder
from gsmn_files import write_gsmn_folder
from scipy import stats

from vse_ray.official.gsmn_data import GRAPH_FILE

HERE = Path(__file__).resolve().parent
SIDES = ("official", "vse_ray")
# Per system: the report's name, its regions per image by default and the suffix of the folder it reads
# (READERS: VSE++ the regions pooled, GSMN with boxes and caption graphs; none: the regions as made)
SYSTEMS = {
    "vse_inf": ("VSE∞ BiGRU", 36, ""),
    "vsepp": ("VSE++", 36, "_pooled"),
    "scan": ("SCAN t2i LogSumExp", 12, ""),
    "sgr": ("SGRAF SGR", 12, ""),
    "gsmn": ("GSMN sparse", 12, "_gsmn"),
    "vsrn": ("VSRN", 12, ""),
    "cvse": ("CVSE (released)", 12, "_cvse"),
}
# The official runner's name of each system of `official_lineage.py`
LINEAGE = {"vsepp": "vsepp", "scan": "scan", "sgr": "sgraf", "gsmn": "gsmn", "vsrn": "vsrn", "cvse": "cvse"}
# the recipes' batch sizes
BATCH = {"vse_inf": 128, "vsepp": 128, "scan": 128, "sgr": 128, "gsmn": 64, "vsrn": 128, "cvse": 128}
GSMN_SIZES = {"num_block": 16, "hid_dim": 32}  # the graphs' sizes (GSMN's defaults); 8 kernels (fixed there)
VSRN_DECODER = {"hidden": 64, "word": 64}  # the caption decoder's GRU and word sizes (recipe: 512, 300)
# Datasets of different kinds (name: maker script and its options), each made once under `--out`.
DATASETS = {
    # rendered-scene attributes in every signal region, captions of five attributes, width 256
    "scenes": ("make_region_dataset.py", ["--noise", "2.5"]),
    # the same scenes at the width of bottom-up features
    "scenes_2048": ("make_region_dataset.py", ["--noise", "2.5", "--dim", "2048"]),
    # 1-3 objects among pure-noise regions, template captions: many captions identical across images
    "objects": ("make_objects_dataset.py", []),
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--system", choices=sorted(SYSTEMS), default="vse_inf")
    parser.add_argument(
        "--official", required=True, help="checkout of the system's code (vse_infty: branch bigru)"
    )
    parser.add_argument("--out", required=True, help="working and report folder")
    parser.add_argument("--seeds", type=int, default=8, help="seeds 0 .. N-1")
    parser.add_argument("--seed-list", type=int, nargs="+", help="these seeds instead (run in this order)")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--settings", choices=("adam", "released"), default="adam", help="VSE∞ only")
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="scenes", help="see DATASETS")
    parser.add_argument("--regions", type=int, help="regions per image (default: the system's, SYSTEMS)")
    parser.add_argument("--embed-dim", type=int, default=256, help="joint space (all but VSE∞)")
    parser.add_argument("--lr", type=float, help="both sides' learning rate (default: the recipe's)")
    parser.add_argument("--batch", type=int, help="both sides' batch size (default: the recipe's, BATCH)")
    parser.add_argument(
        "--hinges",
        choices=("max", "sum"),
        default="max",
        help="both sides' triplet loss: max of hinges (the recipes') or sum of hinges (VSE0; each official "
        "code's --max_violation flag)",
    )
    parser.add_argument("--sim-dim", type=int, default=64, help="SGRAF's similarity vectors (released: 256)")
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (one thread each)")
    parser.add_argument("--sides", nargs="+", choices=SIDES, default=list(SIDES))
    args = parser.parse_args()
    if (args.lr or args.batch or args.hinges == "sum") and args.system == "vse_inf":
        parser.error("--lr, --batch, --hinges: the systems of official_lineage.py only")
    if args.hinges == "sum" and args.system == "cvse":  # the released flag sets all three rank terms
        parser.error("--hinges sum: not CVSE (vse_ray's instance and consensus terms keep the max of hinges)")
    args.regions = args.regions or SYSTEMS[args.system][1]
    args.batch = args.batch or BATCH[args.system]
    args.data_name = args.dataset + ("" if args.regions == 36 else f"_r{args.regions}")
    args.data_name += SYSTEMS[args.system][2]
    args.tag = args.settings if args.system == "vse_inf" else args.system  # the results' folder
    return args


def make_data(out: Path, args: argparse.Namespace) -> tuple[Path, Path]:
    """The precomp folder (`args.data_name`; the official codes read it as `<official>/precomp` and
    `<official>/f30k_precomp`, with its vocabulary file) and vse_ray's folder, precomputed from the same files
    as a new user would: `precompute --dataset precomp`, vse_ray's own vocabulary (GSMN: from the folder
    `gsmn-data` writes, `vse_ray_graph_folder`)."""
    regions = out / args.data_name.removesuffix(SYSTEMS[args.system][2])
    if not (regions / "vocab.json").exists():
        script, options = DATASETS[args.dataset]
        maker = [sys.executable, str(HERE / script), "--out", str(regions), "--regions", str(args.regions)]
        subprocess.run([*maker, *options], check=True)
    precomp = out / args.data_name
    if precomp != regions:
        READERS[SYSTEMS[args.system][2]](regions, precomp)
    official = out / f"official_{args.data_name}"
    (official / "precomp").mkdir(parents=True, exist_ok=True)
    if not (official / "f30k_precomp").exists():
        (official / "f30k_precomp").symlink_to(precomp)
    for file in precomp.iterdir():
        link = official / "precomp" / file.name
        if not link.exists():
            link.symlink_to(file)
    if not (official / "vocab.json").exists():
        (official / "vocab.json").symlink_to(precomp / "vocab.json")
    store = out / f"vse_ray_{args.data_name}"
    source = precomp
    if args.system == "gsmn":
        source = vse_ray_graph_folder(out, args)
        if not (source / GRAPH_FILE).exists():
            gsmn_data = ["--precomp-dir", str(precomp), "--out", str(source)]
            subprocess.run(["vse-ray", "gsmn-data", *gsmn_data], check=True)
    if not (store / "manifest.json").exists():
        subprocess.run(
            [
                *("vse-ray", "precompute", "--dataset", "precomp", "--precomp-dir", str(source)),
                *("--relevance", "svd", "--out", str(store)),
            ],
            check=True,
        )
    return official, store


def pool_regions(regions: Path, pooled: Path) -> None:
    """`regions`' precomp files with each image's regions averaged into one (N, D) feature."""
    pooled.mkdir(exist_ok=True)
    for split in ("train", "dev", "test"):
        if not (pooled / f"{split}_ims.npy").exists():
            ims = np.load(regions / f"{split}_ims.npy", mmap_mode="r")
            np.save(pooled / f"{split}_ims.npy", np.asarray(ims).mean(axis=1, dtype=np.float32))
        if not (pooled / f"{split}_caps.txt").exists():
            (pooled / f"{split}_caps.txt").symlink_to(regions / f"{split}_caps.txt")
    if not (pooled / "vocab.json").exists():
        (pooled / "vocab.json").symlink_to(regions / "vocab.json")


READERS = {"_pooled": pool_regions, "_gsmn": write_gsmn_folder, "_cvse": write_cvse_folder}


def vse_ray_graph_folder(out: Path, args: argparse.Namespace) -> Path:
    """GSMN's folder as `vse-ray gsmn-data` rewrites it: regions with box columns, and `graphs.json`."""
    return out / f"{args.data_name}_vse_ray"


VSE_RAY_RUN = """
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[3])
from run_parity import train_and_test
record, weights = train_and_test(json.loads(sys.argv[1]))
np.savez(sys.argv[2], **{k: v.numpy() for k, v in weights.items()})
print(json.dumps(record))
"""


def train_and_test(config: dict, context: Any = None) -> tuple[dict, dict]:
    """vse_ray's run of `config` (`run_training` on one thread; `context`: a `WorkerContext` dealing its
    batches, else its own): the seed, the validation rsum of each epoch and the test rsum of the last epoch's
    model (val_every 0: its own weights), and that model's weights."""
    import torch

    from vse_ray.checkpoint_files import load_checkpoint
    from vse_ray.data.store.split_data import load_split
    from vse_ray.evaluation.embed import evaluate_split
    from vse_ray.models import rebuild_model
    from vse_ray.train.config import TrainConfig
    from vse_ray.train.epoch_loop import run_training

    checked = TrainConfig(**config).checked()
    history: list[tuple[dict, dict]] = []

    class Keep:
        def report(self, metrics: dict, checkpoint_dir: str) -> None:
            history.append((metrics, load_checkpoint(checkpoint_dir)))

    torch.set_num_threads(1)
    run_training(checked, Keep(), None, context)
    last = history[-1][1]
    split = load_split(checked.config.data_dir, "test", raw=False)
    test = evaluate_split(rebuild_model(last), split, 512, torch.device("cpu"), {})
    val = [metrics["rsum"] for metrics, _ in history]
    return {"seed": checked.config.seed, "val_rsum": val, "test_rsum": test["rsum"]}, last["model"]


def vse_ray_config(store: Path, out: Path, seed: int, args: argparse.Namespace) -> dict:
    """vse_ray's TrainConfig of the system's settings (the module docstring), at `--lr` when given."""
    config = recipe_config(store, out, seed, args)
    return {**config, "lr": args.lr} if args.lr else config


def recipe_config(store: Path, out: Path, seed: int, args: argparse.Namespace) -> dict:
    """vse_ray's TrainConfig of the system's recipe settings."""
    if args.system == "vse_inf":
        return vse_inf_config(store, out, seed, args)
    common = {
        "data_dir": str(store),
        "loss": "vse0" if args.hinges == "sum" else "vsepp",
        "loss_params": {"margin": 0.2},
        "epochs": args.epochs,
        "batch_size": args.batch,
        "grad_clip": 2.0,
        "negatives": "diagonal",
        "word_dim": 300,
        "embed_dim": args.embed_dim,
        "seed": seed,
        "output_dir": str(out / args.data_name / f"{args.system}_vse_ray_runs"),
    }
    if args.system == "vsepp":
        return {**common, "model": "vsepp", "lr": 2e-4, "lr_update": 15}
    if args.system == "scan":
        scan = {"direction": "t2i", "aggregation": "lse", "lambda_softmax": 9.0, "lambda_lse": 6.0}
        return {**common, "model": "scan", "model_params": scan, "lr": 5e-4, "lr_update": 10}
    if args.system == "sgr":
        sgr = {
            "module": "sgr",
            "sim_dim": args.sim_dim,
            "sgr_steps": 3,
            "n_regions": args.regions,
            "dropout": 0.4,
        }
        return {**common, "model": "sgraf", "model_params": sgr, "lr": 2e-4, "lr_update": 30}
    if args.system == "gsmn":
        graphs = str(vse_ray_graph_folder(out, args) / GRAPH_FILE)
        gsmn = {"sparse": True, "graph_path": graphs, "lambda_softmax": 20.0, "n_kernels": 8, **GSMN_SIZES}
        return {**common, "model": "gsmn", "model_params": gsmn, "lr": 2e-4, "lr_update": 15}
    if args.system == "cvse":
        return {**common, **cvse_config(out / args.data_name, args)}
    vsrn = {  # the system left: VSRN
        "variant": "f30k", "caption_weight": 1.0, "caption_hidden": VSRN_DECODER["hidden"],
        "caption_word_dim": VSRN_DECODER["word"], "caption_dropout": 0.2,
        "max_len": caption_max_len(out / args.data_name),
    }  # fmt: skip
    return {**common, "model": "vsrn", "model_params": vsrn, "lr": 2e-4, "lr_update": 30}


def cvse_config(folder: Path, args: argparse.Namespace) -> dict:
    """CVSE's recipe settings on the folder of `cvse_files.py` (its concepts, vectors and WordNet)."""
    cvse = {
        "n_concepts": concept_count(folder), "concept_dim": 300, "n_regions": args.regions, "dropout": 0.4,
        "label_ratio": 0.35, "fused_weight": 3.0, "instance_weight": 5.0, "consensus_weight": 1.0,
        "kl_weight": 2.0, "rank_margin": 0.2, "reading": "released", "eval_dataset": "f30k",
        "concepts": str(folder / CONCEPTS), "wordnet": str(folder / WORDNET),
    }  # fmt: skip
    vectors = str(folder / CONCEPTS / VECTORS_FILE)
    return {"model": "cvse", "model_params": cvse, "concept_vectors": vectors, "lr": 2e-4, "lr_update": 25}


def concept_count(folder: Path) -> int:
    """How many concepts `cvse_files.py` wrote in `folder`."""
    return len(json.loads((folder / CONCEPTS / NAMES_FILE).read_text()))


def vse_inf_config(store: Path, out: Path, seed: int, args: argparse.Namespace) -> dict:
    """VSE∞'s settings (`--settings adam|released`), which read no lineage option (`--embed-dim`, ...)."""
    released = args.settings == "released"
    return {
        "data_dir": str(store),
        "model": "vse_inf",
        "model_params": {"region_drop": 0.2},
        "loss": "vsepp",
        "loss_params": {"margin": 0.2},
        "warmup_loss": "vse0",
        "warmup_params": {"margin": 0.2},
        "warmup_epochs": 1,
        "epochs": args.epochs,
        "batch_size": BATCH[args.system],
        "optimizer": "adamw" if released else "adam",
        "weight_decay": 0.01 if released else 0.0,
        "lr": 5e-4,
        "grad_clip": 2.0,
        "negatives": "diagonal",
        "caption_mask": 0.1 if released else 0.0,
        "caption_replace": 0.02 if released else 0.0,
        "caption_delete": 0.08 if released else 0.0,
        "word_dim": 300,
        "embed_dim": 256,
        "seed": seed,
        "output_dir": str(out / args.data_name / "vse_ray_runs"),
    }


def official_command(official: Path, seed: int, args: argparse.Namespace) -> list[str]:
    """The official runner's command line for the system's settings (the module docstring)."""
    if args.system == "vse_inf":
        return [
            *(sys.executable, str(HERE / "official_vse_inf.py"), "--official", args.official),
            *("--data", str(official), "--seed", str(seed), "--epochs", str(args.epochs)),
            *(["--adam"] if args.settings == "adam" else ["--caption-aug"]),
        ]
    dim = np.load(official / "f30k_precomp" / "train_ims.npy", mmap_mode="r").shape[-1]
    common = [
        *("--batch_size", str(args.batch), "--num_epochs", str(args.epochs), "--margin", "0.2"),
        *("--grad_clip", "2"),
        *("--word_dim", "300", "--embed_size", str(args.embed_dim), "--img_dim", str(dim)),
    ]
    settings = {
        "vsepp": ["--learning_rate", "2e-4", "--lr_update", "15", "--max_violation"],
        "scan": [
            *("--learning_rate", "5e-4", "--lr_update", "10", "--max_violation", "--bi_gru"),
            *("--cross_attn", "t2i"),
            *("--agg_func", "LogSumExp", "--lambda_lse", "6", "--lambda_softmax", "9"),
            *("--raw_feature_norm", "clipped_l2norm", "--precomp_enc_type", "basic"),
        ],
        # SGRAF's opts.py: max of hinges and the Bi-GRU are on unless their flags are given (store_false)
        "sgr": [
            *("--learning_rate", "2e-4", "--lr_update", "30", "--module_name", "SGR"),
            *("--sim_dim", str(args.sim_dim), "--sgr_step", "3"),
        ],
        "gsmn": [
            *("--learning_rate", "2e-4", "--lr_update", "15", "--max_violation", "--bi_gru", "--is_sparse"),
            *("--lambda_softmax", "20", "--feat_dim", str(GSMN_SIZES["num_block"])),
            *("--num_block", str(GSMN_SIZES["num_block"]), "--hid_dim", str(GSMN_SIZES["hid_dim"])),
        ],
    }
    if args.system == "cvse":  # CVSE's store_false flags keep max of hinges and the Bi-GRU on
        concepts = official / "f30k_precomp" / CONCEPTS
        settings["cvse"] = [
            *("--learning_rate", "2e-4", "--learning_rate_MLGCN", "2e-4", "--lr_update", "25"),
            *("--num_attribute", str(concept_count(official / "f30k_precomp")), "--input_channel", "300"),
            *("--wemb_type", "random_init", "--dropout_rate", "0.4", "--Concept_label_ratio", "0.35"),
            *("--attribute_path", str(concepts), "--concept_name", str(concepts / NAMES_FILE)),
            *("--inp_name", str(concepts / VECTORS_FILE), "--adj_file", str(concepts / ADJ_FILE)),
        ]
    if args.system == "vsrn":  # the decoder's max_len reads the dataset's captions
        settings["vsrn"] = [
            *("--learning_rate", "2e-4", "--lr_update", "30", "--max_violation"),
            *("--dim_vid", str(args.embed_dim), "--dim_hidden", str(VSRN_DECODER["hidden"])),
            *("--dim_word", str(VSRN_DECODER["word"]), "--input_dropout_p", "0.2"),
            *("--max_len", str(caption_max_len(official / "f30k_precomp"))),
        ]
    options = [*common, *settings[args.system]]
    if args.hinges == "sum" and args.system == "sgr":  # SGRAF's `--max_violation` is store_false
        options.append("--max_violation")
    elif args.hinges == "sum":  # the other parsers': store_true
        options.remove("--max_violation")
    return [
        *(sys.executable, str(HERE / "official_lineage.py"), "--system", LINEAGE[args.system]),
        *("--official", args.official, "--data", str(official), "--seed", str(seed), "--"),
        *options,
        *(["--learning_rate", str(args.lr)] if args.lr else []),  # the parser keeps the last value
        *(["--learning_rate_MLGCN", str(args.lr)] if args.lr and args.system == "cvse" else []),
    ]


def caption_max_len(folder: Path) -> int:
    """VSRN's `max_len` for the precomp folder `folder`: 3 more than its longest caption in words, so that no
    caption is cut (``<start>``, ``<end>`` and the one padding target the released loader adds)."""
    captions = (folder / f"{split}_caps.txt" for split in ("train", "dev", "test"))
    return 3 + max(len(line.split()) for file in captions for line in file.read_text().splitlines())


def run_one(side: str, seed: int, args: argparse.Namespace, official: Path, store: Path, out: Path) -> dict:
    """One seed's run on one side, cached as `<out>/<data name>/<settings or system>/<side>_s<seed>.json`
    (vse_ray's last weights beside it, `.npz`) with the settings it ran with: a cached run of other settings
    (epochs, sizes, ...) stops the comparison in one line instead of entering it."""
    result = out / args.data_name / args.tag / f"{side}_s{seed}.json"
    if side == "official":
        cmd = official_command(official, seed, args)
        settings: Any = cmd[2:]  # after the interpreter and the runner
    else:
        settings = vse_ray_config(store, out, seed, args)
        npz = str(result.with_suffix(".npz"))
        cmd = [sys.executable, "-c", VSE_RAY_RUN, json.dumps(settings), npz, str(HERE)]
    if result.exists():
        cached = json.loads(result.read_text())
        if cached.get("settings", settings) != settings or len(cached["val_rsum"]) != max(args.epochs, 1):
            raise SystemExit(f"error: {result}: a run of other settings; give another --out or remove it")
        return cached
    result.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    start, load = time.time(), os.getloadavg()[0]
    code, stdout, stderr, cpu = run_timed(cmd, env)
    if code != 0:
        raise RuntimeError(f"{side} seed {seed} failed:\n{stderr[-3000:]}")
    record = json.loads(stdout.strip().splitlines()[-1])
    record |= {
        "wall_s": time.time() - start,
        "cpu_s": cpu,
        "load": [load, os.getloadavg()[0]],
        "settings": settings,
    }
    result.write_text(json.dumps(record))
    print(f"{side} seed {seed}: test rsum {record['test_rsum']:.1f}", flush=True)
    return record


def run_timed(cmd: list[str], env: dict[str, str]) -> tuple[int, str, str, float]:
    """`cmd`'s exit code, output, error output and CPU seconds (user and system: its own and its ended
    children's, read when it is reaped, so runs at once under `--jobs` each count their own)."""
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        process = subprocess.Popen(cmd, env=env, stdout=stdout, stderr=stderr, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        stdout.seek(0)
        stderr.seek(0)
        return process.returncode, stdout.read(), stderr.read(), usage.ru_utime + usage.ru_stime


def targets(
    official: np.ndarray, vse_ray: np.ndarray, e1_official: np.ndarray, e1_vse_ray: np.ndarray
) -> dict:
    """The three targets on these seeds, from each side's test rsums and epoch-1 validation rsums."""
    p_e1 = float(stats.mannwhitneyu(e1_official, e1_vse_ray).pvalue)
    o_mean, o_sd, v_mean, v_sd = official.mean(), official.std(ddof=1), vse_ray.mean(), vse_ray.std(ddof=1)
    return {
        "delta": abs(v_mean - o_mean),
        "sd": v_sd,
        "sd_bound": sd_bound(o_sd),
        "p_e1": p_e1,
        "met": bool(first_two_met(o_mean, o_sd, v_mean, v_sd)) and p_e1 > 0.05,
    }


def sd_bound(official_sd: Any) -> Any:
    """The second target's bound on vse_ray's sd."""
    return 1.5 * official_sd + 2


def first_two_met(o_mean: Any, o_sd: Any, v_mean: Any, v_sd: Any) -> Any:
    """|Δ mean| ≤ 5 and sd(vse_ray) ≤ 1.5 × sd(official) + 2, for numbers or arrays of them."""
    return (abs(v_mean - o_mean) <= 5) & (v_sd <= sd_bound(o_sd))


def resampled_rate(a: np.ndarray, b: np.ndarray, draws: int = 20_000, size: int = 8, seed: int = 0) -> float:
    """How often `size` seeds drawn from `a` (read as official) and from `b` meet the first two targets."""
    rng = np.random.default_rng(seed)
    sa, sb = rng.choice(a, (draws, size)), rng.choice(b, (draws, size))
    return float(first_two_met(sa.mean(1), sa.std(1, ddof=1), sb.mean(1), sb.std(1, ddof=1)).mean())


def one_law_rates(official: np.ndarray, vse_ray: np.ndarray, swaps: int = 400) -> np.ndarray:
    """`resampled_rate` with the two sides' labels swapped at random within each seed's pair: its
    distribution when both runs of a seed come from one law (what the targets allow two such codes)."""
    rng = np.random.default_rng(1)
    rates = []
    for k in range(swaps):
        swap = rng.random(len(official)) < 0.5
        a, b = np.where(swap, vse_ray, official), np.where(swap, official, vse_ray)
        rates.append(resampled_rate(a, b, draws=4_000, seed=k + 1))
    return np.array(rates)


def paired_epoch1(official: np.ndarray, vse_ray: np.ndarray) -> str:
    """Epoch 1 seed by seed: both codes draw the same initial weights for a seed (both embeddings hold
    `<mask>`, augmented or not), so the pairs share most of the warm-up epoch's lottery; the signed-rank test
    of their differences is the sharper test of its law."""
    diff = vse_ray - official
    return (
        f"- epoch 1 paired by seed: vse_ray − official {diff.mean():+.1f} ± {diff.std(ddof=1):.1f}, "
        f"Wilcoxon p = {stats.wilcoxon(vse_ray, official).pvalue:.2f}, "
        f"Pearson r = {stats.pearsonr(official, vse_ray).statistic:.2f}"
    )


def distribution(official: np.ndarray, vse_ray: np.ndarray) -> list[str]:
    """Tests of the two test-rsum distributions (seed by seed) and their lower tails, and the resampled target
    rates."""
    median = np.median(official)
    cut = median - 3 * np.median(np.abs(official - median))
    low_o, low_v = int((official < cut).sum()), int((vse_ray < cut).sum())
    fisher = stats.fisher_exact([[low_o, len(official) - low_o], [low_v, len(vse_ray) - low_v]]).pvalue
    tests = (stats.mannwhitneyu, stats.ks_2samp, stats.levene)
    mw, ks, levene = (test(official, vse_ray).pvalue for test in tests)
    observed, null = resampled_rate(official, vse_ray), one_law_rates(official, vse_ray)
    return [
        f"- test rsum medians {median:.1f} / {np.median(vse_ray):.1f}; Mann-Whitney p = {mw:.2f}, "
        f"Kolmogorov-Smirnov p = {ks:.2f}, Levene p = {levene:.2f}",
        f"- below {cut:.1f} (official median − 3 MAD): official {low_o} of {len(official)}, "
        f"vse_ray {low_v} of {len(vse_ray)} (Fisher p = {fisher:.2f})",
        "- eight seeds a side resampled from these runs (20,000 draws) meet the first two targets: "
        f"vse_ray against official {observed:.0%}; "
        f"official against official {resampled_rate(official, official):.0%}; "
        f"with the labels swapped at random within seeds (one law) {null.mean():.0%} on average, "
        f"{(null <= observed).mean():.0%} of 400 swaps at or below the observed rate",
    ]


def report(runs: dict[str, list[dict]], args: argparse.Namespace) -> str:
    """The Markdown report: per seed, means and sds, the three targets (all seeds and each block of eight)
    and the distribution tests."""
    settings = f", settings `{args.settings}`" if args.system == "vse_inf" else ""
    lines = [f"# Run parity, {SYSTEMS[args.system][0]}, dataset `{args.data_name}`{settings}", ""]
    header = " | ".join(f"val e{e + 1}" for e in range(args.epochs))
    lines += [f"| side | seed | test rsum | {header} |", "|---" * (3 + args.epochs) + "|"]
    for side, records in runs.items():
        for r in records:
            vals = " | ".join(f"{v:.1f}" for v in r["val_rsum"])
            lines.append(f"| {side} | {r['seed']} | {r['test_rsum']:.1f} | {vals} |")
    test = {side: np.array([r["test_rsum"] for r in records]) for side, records in runs.items()}
    val = {side: np.array([r["val_rsum"] for r in records]) for side, records in runs.items()}
    timed: list[str] = []
    for side in runs:
        sd = test[side].std(ddof=1) if len(test[side]) > 1 else 0.0
        timed += [
            f"{side} {np.mean([r['wall_s'] for r in walls]):.0f} s wall, "
            f"{np.mean([r['cpu_s'] for r in walls]):.0f} s CPU a run ({len(walls)} timed)"
            for walls in [[r for r in runs[side] if "cpu_s" in r]]
            if walls
        ]
        means = " | ".join(f"{v:.1f}" for v in val[side].mean(axis=0))
        lines.append(f"| {side} | mean ± sd | {test[side].mean():.1f} ± {sd:.1f} | {means} |")
    if timed:
        lines += [
            "",
            "- time (one thread a run; each run's load average at its start and end in the JSON): "
            + "; ".join(timed),
        ]
    if set(runs) != set(SIDES) or len(runs["official"]) < 2:
        return "\n".join(lines) + "\n"
    e1 = {side: val[side][:, 0] for side in SIDES}
    n = len(test["official"])
    blocks = [("all", slice(None))] + (
        [(f"{lo}–{lo + 7}", slice(lo, lo + 8)) for lo in range(0, n - 7, 8)] if n > 8 else []
    )
    lines += [
        "",
        "| seeds | \\|Δ mean\\| ≤ 5 | sd vse_ray / bound | epoch-1 Mann-Whitney p > 0.05 | all three |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for name, part in blocks:
        t = targets(test["official"][part], test["vse_ray"][part], e1["official"][part], e1["vse_ray"][part])
        met = "yes" if t["met"] else "no"
        lines.append(
            f"| {name} | {t['delta']:.1f} | {t['sd']:.1f} / {t['sd_bound']:.1f} | {t['p_e1']:.2f} | {met} |"
        )
    seeds_paired = [r["seed"] for r in runs["official"]] == [r["seed"] for r in runs["vse_ray"]]
    paired = [paired_epoch1(e1["official"], e1["vse_ray"])] if seeds_paired else []
    return "\n".join([*lines, "", *paired, *distribution(test["official"], test["vse_ray"])]) + "\n"


def main() -> None:
    args = parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    official, store = make_data(out, args)
    seeds = args.seed_list or range(args.seeds)
    jobs = [(side, seed) for seed in seeds for side in args.sides]
    with ThreadPoolExecutor(args.jobs) as pool:
        done = list(pool.map(lambda job: run_one(*job, args, official, store, out), jobs))
    runs = {side: [r for (s, _), r in zip(jobs, done, strict=True) if s == side] for side in args.sides}
    text = report(runs, args)
    (out / f"run_parity_{args.data_name}_{args.tag}.md").write_text(text)
    (out / f"run_parity_{args.data_name}_{args.tag}.json").write_text(json.dumps(runs, indent=1))
    print(text)


if __name__ == "__main__":
    main()
