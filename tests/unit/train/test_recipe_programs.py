"""Every recipe against the released program it follows: the validation images, the checkpoint rule and the
epoch count.

Each `Program` row was read in its repository (files and commit in ``read``). vse_ray keeps the best
validation rsum of a run, validating after each epoch and every ``val_every`` steps; a program that keeps its
checkpoint by another measure, or counts its steps otherwise, must be listed by every recipe that follows it
(``listed``: keys of its ``deviations:`` entries). The SCAN-style ``PrecompDataset`` loaders set the dev
split's length to 5,000 captions: validation sees the first 1,000 of Flickr30K's 1,014 dev images
(``val_images: 1000``), and LSEH's IAPR TC-12 loaders the first 1,000 dev captions, all 1,000 images.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from vse_ray.train.config import TrainConfig
from vse_ray.train.recipe import load_recipe, read_recipe, recipe_names

DEV_IMAGES = {"f30k": 1014, "coco": 5000, "iaprtc12": 1000}  # the dev split a recipe's data holds
PRECOMP = {"f30k": 1000, "coco": 1000, "iaprtc12": 1000}  # the first 5,000 (IAPR TC-12: 1,000) dev captions


@dataclass(frozen=True)
class Program:
    """A released training program: what it validates on, when it keeps a checkpoint, how long it trains."""

    read: str  # where this row was read
    epochs: dict[str, int]  # per dataset, "dataset/module" or "ft" (a second stage)
    val_images: dict[str, int]  # images validated on, per dataset
    val_every: dict[str, int]  # vse_ray's val_every for its mid-epoch selection (0: epoch ends only)
    listed: tuple[str, ...] = ()  # deviation keys for what vse_ray does otherwise
    val_listed: str = ""  # the deviation key that lists other validation images


EPOCH_ENDS = {"f30k": 0, "coco": 0, "iaprtc12": 0}
STEPS_500 = {"f30k": 500, "coco": 500, "iaprtc12": 0}  # IAPR TC-12: 140 steps an epoch, listed (val_steps)

PROGRAMS = {
    "vsepp": Program(
        "fartashf/vsepp abe382f: data.py (Flickr30K: every dev caption; COCO: coco_dev_ids[:5000]), train.py "
        "(30 epochs; mid-epoch validation discarded); the fine-tuned rows 15 more (vsepp.md Sec. 3.2)",
        {"f30k": 30, "coco": 30, "ft": 15},
        {"f30k": 1014, "coco": 1000},
        EPOCH_ENDS,
    ),
    "ladder": Program(
        "cdluminate/ladderloss b37ad78 Code/thCapRank.py: 1,000 validation images of a seeded split with "
        "their first caption, R@1 + R@5 + R@10 at step 0, every 512 global steps and at the end; --maxepoch "
        "30, fine-tuning 15",
        {"f30k": 30, "coco": 30, "ft": 15},
        {"f30k": 1000, "coco": 1000},
        {"f30k": 512, "coco": 512},
        listed=("selection",),
        val_listed="split",
    ),
    "ladder_bcls": Program(
        "the ladder code as above at BCLS's stated settings (bcls_kendall.md Sec. IV-A: 20 epochs)",
        {"f30k": 20, "coco": 20},
        {"f30k": 1000, "coco": 1000},
        {"f30k": 512, "coco": 512},
        listed=("selection",),
        val_listed="split",
    ),
    "vse_infty": Program(
        "woodfrog/vse_infty c9943b2 train_region.sh (25 epochs), train.py; lib/datasets/image_caption.py "
        "d2a2221 (no IAPR TC-12 reader: the LMH1 row validates on its 1,000 dev images)",
        {"f30k": 25, "coco": 25, "iaprtc12": 25},
        PRECOMP,
        EPOCH_ENDS,
    ),
    "vse_infty_lseh": Program(
        "yangong23/VSEnetworksLSEH VSEinfty_LSEH/train.py 5985980 (mid-epoch validation discarded), "
        "arguments.py (30 epochs), lib/datasets/image_caption.py 5985980; IAPRTC12/ 06ac977",
        {"f30k": 30, "coco": 30, "iaprtc12": 30},
        PRECOMP,
        EPOCH_ENDS,
    ),
    "vsepp_lseh": Program(
        "yangong23/VSEnetworksLSEH VSEpp_LSEH/train.py 9b3db21 (30 epochs; rsum every 500 global steps and "
        "at epoch ends), data.py ace0e0d; IAPRTC12/data.py 32ee520",
        {"f30k": 30, "coco": 30, "iaprtc12": 30},
        PRECOMP,
        STEPS_500,
        listed=("selection", "val_steps"),
    ),
    "vsrn": Program(
        "KunpengLi1994/VSRN 777ae74 train.py (30 epochs; R@1 + R@5 every 500 global steps and at epoch "
        "ends), data.py 5fb66f3; yangong23/VSEnetworksLSEH VSRN_LSEH/train.py 6389bfd, data.py 3cdec5a",
        {"f30k": 30, "coco": 30, "iaprtc12": 30},
        PRECOMP,
        STEPS_500,
        listed=("selection", "val_steps"),
    ),
    "sgraf": Program(
        "Paranioar/SGRAF 50d0c6f README (Flickr30K: SGR 40 epochs, SAF 30; COCO 20; LMH1 on IAPR TC-12: the "
        "Flickr30K ones), train.py (mid-epoch validation discarded), data.py 939af22",
        {"f30k/sgr": 40, "f30k/saf": 30, "coco": 20, "iaprtc12/sgr": 40, "iaprtc12/saf": 30},
        PRECOMP,
        EPOCH_ENDS,
    ),
    "sgraf_lseh": Program(
        "yangong23/VSEnetworksLSEH SGRAF_LSEH/train.py a0952e6, data.py 183f8ff, the README's commands "
        "(Flickr30K: SGR 40 epochs, SAF 30; COCO 20); IAPRTC12/opts.py b1db4fb (40), data.py 259bfb0",
        {"f30k/sgr": 40, "f30k/saf": 30, "coco": 20, "iaprtc12": 40},
        PRECOMP,
        EPOCH_ENDS,
    ),
    "bcls": Program(
        "BCLS's stated settings (bcls_kendall.md Sec. IV-A: 20 epochs) on SGRAF's (939af22) and SCAN's "
        "(kuanghuei/SCAN 053693f) data.py and train.py (rsum at epoch ends)",
        {"f30k": 20, "coco": 20},
        PRECOMP,
        EPOCH_ENDS,
    ),
    "cvse": Program(
        "BruceW91/CVSE data.py d4a0b4e, train_f30k.py 1dc771f (50 epochs), train_coco.py 443f0cd (30); "
        "mid-epoch validation discarded",
        {"f30k": 50, "coco": 30},
        PRECOMP,
        EPOCH_ENDS,
    ),
    "sam_cvse": Program(
        "AndresPMD/semantic_adaptive_margin 554fef3 data.py, train_f30k.py (50 epochs), train_coco.py (30): "
        "--use_metric keeps the epoch end with the best NCS sum; mid-epoch validation discarded",
        {"f30k": 50, "coco": 30},
        PRECOMP,
        EPOCH_ENDS,
        listed=("selection",),
    ),
    "gsmn": Program(
        "CrossmodalGroup/GSMN dcc0f61 README (Flickr30K 30 epochs, COCO 20), train.py (mid-epoch validation "
        "discarded), data.py",
        {"f30k": 30, "coco": 20},
        PRECOMP,
        EPOCH_ENDS,
    ),
    "cusa": Program(
        "lerogo/aaai24_itr_cusa 5b996f4 configs/vitb32/{flickr,coco}/only_contrastive.yaml (40 and 30 "
        "epochs), retrieval.py: validates and tests on the whole Karpathy val and test splits after each "
        "epoch and keeps the epoch with the best test mean recall",
        {"f30k": 40, "coco": 30},
        {"f30k": 1014, "coco": 5000},
        EPOCH_ENDS,
        listed=("selection",),
        val_listed="val_split",
    ),
}

FOLLOWS = [  # (recipe name pattern, program): the first match
    (r"^vsepp_bcls_", "ladder_bcls"),
    (r"_bcls_", "bcls"),
    (r"^(cvsepp|vsepp_ladder)_", "ladder"),
    (r"^vsepp_(lseh|lmh1|lmh2)_", "vsepp_lseh"),
    (r"^(vsepp|vse0)_", "vsepp"),
    (r"^vse_inf_(lseh|lmh2)_", "vse_infty_lseh"),
    (r"^vse_inf_", "vse_infty"),
    (r"^vsrn_", "vsrn"),
    (r"^sgraf_(sgr|saf)_(lseh|lmh2)_", "sgraf_lseh"),
    (r"^(sgraf|sgr|saf)_", "sgraf"),
    (r"^cvse_baseline_", "cvse"),
    (r"^cvse_", "sam_cvse"),
    (r"^gsmn_", "gsmn"),
    (r"^clip_infonce_", "cusa"),
]


def _program(name: str) -> Program:
    return PROGRAMS[next(program for pattern, program in FOLLOWS if re.search(pattern, name))]


def _dataset(name: str) -> str:
    return "iaprtc12" if "_iaprtc12" in name else "coco" if "_coco" in name else "f30k"


def _listed(recipe: str) -> set[str]:
    return {next(iter(d)) for d in read_recipe(recipe)[1].get("deviations") or [] if isinstance(d, dict)}


def _against_program(recipe: str) -> list[str]:
    """What recipe `recipe` (a shipped name or a path, the program read from its name) does otherwise than its
    program and does not list: the validation images, when it validates, what it keeps, its epochs."""
    name = Path(recipe).stem
    loaded, program, dataset = load_recipe(recipe, "<data>"), _program(name), _dataset(name)
    config, listed = loaded.config, _listed(recipe)
    found = []
    validated = config.val_images or DEV_IMAGES[dataset]
    if validated != program.val_images[dataset] and program.val_listed not in listed:
        found.append(f"validates on {validated} images, the program on {program.val_images[dataset]}")
    if config.val_every != program.val_every[dataset]:
        found.append(f"val_every {config.val_every}, the program's {program.val_every[dataset]}")
    if config.patience:
        found.append("stops early (patience), the program trains every epoch")
    if not set(program.listed) <= listed:
        found.append(f"does not list {sorted(set(program.listed) - listed)}")
    module = f"{dataset}/{config.model_params.get('module')}"
    key = "ft" if loaded.init_from else module if module in program.epochs else dataset
    if config.epochs != program.epochs[key]:
        found.append(f"trains {config.epochs} epochs, the program {program.epochs[key]}")
    return [f"{name}: {f} ({program.read})" for f in found]


def test_every_recipe_follows_a_program():
    assert all(any(re.search(p, name) for p, _ in FOLLOWS) for name in recipe_names())


@pytest.mark.parametrize("name", recipe_names())
def test_every_recipe_validates_selects_and_trains_as_its_program(name):
    """The validation images, the checkpoint rule (when it validates, what it keeps) and the epoch count of
    the program the recipe follows, or the deviation that lists what vse_ray cannot express."""
    assert _against_program(name) == []


@pytest.mark.parametrize(
    ("train", "found"),
    [
        ("{val_images: 0}", "validates on 1014 images, the program on 1000"),
        ("{val_every: 1000}", "val_every 1000, the program's 0"),
        ("{epochs: 30}", "trains 30 epochs, the program 40"),
        ("{patience: 3}", "stops early"),
    ],
)
def test_the_check_catches_a_recipe_that_validates_or_trains_otherwise(tmp_path, train, found):
    """A SCAN-style Flickr30K row left at val_images 0 validates on all 1,014 dev images: caught, as are
    another validation interval, patience and epoch count."""
    path = tmp_path / "sgr_sam_f30k.yaml"
    path.write_text(f"base: sgr_sam_f30k\ntrain: {train}\n")
    assert [found in line for line in _against_program(str(path))] == [True]


def test_the_check_wants_the_programs_own_selection_listed(tmp_path):
    path = tmp_path / "vsrn_sam_f30k.yaml"
    path.write_text("base: vsrn_sam_f30k\ndeviations: [{selection: null}]\n")
    assert "does not list ['selection']" in " ".join(_against_program(str(path)))


# The evaluation side: how each paper scored the numbers a recipe reports (`paper:` block, docs/recipes.md).


@dataclass(frozen=True)
class Scoring:
    """How a paper's numbers were scored: the images of each row kind, the split, the reference of NCS@K
    and the captions of CS@K (:class:`~vse_ray.evaluation.protocols.Protocol`), read in the code that
    scored them."""

    read: str
    images: dict[str, str]  # row kind ("f30k", "iaprtc12", "coco1k", "coco1fold", "coco5k") -> image set
    split: str = "test"
    ncs_reference: str = "cider"
    cs_captions: str = "all"


EVALRANK = {"f30k": "full", "iaprtc12": "full", "coco1k": "coco1k", "coco5k": "coco5k"}

SCORINGS = {
    "sam_ncs.md": Scoring(
        "AndresPMD/semantic_adaptive_margin 554fef3: run_all.py:88 (N@K with SPICE; the paper: 'we "
        "employ SPICE when NCS is used as an evaluation metric'), evaluate.py:16, 51-52 and "
        "evaluation.py:181-193 (MSCOCO 1K: --split test, coco_precomp's 1,000 test images, scored once), "
        "metrics/eval.py:48-58 (the relevance of the first 1,000 or 5,000 test images)",
        {"f30k": "full", "coco1k": "first1k", "coco5k": "coco5k"},
        ncs_reference="spice",
    ),
    "ladder_loss_cvsepp.md": Scoring(
        "cdluminate/ladderloss b37ad78: thCapRank.py:399-401, 652-654, 693-695 (feat_best.pth: the "
        "validation images at the best validation, the first 1,000, or all 5,000 with --eval5k; the test "
        "split is never scored), Makefile:199-200, 259 (doRecall and doTau on those dumps), "
        "ladderloss.py:1192-1207, 1262-1299 (doTau: one caption per image, the S-BERT cosine of the first "
        "captions)",
        {"f30k": "first1k", "coco1k": "first1k", "coco5k": "coco5k"},
        split="val",
        cs_captions="first",
    ),
    "vsepp.md": Scoring(
        "fartashf/vsepp abe382f evaluation.py:123-160 evalrank (COCO 1K: fold5, the mean over five folds; a "
        "'1 fold' row without fold5: the first 1,000 test images; 5K and Flickr30K: the test split)",
        {**EVALRANK, "coco1fold": "first1k"},
    ),
    "lseh.md": Scoring("the SCAN-style evalrank of each program's repository (fold5 for COCO 1K)", EVALRANK),
    "bcls_kendall.md": Scoring("SGRAF's and SCAN's evalrank (fold5 for COCO 1K)", EVALRANK),
    "vse_infty/README.md": Scoring("woodfrog/vse_infty eval.py (fold5 for COCO 1K)", EVALRANK),
    "cusa.md": Scoring("lerogo/aaai24_itr_cusa retrieval.py: the whole test split", EVALRANK),
}


def _row_kind(name: str, paper: dict) -> str:
    dataset = _dataset(name)
    if dataset != "coco":
        return dataset
    return "coco5k" if "coco5k" in name else "coco1fold" if "(1 fold)" in str(paper.get("row")) else "coco1k"


def _against_paper(recipe: str) -> list[str]:
    """What recipe `recipe` (a shipped name or a path) scores otherwise than its paper did and does not list
    (deviation key ``scoring``): the image set, the split, NCS@K's reference and CS@K's captions of the
    metrics it reports."""
    from vse_ray.evaluation.protocols import Protocol

    name = Path(recipe).stem
    _, raw = read_recipe(recipe)
    paper, reports = raw.get("paper") or {}, raw.get("reports") or {}
    if not reports or "scoring" in _listed(recipe):
        return []
    scoring, ours = SCORINGS[paper["file"]], Protocol.of(paper)
    wanted = {"images": scoring.images[_row_kind(name, paper)], "split": scoring.split}
    if any(k.startswith("NCS_") for k in reports):
        wanted["ncs_reference"] = scoring.ncs_reference
    if any(k.startswith("CS_") for k in reports):
        wanted["cs_captions"] = scoring.cs_captions
    have = {**vars(ours), "split": paper.get("split", "test")}
    return [
        f"{name}: {key} {have[key]}, the paper's {value} ({scoring.read})"
        for key, value in wanted.items()
        if have[key] != value
    ]


def test_every_paper_has_its_scoring():
    assert {read_recipe(n)[1]["paper"]["file"] for n in recipe_names()} <= set(SCORINGS)


@pytest.mark.parametrize("name", recipe_names())
def test_every_recipe_scores_as_its_paper(name):
    """The images, split, NCS@K reference and CS@K captions the paper's numbers were scored with, or the
    deviation ``scoring`` that lists what vse_ray cannot express."""
    assert _against_paper(name) == []


@pytest.mark.parametrize(
    ("recipe", "paper", "found"),
    [
        (
            "cvse_sam_coco",
            "{file: sam_ncs.md, row: x, protocol: coco1k, ncs_reference: spice}",
            "images coco1k",
        ),
        ("sgr_sam_f30k", "{file: sam_ncs.md, row: x}", "ncs_reference cider, the paper's spice"),
        (
            "cvsepp_coco5k_resnet152",
            "{file: ladder_loss_cvsepp.md, protocol: coco5k, cs_captions: first}",
            "split test",
        ),
        (
            "cvsepp_f30k_vgg19",
            "{file: ladder_loss_cvsepp.md, row: x, split: val, protocol: first1k}",
            "cs_captions",
        ),
    ],
)
def test_the_check_catches_a_recipe_scored_otherwise(tmp_path, recipe, paper, found):
    path = tmp_path / f"{recipe}.yaml"
    reports = read_recipe(recipe)[1]["reports"]
    path.write_text(f"base: {recipe}\npaper: {paper}\nreports: {dict(reports)}\n")
    assert [found in line for line in _against_paper(str(path))] == [True]
    path.write_text(path.read_text() + "deviations: [{scoring: the paper's protocol is not expressible}]\n")
    assert _against_paper(str(path)) == []


# --- CLIP recipes against CUSA's training program ---------------------------------------------------------
# Read at lerogo/aaai24_itr_cusa 5b996f4; "yaml" is configs/vitb32/{flickr,coco}/only_contrastive.yaml (the
# same lines in both). Each row: what, where it is read, the recipe's value, CUSA's value, and the deviation
# key under which a recipe that does otherwise must list it (None: vse_ray expresses it, so it must match).
CUSA_REPO = "lerogo/aaai24_itr_cusa 5b996f4"


@dataclass(frozen=True)
class Setting:
    """One setting of CUSA's program, as a recipe's config expresses it."""

    what: str
    read: str
    ours: Callable[[TrainConfig], object]
    theirs: object
    listed: str | None = None


CUSA_PROGRAM = (
    Setting("processes", "README.md:126-132 (torchrun --nproc_per_node=4)", lambda c: c.num_workers, 4),
    Setting("pairs per process", "yaml:11 batch_size_train: 128", lambda c: c.batch_size, 128),
    Setting(
        "a loss per process, no gather",
        "yaml:24 is_all_gather: False; unire/model.py:337-350; retrieval.py:76-90 (DDP)",
        lambda c: c.loss_span,
        "worker",
    ),
    Setting(
        "LayerNorm + Linear head per tower",
        "unire/model.py:50-54, 148-166, 184-188",
        lambda c: c.model_params.get("projection_head", False),
        True,
    ),
    Setting(
        "targets shared by the image's captions",
        "retrieval.py:229 (idx); unire/model.py:236-241",
        lambda c: c.loss_params.get("targets"),
        "multi",
    ),
    Setting(
        "τ itself learned", "unire/model.py:64-65, 243-244", lambda c: c.loss_params.get("scale_param"), "tau"
    ),
    Setting(
        "τ at the start", "yaml:32 tau: 0.05", lambda c: 1 / c.loss_params.get("init_scale", 1 / 0.07), 0.05
    ),
    Setting(
        "τ not from the checkpoint", "unire/model.py:64-65", lambda c: c.loss_params.get("model_scale"), False
    ),
    Setting(
        "τ range [0.01, 0.10]",
        "yaml:33-34; unire/model.py:283-286, 330",
        lambda c: [1 / t for t in reversed(c.loss_params.get("scale_range", (1.0, 100.0)))],
        [0.01, 0.1],
    ),
    Setting(
        "mean over the candidates, directions summed",
        "yaml:37 contrastive_loss_mode: mean; unire/model.py:242-250",
        lambda c: c.loss_params.get("candidate_mean", False),
        True,
    ),
    Setting("AdamW", "yaml:106", lambda c: c.optimizer, "adamw"),
    Setting("learning rate", "yaml:106 lr: 0.00001", lambda c: c.lr, 1e-5),
    Setting("weight decay", "yaml:106 weight_decay: 0.0001", lambda c: c.weight_decay, 1e-4),
    Setting(
        "no decay on 1-D parameters and biases",
        "optim/optim_factory.py:25-48",
        lambda c: c.weight_decay_exclude,
        True,
    ),
    Setting("no gradient clipping", "retrieval.py:233-235", lambda c: c.grad_clip >= 1e6, True),
    Setting("no warm-up", "yaml:114 warmup_epochs: 0", lambda c: c.warmup_epochs, 0),
    Setting(
        "ALBEF's pre_caption before the tokenizer",
        "dataset/utils.py:4-28; dataset/cross_coco_dataset.py:46, 91-93",
        lambda c: c.model_params.get("caption_cleaning", ""),
        "albef",
    ),
    Setting(
        "a cosine per epoch to 1e-6",
        "yaml:108-113; retrieval.py:131 (lr_scheduler.step(epoch))",
        lambda c: c.lr_schedule,
        "cosine per epoch",
        listed="schedule",
    ),
    Setting(
        "weight decay on τ (0-D, not .bias)",
        "optim/optim_factory.py:31",
        lambda c: "no decay of a loss's parameters",
        "decayed",
        listed="tau_decay",
    ),
)
CUSA_COCO = Setting(
    "every caption of an image (COCO: up to seven)",
    "dataset/cross_coco_dataset.py:24-30, 87-108",
    lambda c: "five per image",
    "all",
    listed="captions",
)


def _against_cusa(recipe: str) -> list[str]:
    """What a CLIP recipe (a shipped name or a path) does otherwise than CUSA's program and does not list."""
    config, listed = load_recipe(recipe, "<data>").config, _listed(recipe)
    program = CUSA_PROGRAM + ((CUSA_COCO,) if _dataset(Path(recipe).stem) == "coco" else ())
    found = []
    for s in program:
        ours = s.ours(config)
        same = ours == pytest.approx(s.theirs) if isinstance(s.theirs, float | list) else ours == s.theirs
        if not same and (s.listed is None or s.listed not in listed):
            found.append(f"{s.what}: {ours!r}, CUSA's {s.theirs!r} ({CUSA_REPO} {s.read})")
    return found


@pytest.mark.parametrize("name", [n for n in recipe_names() if _program(n) == PROGRAMS["cusa"]])
def test_clip_recipes_train_as_cusas_program(name):
    """Each setting of CUSA's released program the recipe expresses, or lists where vse_ray cannot."""
    assert _against_cusa(name) == []


@pytest.mark.parametrize(
    ("train", "found"),
    [
        ("{loss_span: global}", "a loss per process, no gather: 'global'"),
        ("{loss_params: {targets: hard}}", "targets shared by the image's captions: 'hard'"),
        ("{model_params: {projection_head: false}}", "LayerNorm + Linear head per tower: False"),
        ("{weight_decay_exclude: false}", "no decay on 1-D parameters and biases: False"),
        ("{loss_params: {scale_range: [1.0, 100.0]}}", "τ range [0.01, 0.10]"),
    ],
)
def test_the_cusa_check_catches_a_recipe_that_trains_otherwise(tmp_path, train, found):
    path = tmp_path / "clip_infonce_coco5k.yaml"
    path.write_text(f"base: clip_infonce_coco5k\ntrain: {train}\n")
    assert [found in line for line in _against_cusa(str(path))] == [True]


def test_the_cusa_check_wants_what_vse_ray_cannot_express_listed(tmp_path):
    path = tmp_path / "clip_infonce_coco5k.yaml"
    path.write_text("base: clip_infonce_coco5k\ndeviations: [{captions: null}, {tau_decay: null}]\n")
    found = _against_cusa(str(path))
    assert len(found) == 2
    assert found[0].startswith("weight decay on τ") and found[1].startswith("every caption of an image")
