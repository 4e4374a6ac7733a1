"""The initial weights each authors' model draws right after `torch.manual_seed(seed)`, as `.npz` files.

Writes `<system>_start.npz` per system: the state dict of each part of the official model object (the parts
its checkpoints store, named as they name them: ``img_enc.``, ``txt_enc.``, ``sim_enc.``, ...), right after
it is built. `tests/parity/test_initial_weights.py` compares vse_ray's models built after the same seed with
them (the committed files: `tests/fixtures/official/*_start.npz`, made with the defaults below). Nothing of
the authors' code is copied here; the checkouts under `--official` are imported and changed at run time only,
through `official_code.py`: empty modules for what they import but never call here (`tensorboard_logger`,
`nltk`, `cv2`, `imageio`, `torchtext`, VSRN's CIDEr-D scorer), `Tensor.cuda` a no-op, and the Python 3
spelling of the Python 2 idioms of SCAN, SGRAF, VSRN and CVSE (`official_code.EDITS`).

The sizes are tiny (features 12, joint space 16, words 10, vocabulary 20, as the step-parity fixtures); each
system's other options are its training defaults (SCAN: t2i LogSumExp; SGRAF: `opts.parse_opt`; CVSE: its
`train_f30k.py` parser with `--wemb_type random_init`, an adjacency file of 8 concepts drawn with NumPy).
`--official` holds the checkouts as folders `vsepp`, `SCAN`, `SGRAF`, `GSMN`, `VSRN`, `CVSE`.

    python parity/official_starts.py --official /tmp/checkouts --out /tmp/starts --seed 0
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import pickle
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from official_code import CIDER, no_cuda, parsed_options, patched_checkout, stub_modules

IMG, EMBED, WORD, VOCAB = 12, 16, 10, 20
CVSE_VOCAB, CVSE_CONCEPTS = 31, 8
UNUSED = ("tensorboard_logger", "nltk", "cv2", "imageio", "torchtext")
LOCAL_MODULES = ("model", "model_CVSE", "opts", "layers", "graph_model", "train_f30k")
LOCAL_PACKAGES = ("util", "GCN_lib", "models", "misc")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--official", type=Path, required=True, help="folder of the checkouts (see above)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the .npz files")
    parser.add_argument("--seed", type=int, default=0, help="torch.manual_seed before building")
    parser.add_argument("--systems", nargs="+", choices=sorted(BUILDERS), default=sorted(BUILDERS))
    return parser.parse_args()


@contextlib.contextmanager
def imported_from(folder: Path) -> Iterator[None]:
    """`folder` first on `sys.path`; the checkouts' modules of shared names forgotten before and after."""

    def forget() -> None:
        for name in list(sys.modules):
            if name in LOCAL_MODULES or name.split(".")[0] in LOCAL_PACKAGES:
                del sys.modules[name]

    forget()
    sys.path.insert(0, str(folder))
    cwd = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(cwd)
        sys.path.remove(str(folder))
        forget()


def saved_parts(model: object, parts: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Each part's state dict, its names prefixed with the part's, as arrays."""
    return {
        f"{part}.{name}": value.detach().cpu().numpy()
        for part in parts
        for name, value in getattr(model, part).state_dict().items()
    }


def _sizes(**extra: Any) -> argparse.Namespace:
    """Options of the VSE++ lineage at the tiny sizes, training settings at their defaults."""
    common: dict[str, Any] = dict(
        data_name="f30k_precomp", img_dim=IMG, embed_size=EMBED, word_dim=WORD, vocab_size=VOCAB,
        num_layers=1, no_imgnorm=False, no_txtnorm=False, use_abs=False, finetune=False, cnn_type="vgg19",
        measure="cosine", margin=0.2, max_violation=True, grad_clip=2.0, learning_rate=2e-4,
    )  # fmt: skip
    return argparse.Namespace(**{**common, **extra})


def vsepp(root: Path, seed: int) -> dict[str, np.ndarray]:
    with imported_from(root / "vsepp"):
        model_py = importlib.import_module("model")
        torch.manual_seed(seed)
        return saved_parts(model_py.VSE(_sizes()), ("img_enc", "txt_enc"))


def scan(root: Path, seed: int) -> dict[str, np.ndarray]:
    opt = _sizes(
        precomp_enc_type="basic", bi_gru=True, raw_feature_norm="clipped_l2norm", cross_attn="t2i",
        agg_func="LogSumExp", lambda_lse=6.0, lambda_softmax=9.0,
    )  # fmt: skip
    with imported_from(patched_checkout(root / "SCAN", "scan", ("model.py",))):
        model_py = importlib.import_module("model")
        torch.manual_seed(seed)
        return saved_parts(model_py.SCAN(opt), ("img_enc", "txt_enc"))


def sgraf(module_name: str) -> Callable[[Path, int], dict[str, np.ndarray]]:
    def build(root: Path, seed: int) -> dict[str, np.ndarray]:
        sys.argv = [
            "train.py", "--img_dim", str(IMG), "--embed_size", str(EMBED), "--sim_dim", "8",
            "--word_dim", str(WORD), "--module_name", module_name,
        ]  # fmt: skip
        with imported_from(root / "SGRAF"):
            opt = importlib.import_module("opts").parse_opt()
        opt.vocab_size = VOCAB  # as train.py sets it
        with imported_from(patched_checkout(root / "SGRAF", "sgraf", ("model.py",))):
            model_py = importlib.import_module("model")
            torch.manual_seed(seed)
            return saved_parts(model_py.SGRAF(opt), ("img_enc", "txt_enc", "sim_enc"))

    return build


def gsmn(root: Path, seed: int) -> dict[str, np.ndarray]:
    opt = _sizes(
        bi_gru=True, feat_dim=4, num_block=4, hid_dim=16, out_dim=1, lambda_softmax=20, is_sparse=False
    )
    with imported_from(root / "GSMN"):
        model_py = importlib.import_module("model")
        torch.manual_seed(seed)
        return saved_parts(model_py.GSMN(opt), ("img_enc", "txt_enc", "i2t_match_G", "t2i_match_G"))


def vsrn(root: Path, seed: int) -> dict[str, np.ndarray]:
    """Its checkpoint's two encoders, and the caption model it trains but does not save
    (``caption_model.``)."""
    opt = _sizes(
        word_dim=8, dim_vid=EMBED, dim_hidden=10, dim_word=6, max_len=7, bidirectional=0, rnn_type="gru",
        input_dropout_p=0.2, rnn_dropout_p=0.5,
    )  # fmt: skip
    stub_modules(CIDER)
    with imported_from(patched_checkout(root / "VSRN", "vsrn")):
        model_py = importlib.import_module("model")
        torch.manual_seed(seed)
        return saved_parts(model_py.VSRN(opt), ("img_enc", "txt_enc", "caption_model"))


def cvse(root: Path, seed: int) -> dict[str, np.ndarray]:
    """`opt` from `train_f30k.py`'s own parser (its `main()` run up to `parse_args`)."""
    with imported_from(patched_checkout(root / "CVSE", "cvse")):
        sys.argv = [
            "train_f30k.py", "--img_dim", str(IMG), "--embed_size", str(EMBED), "--word_dim", "8",
            "--num_attribute", str(CVSE_CONCEPTS), "--input_channel", "10", "--wemb_type", "random_init",
        ]  # fmt: skip
        opt = parsed_options(importlib.import_module("train_f30k"))
        opt.vocab_size = CVSE_VOCAB
        opt.adj_file = "adjacency.pkl"
        rng = np.random.default_rng(seed)
        co = rng.integers(0, 5, size=(CVSE_CONCEPTS, CVSE_CONCEPTS)).astype(np.float64)
        counts = rng.integers(5, 50, size=CVSE_CONCEPTS).astype(np.float64)
        with open(opt.adj_file, "wb") as f:
            pickle.dump({"nums": counts, "adj_O_P": co.copy(), "adj_O_M": co.copy(), "adj_all": co}, f)
        model_py = importlib.import_module("model_CVSE")
        torch.manual_seed(seed)
        model = model_py.CVSE({f"w{i}": i for i in range(CVSE_VOCAB)}, opt)
        parts = (
            "img_enc", "txt_enc", "V_self_atten_enhance", "T_self_atten_enhance",
            "V_consensus_level_embedding", "T_consensus_level_embedding", "C_GCN", "Multi_feature_fusing",
        )  # fmt: skip
        return saved_parts(model, parts)


BUILDERS: dict[str, Callable[[Path, int], dict[str, np.ndarray]]] = {
    "vsepp": vsepp,
    "scan": scan,
    "sgraf_sgr": sgraf("SGR"),
    "sgraf_saf": sgraf("SAF"),
    "gsmn": gsmn,
    "vsrn": vsrn,
    "cvse": cvse,
}


def main() -> None:
    args = parse_args()
    no_cuda()
    stub_modules(UNUSED, only_absent=True)
    args.out.mkdir(parents=True, exist_ok=True)
    root = args.official.resolve()
    for system in args.systems:
        state = BUILDERS[system](root, args.seed)
        np.savez_compressed(args.out / f"{system}_start.npz", **state)
        print(f"{system}: {len(state)} tensors -> {args.out / f'{system}_start.npz'}")


if __name__ == "__main__":
    main()
