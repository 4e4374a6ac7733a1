"""Run the authors' VSE++, SCAN, SGRAF, GSMN, VSRN or CVSE training from a checkout, on the CPU.

Used by `run_parity.py --system vsepp|scan|sgr|gsmn|vsrn|cvse` (fartashf/vsepp, kuanghuei/SCAN,
Paranioar/SGRAF as `--system sgraf` here, CrossmodalGroup/GSMN, KunpengLi1994/VSRN, BruceW91/CVSE with its
`train_f30k.py` and Flickr30K loader); nothing of the authors' code is copied here. The checkout given as
`--official` is imported from a temporary copy with `official_code.EDITS` (the Python 3 spelling of its
Python 2 idioms; CVSE's loader decodes a caption's bytes instead of reading their `str`, "b'...'") and
patched at run time only:

- `tensorboard_logger`, `imageio`, `cv2`, `torchtext`, the COCO API (imported, unused for precomputed
  features) and VSRN's CIDEr-D scorer (imported for a self-critical reward its training never computes) are
  empty modules;
- `nltk.tokenize.word_tokenize` is `str.split`: the captions of the parity datasets are lower-case words
  without punctuation, which the two tokenise alike (nltk's punkt data is not needed);
- `torch.Tensor.cuda` is a no-op; the loaders run in-process (the released loaders start none);
- the dev split's fixed length of 5,000 captions (`PrecompDataset`) is the split's real length;
- the batch ids reach `encode_data` as a list (NumPy 2 reads a tuple index as one index per axis);
- VSE++'s and VSRN's vocabulary (a pickled `Vocabulary` in the released code) is the checkout's `Vocabulary`
  filled from the dataset's `vocab.json` in its id order; SCAN, SGRAF and GSMN read that file as released
  (`deserialize_vocab`; GSMN's loader reads the captions' ids from `_precaps_stan.txt` and only counts it);
- SGRAF's and CVSE's visual self-attention have one batch-norm channel per region of the data (released: 36,
  written into `EncoderSimilarity` and `CVSE`; `norm_per_region`); a batch norm draws no random numbers, so
  the start is the same;
- CVSE's loader reads its concept files from the paths its options name (`cvse_files.py` writes them) and
  lemmatises test-caption words with nltk's `WordNetLemmatizer`, which reads the WordNet folder of the data
  (`<data>/f30k_precomp/nltk_data`, first on nltk's data path); its model is built with the vocabulary's
  `word2idx` (read by the GloVe start only: the runs start the words `--wemb_type random_init`).

The options are the checkout's own parser's (`train.py`'s `main` run up to `parse_args`; SGRAF's `main`
parses in `opts.parse_opt`) given the settings `run_parity.py` names on the command line after `--`. The run
follows `train.py`'s `main` loop (learning-rate schedule, train with its in-epoch validation every `val_step`
steps, validate), seeded with `--seed` (torch, NumPy and `random`, right before the loaders and the model are
built; the released scripts seed nothing), and prints one JSON line: validation rsum per epoch and the last
epoch's test rsum (the released `validate` on the test split). VSRN's `validate` returns R@1 + R@5 of both
directions (its snapshot selection); its rsum here is the sum of the six recalls its `i2t` and `t2i` compute
on the embeddings of its `encode_data`, as the others'. VSRN's optimiser is the released one: it lists the
caption decoder's parameters twice (updated twice a step). With `--weights`, the model starts from a
vse_ray run's weights instead (with `--weights-vocab`, vse_ray's vocabulary file, each word's embedding row
moves to its official id); with `--num_epochs 0` too, the record is the official validation (`val_rsum`, one
value) and test rsum of that run's model, to compare with vse_ray's own evaluation of it.

    python parity/official_lineage.py --system scan --official ~/src/SCAN --data <folder> --seed 0 -- \\
        --max_violation --bi_gru --agg_func LogSumExp --cross_attn t2i --lambda_lse 6 --lambda_softmax 9
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import sys
import types
from pathlib import Path

import numpy as np
import torch
from official_code import (
    CIDER,
    COCO_API,
    parsed_options,
    patched_checkout,
    real_lengths_and_listed_ids,
    run_offline_on_cpu,
)

UNUSED = ("tensorboard_logger", "imageio", "cv2", "torchtext", *COCO_API)
# Per system: the model class of its train.py and the parts its checkpoints store, which vse_ray's weights
# fill (`official_names`' prefixes)
MODELS = {
    "vsepp": ("VSE", ("img_enc", "txt_enc")),
    "scan": ("SCAN", ("img_enc", "txt_enc")),
    "sgraf": ("SGRAF", ("img_enc", "txt_enc", "sim_enc")),
    "gsmn": ("GSMN", ("img_enc", "txt_enc", "i2t_match_G", "t2i_match_G")),
    "vsrn": ("VSRN", ("img_enc", "txt_enc")),
    "cvse": (
        "CVSE",
        (
            "img_enc", "txt_enc", "V_self_atten_enhance", "T_self_atten_enhance",
            "V_consensus_level_embedding", "T_consensus_level_embedding", "C_GCN", "Multi_feature_fusing",
        ),
    ),
}  # fmt: skip
VSE_DATA = ("vsepp", "vsrn")  # VSE++'s loader signature (with a crop size) and pickled vocabulary
IDS_AT = {"vsrn": 3}  # where a training batch holds its caption indices, if not last
TRAIN_SCRIPT = {"cvse": "train_f30k"}  # the training script's module, if not train.py
DATASET = {"cvse": "PrecompDataset_Flickr30k"}  # the precomp dataset class, if not PrecompDataset
# the batch norm with one channel per region (`norm_per_region`)
REGION_NORM = {"sgraf": "sim_enc.v_global_w.embedding_local.1", "cvse": "V_self_atten_enhance.embedding_1.1"}
WORDNET_DATA = {"cvse": "nltk_data"}  # nltk's data folder in the precomp folder (`cvse_files.py`)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--system", choices=tuple(MODELS), required=True)
    parser.add_argument("--official", required=True, help="checkout of the system's code (the docstring)")
    parser.add_argument("--data", required=True, help="folder holding f30k_precomp/ (with its vocab.json)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--weights",
        help="start from these vse_ray weights (`run_parity.py`'s .npz; --num_epochs 0: score them)",
    )
    parser.add_argument(
        "--weights-vocab", help="the vocab.json of the vse_ray folder the weights were trained on"
    )
    parser.add_argument("options", nargs="*", help="after --: the official train.py's options")
    return parser.parse_args()


def build(args: argparse.Namespace) -> types.SimpleNamespace:
    """The checkout's modules, options, vocabulary, loaders and model, patched and seeded as the module
    docstring says."""
    code = patched_checkout(Path(args.official), args.system)
    sys.path.insert(0, str(code))
    run_offline_on_cpu(UNUSED + CIDER)
    if args.system in WORDNET_DATA:
        import nltk

        nltk.data.path.insert(0, str(Path(args.data) / "f30k_precomp" / WORDNET_DATA[args.system]))
    modules = ("data", TRAIN_SCRIPT.get(args.system, "train"), "vocab")
    data, train, vocab_module = (importlib.import_module(n) for n in modules)
    dataset = DATASET.get(args.system, "PrecompDataset")
    real_lengths_and_listed_ids(data, dataset, ids_at=IDS_AT.get(args.system, -1))
    sys.argv = [
        "train.py", "--data_path", args.data, "--data_name", "f30k_precomp", "--vocab_path", args.data,
        "--workers", "0", "--log_step", "1000000000", *args.options,
    ]  # fmt: skip
    opt = parsed_options(train)
    words = json.loads((Path(args.data) / "f30k_precomp" / "vocab.json").read_text())
    if args.system not in VSE_DATA:
        vocab = vocab_module.deserialize_vocab(str(Path(args.data) / "f30k_precomp" / "vocab.json"))
    else:
        vocab = vocab_module.Vocabulary()
        for index in sorted(words["idx2word"], key=int):
            vocab.add_word(words["idx2word"][index])
    opt.vocab_size = len(vocab)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    random.seed(args.seed)
    if args.system not in VSE_DATA:
        loaders = data.get_loaders(opt.data_name, vocab, opt.batch_size, opt.workers, opt)
    else:
        loaders = data.get_loaders(opt.data_name, vocab, opt.crop_size, opt.batch_size, opt.workers, opt)
    model_class = getattr(train, MODELS[args.system][0])
    model = model_class(vocab.word2idx, opt) if args.system == "cvse" else model_class(opt)
    if args.system in REGION_NORM:
        train_ims = np.load(Path(args.data) / "f30k_precomp" / "train_ims.npy", mmap_mode="r")
        norm_per_region(model, REGION_NORM[args.system], train_ims.shape[1])
    if args.weights:
        weights = dict(np.load(args.weights))
        if args.weights_vocab:  # each word's row where the official vocabulary numbers it
            theirs = json.loads(Path(args.weights_vocab).read_text())
            order = [theirs[words["idx2word"][str(i)]] for i in range(len(words["idx2word"]))]
            weights["text_encoder.embed.weight"] = weights["text_encoder.embed.weight"][order]
        load_vse_ray_weights(model, args.system, weights)
    return types.SimpleNamespace(
        system=args.system, opt=opt, vocab=vocab, data=data, train=train, model=model,
        train_loader=loaders[0], val_loader=loaders[1],
    )  # fmt: skip


def norm_per_region(model: object, path: str, regions: int) -> None:
    """The visual self-attention's batch norm at `path` (`REGION_NORM`) with one channel per region of the
    data (SGRAF's `EncoderSimilarity` and CVSE's `CVSE` build 36): its tensors are constants (weight 1, bias
    0, mean 0, variance 1), so cutting them gives the batch norm built for this count, and the optimiser
    keeps the same parameters."""
    norm = model
    for name in path.split("."):
        norm = getattr(norm, name)
    norm.num_features = regions  # type: ignore[attr-defined]
    for name in ("weight", "bias", "running_mean", "running_var"):
        getattr(norm, name).data = getattr(norm, name).data[:regions].clone()


def load_vse_ray_weights(model: object, system: str, weights: dict[str, np.ndarray]) -> None:
    """vse_ray's weights (by its names, `official_names`) into the official model's parts (`MODELS`), each in
    the official tensor's shape (VSRN's reasoning layers are 1×1 convolutions where vse_ray has linears); the
    tensors `official_names` lists as unused (CVSE's second names of its linear layers, its graphs) stay."""
    from vse_ray.models import official_names

    names = getattr(official_names, system.upper())
    for name in MODELS[system][1]:
        part = getattr(model, name)
        state = part.state_dict()
        with torch.no_grad():  # into the tensors themselves (the state dict's share them)
            for n, tensor in state.items():
                if (key := names.ours(f"{name}.{n}")) is not None:
                    tensor.copy_(torch.from_numpy(weights[key]).reshape(tensor.shape))


def train_epoch(run: types.SimpleNamespace, epoch: int) -> float:
    """`train.py`'s `main` loop for one (0-based) epoch: schedule, train, validate; the validation rsum."""
    run.train.adjust_learning_rate(run.opt, run.model.optimizer, epoch)
    best = (0.0,) if run.system == "vsrn" else ()  # VSRN's `train` keeps the best score of its validations
    run.train.train(run.opt, run.train_loader, run.model, epoch, run.val_loader, *best)
    return rsum(run, run.val_loader)


def rsum(run: types.SimpleNamespace, loader: object) -> float:
    """The released `validate`'s rsum on `loader`'s split (VSRN's: its six recalls, the module docstring)."""
    if run.system != "vsrn":
        return float(run.train.validate(run.opt, loader, run.model))
    images, captions = run.train.encode_data(run.model, loader, run.opt.log_step, lambda *_: None)
    recalls = (run.train.i2t, run.train.t2i)
    return float(sum(sum(f(images, captions, measure=run.opt.measure)[:3]) for f in recalls))


def final_test_rsum(run: types.SimpleNamespace) -> float:
    """The released `validate`'s rsum on the test split."""
    opt = run.opt
    sizes = (opt.crop_size, opt.batch_size, 0) if run.system in VSE_DATA else (opt.batch_size, 0)
    if run.system == "cvse":
        sizes = (opt.batch_size, 0, False)  # not its MS-COCO → Flickr30K transfer test
    test_loader = run.data.get_test_loader("test", opt.data_name, run.vocab, *sizes, opt)
    return rsum(run, test_loader)


def main() -> None:
    args = parse_args()
    run = build(args)
    val_rsum = [train_epoch(run, epoch) for epoch in range(run.opt.num_epochs)]
    if not val_rsum:  # no epochs: the starting model's validation rsum
        val_rsum = [rsum(run, run.val_loader)]
    record = {"seed": args.seed, "val_rsum": val_rsum, "test_rsum": final_test_rsum(run)}
    print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
