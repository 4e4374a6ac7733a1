"""Step parity with the official training code, against fixtures it produced (tests/fixtures/official/).

Each fixture holds a tiny model's initial weights in the official parameter names, five batches, and what the
official code computed from them: the loss and every gradient of step 1 (before clipping), the weights after
step 1, the losses of steps 1-5 and the weights after step 5 (see the README there for the upstream commits).
Here the vse_ray model starts from the same weights, takes the same batches through vse_ray's loss, optimiser
and `train_step`, and must land on the same numbers.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from tests.parity.vsrn_names import vsrn_name
from vse_ray.losses import make_loss
from vse_ray.models import build_model, official_names
from vse_ray.models.training_output import split_output
from vse_ray.train.batches import TrainBatch
from vse_ray.train.config import TrainConfig
from vse_ray.train.epoch_loop import train_step
from vse_ray.train.optim import build_optimizer

# VSE_RAY_TEST_DEVICE=cuda runs the same comparisons on a GPU (the fixtures were made on the CPU), in full
# float32: cuDNN's TF32 (on by default for its RNNs and convolutions) rounds inputs to 10 mantissa bits.
DEVICE = torch.device(os.environ.get("VSE_RAY_TEST_DEVICE", "cpu"))
if DEVICE.type == "cuda":
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
FIXTURES = Path(__file__).parent.parent / "fixtures" / "official"
RTOL = 1e-5 if DEVICE.type == "cpu" else 5e-5  # a GPU sums in other orders
ADAM_NOISE = 0.02  # of one step, lr
# A parameter whose official step-1 gradient stays below this fraction of the step's largest gradient entry
# has an exact gradient of 0 (a bias feeding BatchNorm, which subtracts it again; a shift of softmax logits)
# or nearly so: both codes compute rounding noise there, which Adam turns into steps of up to lr. Such
# parameters are loaded and their gradients compared, but not their values after an update.
NOISE_GRADIENT = 1e-6


@dataclass(frozen=True)
class Case:
    """A fixture, the vse_ray model it maps to and how official parameter names read in vse_ray."""

    fixture: str
    model: str
    model_args: Callable[[dict], dict]
    rename: Callable[[str], str | None]  # official name → vse_ray state-dict key (None: no counterpart)
    # Compared after step 1 only: running means of BatchNorms fed by a bias whose gradient is noise (see
    # NOISE_GRADIENT), which from step 2 on average that bias.
    follows_noise: tuple[str, ...] = ()


def _sizes(meta: dict) -> dict:
    s = meta["sizes"]
    args = {"vocab_size": s["vocab_size"], "feature_dim": s["feature_dim"], "word_dim": s["word_dim"]}
    return {**args, "embed_dim": s["embed_dim"], **meta.get("model_params", {})}


def _cvse_args(meta: dict) -> dict:
    """CVSE's sizes and the rank loss the training factory gives it (VSE++, the released margin 0.2)."""
    return {**_sizes(meta), "rank_loss": make_loss("vsepp", margin=0.2).from_similarity}


_SGRAF_NOISY_MEANS = (
    "sim_enc.v_global_w.embedding_global.1.running_mean",
    "sim_enc.SAF_module.bn.running_mean",
)


_CVSE_NOISY_MEANS = (
    "V_self_atten_enhance.embedding_2.1.running_mean",
    *(f"{side}_consensus_level_embedding.embedding_{k}.1.running_mean" for side in "VT" for k in (1, 2)),
)


def cvse_name(name: str) -> str | None:
    """vse_ray's key of an official CVSE parameter (`official_names.CVSE`; None for the parts its forward
    never calls and the GCN's graphs, constants here); the concept inputs, graph and token index are stored
    under vse_ray's names by the fixture script."""
    if name in ("token_concepts", "concept_inputs", "adjacency"):
        return name
    return official_names.CVSE.ours(name)


CASES = {
    "vse_inf_bigru": Case(
        "vse_inf_bigru.npz",
        "vse_inf",
        _sizes,
        official_names.VSE_INF_BIGRU.ours,
        follows_noise=("img_enc.mlp.bns.0.running_mean",),
    ),
    "vsepp": Case("vsepp_precomp.npz", "vsepp", _sizes, official_names.VSEPP.ours),
    "scan_t2i_lse": Case("scan_t2i_lse.npz", "scan", _sizes, official_names.SCAN.ours),
    "scan_t2i_avg": Case("scan_t2i_avg.npz", "scan", _sizes, official_names.SCAN.ours),
    "sgraf_sgr": Case(
        "sgraf_sgr.npz", "sgraf", _sizes, official_names.SGRAF.ours, follows_noise=_SGRAF_NOISY_MEANS[:1]
    ),
    "sgraf_saf": Case(
        "sgraf_saf.npz", "sgraf", _sizes, official_names.SGRAF.ours, follows_noise=_SGRAF_NOISY_MEANS
    ),
    "cvse": Case("cvse_step.npz", "cvse", _cvse_args, cvse_name, follows_noise=_CVSE_NOISY_MEANS),
    "cvse_sam": Case("cvse_sam_step.npz", "cvse", _cvse_args, cvse_name, follows_noise=_CVSE_NOISY_MEANS),
    "vsrn_f30k": Case(
        "vsrn_f30k.npz",
        "vsrn",
        _sizes,
        vsrn_name,
        follows_noise=tuple(f"img_enc.Rs_GCN_{k}.W.1.running_mean" for k in range(1, 5)),
    ),
}


def fixture_arrays(path: Path) -> dict[str, np.ndarray]:
    """The arrays of one .npz fixture; a missing file fails the test, naming it (never a skip)."""
    if not path.exists():
        pytest.fail(f"missing fixture {path} (tests/fixtures/official/README.md says how it was made)")
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


class Fixture:
    """The arrays of one .npz fixture, grouped by prefix."""

    def __init__(self, path: Path) -> None:
        self.arrays = fixture_arrays(path)
        self.meta = json.loads(str(self.arrays["meta"]))
        self.losses = self.arrays["losses"] + self.arrays.get("caption_losses", 0.0)  # the whole objective

    def group(self, prefix: str) -> dict[str, np.ndarray]:
        return {k.split("/", 1)[1]: v for k, v in self.arrays.items() if k.startswith(prefix + "/")}

    def batch(self, k: int) -> dict[str, np.ndarray]:
        return self.group(f"batch{k}")


def _load(case: Case) -> tuple[Fixture, nn.Module]:
    fx = Fixture(FIXTURES / case.fixture)
    model = build_model(case.model, **case.model_args(fx.meta))
    state = model.state_dict()
    for name, value in fx.group("init").items():
        key = case.rename(name)
        if key is not None:  # same numbers; a 1×1 convolution's weight read as a linear layer's
            assert state[key].numel() == value.size, name
            state[key] = torch.from_numpy(value).reshape(state[key].shape)
    model.load_state_dict(state)
    return fx, model.to(DEVICE).train()


def _config(meta: dict) -> TrainConfig:
    """The official run's settings as vse_ray training options."""
    margin = {"margin": meta["margin"]}
    return TrainConfig(
        data_dir="unused",
        loss=meta["loss"],
        loss_params=meta.get("loss_params", margin),
        warmup_loss=meta["warmup_loss"],
        warmup_params=margin,
        optimizer=meta["optimizer"],
        lr=meta["lr"],
        weight_decay=meta["weight_decay"],
        lr_groups=meta.get("lr_groups", {}),
        grad_clip=meta["grad_clip"],
        negatives=meta["negatives"],
    ).validate()


def _train_batch(b: dict[str, np.ndarray], cfg: TrainConfig) -> TrainBatch:
    return TrainBatch(
        images=torch.from_numpy(b["images"]),
        tokens=torch.from_numpy(b["tokens"]),
        lengths=torch.from_numpy(b["lengths"]),
        # negatives "diagonal" (the official codes): the engine gives the loss no image ids
        image_ids=None if cfg.negatives == "diagonal" else torch.from_numpy(b["image_ids"]),
        relevance=torch.from_numpy(b["relevance"]) if "relevance" in b else None,
        region_keep=torch.from_numpy(b["keep"]) if "keep" in b else None,  # VSE∞'s drawn regions
    ).to(DEVICE)


def _loss(cfg: TrainConfig, meta: dict, step: int) -> nn.Module:
    if step < meta["warmup_steps"]:
        return make_loss(cfg.warmup_loss, **cfg.warmup_params)
    return make_loss(cfg.loss, **cfg.loss_params)


def _max_diff(
    ours: dict[str, torch.Tensor], theirs: dict[str, np.ndarray], case: Case, skip: set[str]
) -> tuple[float, float]:
    """(max |diff|, max of |diff| / max |official value| of the tensor) over the tensors not in `skip`."""
    worst_abs = worst_rel = 0.0
    for name, expected in theirs.items():
        key = case.rename(name)
        if key is None or name in skip:
            continue
        mine = ours[key].detach().cpu().numpy()
        diff = float(np.abs(mine - expected.reshape(mine.shape)).max())
        worst_abs = max(worst_abs, diff)
        worst_rel = max(worst_rel, diff / max(float(np.abs(expected).max()), 1e-30))
    return worst_abs, worst_rel


def step_parity(case: Case) -> dict[str, tuple[float, float]]:
    """(max |diff|, relative) of step 1's loss, gradients and weights, steps 1-5's losses and step 5's
    weights. Gradients are relative to the step's largest gradient entry, the rest to each tensor's scale."""
    fx, model = _load(case)
    meta = fx.meta
    cfg = _config(meta)
    first = fx.batch(0)
    probe = copy.deepcopy(model)
    batch = _train_batch(first, cfg)
    keep = {} if batch.region_keep is None else {"region_keep": batch.region_keep}
    output = split_output(probe(batch.images, batch.tokens, batch.lengths, **keep))
    loss_fn = _loss(cfg, meta, 0)
    loss = output.total(
        loss_fn.from_similarity(output.sims, relevance=batch.relevance, image_ids=batch.image_ids)
    )
    loss.backward()
    official_grads = fx.group("grad1")
    scale = max(float(np.abs(g).max()) for g in official_grads.values())
    noise = {n for n, g in official_grads.items() if np.abs(g).max() < NOISE_GRADIENT * scale}
    grads = {k: p.grad for k, p in probe.named_parameters() if p.grad is not None}
    grad_diff = _max_diff(grads, official_grads, case, set())[0]
    diffs = {"loss 1": (abs(loss.item() - fx.losses[0]), abs(loss.item() - fx.losses[0]) / abs(fx.losses[0]))}
    diffs["grads 1"] = (grad_diff, grad_diff / scale)
    if "caption_losses" in fx.arrays:  # VSRN's own term, compared on its own too
        term, expected = output.local_losses["caption"].item(), float(fx.arrays["caption_losses"][0])
        diffs["caption loss 1"] = (abs(term - expected), abs(term - expected) / abs(expected))
    optimizer, _ = build_optimizer(cfg, model)
    losses = []
    for step in range(5):
        b = fx.batch(step)
        loss_fn = _loss(cfg, meta, step)
        losses.append(train_step(model, loss_fn, optimizer, _train_batch(b, cfg), cfg.grad_clip).item())
        if step == 0:
            diffs["weights 1"] = _max_diff(model.state_dict(), fx.group("after1"), case, noise)
    loss_diff = np.abs(np.array(losses) - fx.losses)
    diffs["losses 1-5"] = (float(loss_diff.max()), float((loss_diff / np.abs(fx.losses)).max()))
    diffs["weights 5"] = _max_diff(
        model.state_dict(), fx.group("after5"), case, noise | set(case.follows_noise)
    )
    return diffs


@pytest.mark.parametrize("name", sorted(CASES))
def test_step_parity_with_official_code(name: str) -> None:
    check_parity(name, CASES[name])


def test_step_parity_with_official_bert_vse_inf(tmp_path: Path) -> None:
    """VSE∞'s BERT branch, from the fixture's tiny BertConfig saved as a local folder."""
    transformers = pytest.importorskip("transformers")
    fx = Fixture(FIXTURES / "vse_inf_bert.npz")
    config = transformers.BertConfig.from_dict(fx.meta["bert_config"])
    transformers.BertModel(config).save_pretrained(tmp_path)
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    (tmp_path / "vocab.txt").write_text(
        "\n".join(words + [f"w{i}" for i in range(config.vocab_size - 5)]) + "\n"
    )

    def model_args(meta: dict) -> dict:
        return {**_sizes(meta), "text_encoder": "bert", "bert_path": str(tmp_path)}

    case = Case(
        "vse_inf_bert.npz",
        "vse_inf",
        model_args,
        official_names.VSE_INF_BERT.ours,
        ("img_enc.mlp.bns.0.running_mean",),
    )
    check_parity("vse_inf_bert", case)


def check_parity(name: str, case: Case) -> None:
    diffs = step_parity(case)
    print(f"\n{name}: " + ", ".join(f"{k} {a:.1e} (rel {r:.1e})" for k, (a, r) in diffs.items()))
    lr = Fixture(FIXTURES / case.fixture).meta["lr"]
    assert diffs["loss 1"][1] < RTOL and diffs["losses 1-5"][1] < RTOL, diffs
    assert diffs.get("aux loss 1", (0, 0))[1] < RTOL, diffs
    assert diffs["grads 1"][1] < RTOL, diffs
    # Adam's first steps are about lr x sign(gradient): rounding noise in a near-zero gradient entry moves
    # that weight by a visible fraction of lr, so weights agree to RTOL or to a small part of one step.
    for key in ("weights 1", "weights 5"):
        assert diffs[key][1] < RTOL or diffs[key][0] < ADAM_NOISE * lr, (key, diffs)
