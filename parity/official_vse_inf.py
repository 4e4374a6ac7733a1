"""Run the authors' VSE∞ BiGRU training (woodfrog/vse_infty, branch ``bigru``) from a checkout on the CPU.

Used by `run_parity.py`; nothing of the authors' code is copied here. Its own modules are imported from
`--official` and patched at run time only:

- `tensorboard_logger`, `imageio` and `cv2` (imported, unused for precomputed regions) are empty modules;
- `nltk.tokenize.word_tokenize` is `str.split`: the captions of `make_region_dataset.py` are lower-case words
  without punctuation, which the two tokenise alike (nltk's punkt data is not needed);
- `torch.Tensor.cuda` is a no-op (`forward_emb` calls it unconditionally); the loaders run in-process;
- the dev split's fixed length of 5,000 captions (`PrecompRegionDataset`) is the split's real length;
- the batch ids reach `encode_data` as a list (NumPy 2 reads a tuple index as one index per axis);
- with `--adam`, `torch.optim.AdamW` is `torch.optim.Adam` (no weight decay); without `--caption-aug`, the
  training captions are tokenised without the released augmentation.

The run follows `train.py`'s `main` loop (learning-rate schedule, VSE0 warm-up epochs, train, validate),
seeded with `--seed` (torch, NumPy and `random`; the released script seeds nothing), and prints one JSON line:
validation rsum per epoch and the last epoch's test rsum (the released `validate` on the test split).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import types

import numpy as np
import torch
from official_code import real_lengths_and_listed_ids, run_offline_on_cpu


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--official", required=True, help="checkout of woodfrog/vse_infty, branch bigru")
    parser.add_argument("--data", required=True, help="folder holding precomp/ and vocab.json")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--embed", type=int, default=256)
    parser.add_argument("--word-dim", type=int, default=300)
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--warmup-epochs", type=int, default=1)
    parser.add_argument("--adam", action="store_true", help="Adam instead of the released AdamW")
    parser.add_argument("--caption-aug", action="store_true", help="keep the released caption augmentation")
    return parser.parse_args()


def patch_imports(official: str) -> None:
    """The checkout first on the path; empty stand-ins for modules the training path imports but never calls
    here, nltk's tokenizer and `Tensor.cuda` as `run_offline_on_cpu` sets them."""
    sys.path.insert(0, official)
    run_offline_on_cpu(("tensorboard_logger", "imageio", "cv2"))


def build(args: argparse.Namespace) -> types.SimpleNamespace:
    """The checkout's modules, options, vocabulary, loaders and model, patched and seeded as the module
    docstring says (`replay_in_official.py` uses it as well)."""
    patch_imports(args.official)
    import arguments  # the checkout's modules
    import train as official_train
    from lib.datasets import image_caption
    from lib.vocab import deserialize_vocab
    from lib.vse import VSEModel

    if args.adam:
        torch.optim.AdamW = lambda params, lr, **_: torch.optim.Adam(params, lr=lr)  # type: ignore[assignment,misc]
    if not args.caption_aug:
        tokenise = image_caption.process_caption
        image_caption.process_caption = lambda vocab, caption, drop=False: tokenise(vocab, caption, False)
    real_lengths_and_listed_ids(image_caption, "PrecompRegionDataset")

    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    random.seed(args.seed)
    opt = arguments.get_argument_parser().parse_args(
        [
            *("--data_path", args.data, "--data_name", "precomp", "--vocab_path", args.data),
            *("--batch_size", "128", "--learning_rate", str(args.lr), "--embed_size", str(args.embed)),
            *("--word_dim", str(args.word_dim), "--margin", "0.2", "--grad_clip", "2"),
            *("--num_epochs", str(args.epochs), "--vse_mean_warmup_epochs", str(args.warmup_epochs)),
            *("--workers", "0", "--log_step", "1000000"),
        ]
    )
    opt.img_dim = int(np.load(f"{args.data}/precomp/train_ims.npy", mmap_mode="r").shape[-1])
    vocab = deserialize_vocab(f"{args.data}/vocab.json")
    vocab.add_word("<mask>")  # as train.py does
    opt.vocab_size = len(vocab)
    train_loader, val_loader = image_caption.get_loaders(opt.data_path, opt.data_name, vocab, 128, 0, opt)
    return types.SimpleNamespace(
        opt=opt,
        vocab=vocab,
        train=official_train,
        image_caption=image_caption,
        collate=image_caption.collate_fn,  # the listed-ids collate
        train_loader=train_loader,
        val_loader=val_loader,
        model=VSEModel(opt),
    )


def train_epoch(run: types.SimpleNamespace, epoch: int, loader: object) -> float:
    """`train.py`'s `main` loop for one (0-based) epoch over `loader`: schedule, warm-up switch, train,
    validate; the validation rsum."""
    opt, model = run.opt, run.model
    run.train.adjust_learning_rate(opt, model.optimizer, epoch, [opt.lr_update])
    if epoch >= opt.vse_mean_warmup_epochs:
        opt.max_violation = True
        model.set_max_violation(True)
    run.train.train(opt, loader, model, epoch, run.val_loader)
    return float(run.train.validate(opt, run.val_loader, model))


def final_test_rsum(run: types.SimpleNamespace) -> float:
    """The released `validate` on the test split."""
    opt = run.opt
    test_loader = run.image_caption.get_loader(
        opt.data_path, opt.data_name, "test", run.vocab, opt, 128, False, 0, train=False
    )
    return float(run.train.validate(opt, test_loader, run.model))


def main() -> None:
    args = parse_args()
    run = build(args)
    val_rsum = [train_epoch(run, epoch, run.train_loader) for epoch in range(run.opt.num_epochs)]
    record = {"seed": args.seed, "val_rsum": val_rsum, "test_rsum": final_test_rsum(run)}
    print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
