"""Replay one vse_ray run's own draws through the authors' VSE∞ code: does a seed that fails in vse_ray fail
in the official code too when it is given the same draws?

The whole-run replay (`tests/parity/test_run_replay.py`) feeds an official run's draws to vse_ray; this goes
the other way, for one seed of `run_parity.py`'s setting:

- `--role vse_ray`: vse_ray's run of `run_parity.py` (same config, `run_training`), recording its initial
  weights and, per step, the caption ids of the batch, each image's region keep mask and the (augmented)
  token ids fed, with the step losses, the weights after each epoch, the validation rsum per epoch and the
  test rsum, into `<out>/vse_ray_s<seed>.npz`. The recording wraps `build_model`, `BatchBuilder.__call__` and
  `train_step` of the engine and returns what they return.
- `--role official`: the official code (`official_vse_inf.build`: the checkout patched at run time) starting
  from those initial weights (mapped by `official_names`), fed those batches (each item as the official
  dataset yields it: the kept regions of its image and its token ids, through the official `collate_fn`),
  with its own model, loss, AdamW, warm-up switch, training loop and validation; it writes
  `<out>/official_s<seed>.npz` and prints both runs' validation rsum and mean loss per epoch and test rsum.
  Record from a folder precomputed with `--vocab` (the official vocabulary file): the official validation
  tokenises with that file, and a folder of vse_ray's own vocabulary numbers the words otherwise.

- `--role init`: the official run of `--seed` (its own loader, its own draws) from the initial weights vse_ray
  draws for that seed (`build_model` after `torch.manual_seed(seed)`, as `run_training` builds it), or with
  `--init official` from its own: over many seeds, the two give each law of initial weights's outcomes on the
  same draws, without recording a vse_ray run. It prints one JSON line (validation rsum of each epoch, test
  rsum).

    python parity/replay_in_official.py --role vse_ray --out runs/replay --seed 2 \\
        --data-dir runs/parity/vse_ray_noise2.5
    python parity/replay_in_official.py --role official --out runs/replay --seed 2 \\
        --official ~/src/vse_infty --data runs/parity/official_noise2.5
"""

from __future__ import annotations

import argparse
import sys
import types
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--role", choices=("vse_ray", "official", "init"), required=True)
    parser.add_argument("--out", required=True, help="folder of the recordings")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--settings", choices=("adam", "released"), default="released")
    parser.add_argument("--data-dir", help="vse_ray's data folder (role vse_ray)")
    parser.add_argument("--official", help="checkout of woodfrog/vse_infty, branch bigru (role official)")
    parser.add_argument("--data", help="folder holding precomp/ and vocab.json (role official)")
    parser.add_argument("--init", choices=("vse_ray", "official"), default="vse_ray", help="role init")
    parser.add_argument(
        "--take",
        choices=("both", "init", "draws"),
        default="both",
        help="role official: what it takes of vse_ray's run (init: its initial weights with the official "
        "loader's own draws; draws: its batches and region masks from the official initial weights)",
    )
    return parser.parse_args()


def record_vse_ray(args: argparse.Namespace, out: Path) -> None:
    """vse_ray's run of `run_parity.py` for `args.seed`, with its draws recorded."""
    from run_parity import vse_ray_config

    import vse_ray.train.epoch_loop as engine
    from vse_ray.checkpoint_files import load_checkpoint
    from vse_ray.data.store.split_data import load_split
    from vse_ray.evaluation.embed import evaluate_split
    from vse_ray.models import rebuild_model
    from vse_ray.train.batches import BatchBuilder
    from vse_ray.train.config import TrainConfig

    settings = argparse.Namespace(
        system="vse_inf", settings=args.settings, epochs=args.epochs, data_name="replay", lr=None
    )
    checked = TrainConfig(**vse_ray_config(Path(args.data_dir), out, args.seed, settings)).checked()
    cfg = checked.config
    arrays: dict[str, np.ndarray] = {}
    steps: list[dict[str, np.ndarray]] = []
    losses: list[float] = []
    build, call, step = engine.build_model, BatchBuilder.__call__, engine.train_step

    def built(*a, **k):  # type: ignore[no-untyped-def]
        model = build(*a, **k)
        arrays.update({f"init/{n}": v.detach().numpy().copy() for n, v in model.state_dict().items()})
        return model

    def batch(self, rows, *a, **k):  # type: ignore[no-untyped-def]
        made = call(self, rows, *a, **k)
        steps.append(
            {
                "ids": np.asarray(rows["caption_id"], dtype=np.int64),
                "tokens": made.tokens.numpy().copy(),
                "lengths": made.lengths.numpy().copy(),
                "keep": made.region_keep.numpy().copy(),
            }
        )
        return made

    def stepped(*a, **k):  # type: ignore[no-untyped-def]
        loss = step(*a, **k)
        losses.append(float(loss))
        return loss

    engine.build_model, BatchBuilder.__call__, engine.train_step = built, batch, stepped  # type: ignore[method-assign]
    states: list[dict] = []
    ends: list[int] = []

    class Keep:
        def report(self, metrics: dict, checkpoint_dir: str) -> None:
            states.append(load_checkpoint(checkpoint_dir))
            arrays.update({f"epoch{metrics['epoch']}/{n}": v.numpy() for n, v in states[-1]["model"].items()})
            ends.append(len(losses))
            print(f"epoch {metrics['epoch']}: val rsum {metrics['rsum']:.1f}", flush=True)

    torch.set_num_threads(1)
    engine.run_training(checked, Keep())
    model = rebuild_model(states[-1])
    test = evaluate_split(model, load_split(cfg.data_dir, "test", raw=False), 512, torch.device("cpu"), {})
    for k, drawn in enumerate(steps):
        arrays.update({f"step{k}/{name}": value for name, value in drawn.items()})
    arrays |= {
        "epoch_steps": np.array(ends),
        "losses": np.array(losses),
        "val_rsum": np.array([s["history"][-1]["rsum"] for s in states]),
        "test_rsum": np.array(test["rsum"]),
    }
    np.savez_compressed(out / f"vse_ray_s{args.seed}.npz", **arrays)
    print(f"test rsum {test['rsum']:.1f}", flush=True)


class RecordedBatches:
    """The recorded steps of one epoch as the official loader yields them (`train` reads `dataset` and
    `batch_size` too)."""

    def __init__(self, rec: dict[str, np.ndarray], run: types.SimpleNamespace, images: np.ndarray) -> None:
        self.rec, self.collate, self.images = rec, run.collate, images
        self.dataset, self.batch_size = run.train_loader.dataset, run.train_loader.batch_size
        self.bounds = [0, *(int(s) for s in rec["epoch_steps"])]
        self.epoch = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        for k in range(self.bounds[self.epoch], self.bounds[self.epoch + 1]):
            ids, tokens, lengths, keep = (
                self.rec[f"step{k}/{n}"] for n in ("ids", "tokens", "lengths", "keep")
            )
            items = [
                (
                    torch.Tensor(self.images[i // 5][keep[b]]),  # five captions an image, as the dataset
                    torch.Tensor(tokens[b, : lengths[b]].astype(np.float32)),
                    int(i),
                    int(i) // 5,
                )
                for b, i in enumerate(ids)
            ]
            yield self.collate(items)


def play_official(args: argparse.Namespace, out: Path) -> None:
    """The official code on the draws of `<out>/vse_ray_s<seed>.npz`."""
    from official_vse_inf import build, final_test_rsum, train_epoch

    rec = dict(np.load(out / f"vse_ray_s{args.seed}.npz"))
    run = build(_official_options(args, caption_aug=False))  # the recorded ids are fed as drawn
    if args.take != "draws":
        _load_ours(run, {k.split("/", 1)[1]: v for k, v in rec.items() if k.startswith("init/")})
    losses: list[float] = []
    forward_loss = run.model.forward_loss
    run.model.forward_loss = lambda *a, **k: _kept(forward_loss(*a, **k), losses, run.model.img_enc.training)
    images = np.load(Path(args.data) / "precomp" / "train_ims.npy")
    recorded = RecordedBatches(rec, run, images)
    loader = run.train_loader if args.take == "init" else recorded
    arrays: dict[str, np.ndarray] = {}
    val = []
    for epoch in range(args.epochs):
        recorded.epoch = epoch
        val.append(train_epoch(run, epoch, loader))
        for prefix, part in (("img_enc.", run.model.img_enc), ("txt_enc.", run.model.txt_enc)):
            state = part.state_dict()  # copies: a state dict's tensors are the live parameters
            arrays.update({f"epoch{epoch + 1}/{prefix}{n}": v.numpy().copy() for n, v in state.items()})
        a, b = recorded.bounds[epoch], recorded.bounds[epoch + 1]
        print(
            f"epoch {epoch + 1}: val rsum official {val[-1]:.1f}, vse_ray {rec['val_rsum'][epoch]:.1f}; "
            f"mean loss official {np.mean(losses[a:b]):.4f}, vse_ray {rec['losses'][a:b].mean():.4f}",
            flush=True,
        )
    test = final_test_rsum(run)
    print(f"test rsum official {test:.1f}, vse_ray {float(rec['test_rsum']):.1f}", flush=True)
    arrays |= {"losses": np.array(losses), "val_rsum": np.array(val), "test_rsum": np.array(test)}
    np.savez_compressed(out / f"official_{args.take}_s{args.seed}.npz", **arrays)


def play_initial_weights(args: argparse.Namespace) -> None:
    """The official run of `args.seed` from vse_ray's initial weights for that seed (or its own)."""
    import json

    from official_vse_inf import build, final_test_rsum, train_epoch

    from vse_ray.models import build_model

    run = build(_official_options(args, caption_aug=args.settings == "released"))
    if args.init == "vse_ray":
        drawn = torch.get_rng_state()  # the official draws go on from where its own model left the stream
        torch.manual_seed(args.seed)
        model = build_model(  # with the `<mask>` row, as vse_ray's training builds VSE∞ and train.py its own
            "vse_inf", vocab_size=run.opt.vocab_size, feature_dim=run.opt.img_dim, word_dim=300, embed_dim=256
        )
        torch.set_rng_state(drawn)
        _load_ours(run, {n: v.numpy() for n, v in model.state_dict().items()})
    val = [train_epoch(run, epoch, run.train_loader) for epoch in range(args.epochs)]
    print(
        json.dumps({"seed": args.seed, "init": args.init, "val_rsum": val, "test_rsum": final_test_rsum(run)})
    )


def _official_options(args: argparse.Namespace, caption_aug: bool) -> argparse.Namespace:
    """`official_vse_inf.build`'s options for `run_parity.py`'s setting, this seed and epoch count."""
    return argparse.Namespace(
        official=args.official, data=args.data, seed=args.seed, epochs=args.epochs, embed=256, word_dim=300,
        lr=5e-4, warmup_epochs=1, adam=args.settings == "adam", caption_aug=caption_aug,
    )  # fmt: skip


def _load_ours(run: types.SimpleNamespace, weights: dict[str, np.ndarray]) -> None:
    """vse_ray's weights (by its names) into the official encoders; rows they lack (`<mask>` in weights
    recorded before vse_ray's VSE∞ always held it) keep the official values."""
    from vse_ray.models import official_names

    for prefix, part in (("img_enc.", run.model.img_enc), ("txt_enc.", run.model.txt_enc)):
        state = part.state_dict()
        for name in state:
            ours = official_names.VSE_INF_BIGRU.ours(prefix + name)
            if ours is not None:
                value = torch.from_numpy(weights[ours])
                state[name] = torch.cat([value, state[name][len(value) :]]) if value.ndim else value
        part.load_state_dict(state)


def _kept(loss: torch.Tensor, losses: list[float], training: bool) -> torch.Tensor:
    """`loss`, noted in `losses` when it is a training step's."""
    if training:
        losses.append(loss.item())
    return loss


def main() -> None:
    args = parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(HERE))
    if args.role == "vse_ray":
        record_vse_ray(args, out)
    elif args.role == "init":
        play_initial_weights(args)
    else:
        play_official(args, out)


if __name__ == "__main__":
    main()
