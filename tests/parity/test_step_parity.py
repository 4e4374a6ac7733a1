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
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from tests.parity.vsrn_names import vsrn_name
from vse_ray.losses import make_loss
from vse_ray.models import build_model
from vse_ray.train.batches import TrainBatch
from vse_ray.train.config import TrainConfig
from vse_ray.train.engine import train_step
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


def _vse_inf_name(name: str) -> str | None:
    side, rest = name.split(".", 1)
    if rest.startswith("mlp.bns.1."):
        return None  # built but never called by the official MLP's forward
    rest = rest.replace("gpool.", "gpo.")
    for official, ours in (
        ("mlp.layers.0.", "mlp.0."),
        ("mlp.bns.0.", "mlp.1."),
        ("mlp.layers.1.", "mlp.3."),
    ):
        rest = rest.replace(official, ours)
    return {"img_enc": "image_encoder", "txt_enc": "text_encoder"}[side] + "." + rest


def _vse_inf_bert_name(name: str) -> str | None:
    if name.startswith("txt_enc.bert.pooler."):
        return None  # BERT's pooler: never used by the official code, so never updated
    if name.startswith("txt_enc."):
        return "text_encoder." + name.removeprefix("txt_enc.").replace("gpool.", "gpo.")
    return _vse_inf_name(name)


def _encoder_name(name: str) -> str | None:
    side, rest = name.split(".", 1)
    return {"img_enc": "image_encoder", "txt_enc": "text_encoder"}[side] + "." + rest


def _sizes(meta: dict) -> dict:
    s = meta["sizes"]
    args = {"vocab_size": s["vocab_size"], "feature_dim": s["feature_dim"], "word_dim": s["word_dim"]}
    return {**args, "embed_dim": s["embed_dim"], **meta.get("model_params", {})}


_SGRAF_NAMES = (
    ("img_enc.", "image_encoder."),
    ("txt_enc.cap_rnn.", "text_encoder.rnn."),
    ("txt_enc.", "text_encoder."),
    ("sim_enc.v_global_w.", "image_global."),
    ("sim_enc.t_global_w.", "text_global."),
    ("embedding_local.", "local."),
    ("embedding_global.", "glob."),
    ("embedding_common.0.", "common."),
    ("sim_enc.sim_tranloc_w.", "local_sim."),
    ("sim_enc.sim_tranglo_w.", "global_sim."),
    ("sim_enc.sim_eval_w.", "final."),
    ("sim_enc.SGR_module.", "reasoning."),
    ("graph_query_w.", "query."),
    ("graph_key_w.", "key."),
    ("sim_graph_w.", "update."),
    ("sim_enc.SAF_module.attn_sim_w.", "filtration.gate."),
    ("sim_enc.SAF_module.bn.", "filtration.bn."),
)


_SGRAF_NOISY_MEANS = (
    "sim_enc.v_global_w.embedding_global.1.running_mean",
    "sim_enc.SAF_module.bn.running_mean",
)


def _sgraf_name(name: str) -> str | None:
    for official, ours in _SGRAF_NAMES:
        name = name.replace(official, ours)
    return name


CASES = {
    "vse_inf_bigru": Case(
        "vse_inf_bigru.npz",
        "vse_inf",
        _sizes,
        _vse_inf_name,
        follows_noise=("img_enc.mlp.bns.0.running_mean",),
    ),
    "vsepp": Case("vsepp_precomp.npz", "vsepp", _sizes, _encoder_name),
    "scan_t2i_lse": Case("scan_t2i_lse.npz", "scan", _sizes, _encoder_name),
    "scan_t2i_avg": Case("scan_t2i_avg.npz", "scan", _sizes, _encoder_name),
    "sgraf_sgr": Case("sgraf_sgr.npz", "sgraf", _sizes, _sgraf_name, follows_noise=_SGRAF_NOISY_MEANS[:1]),
    "sgraf_saf": Case("sgraf_saf.npz", "sgraf", _sizes, _sgraf_name, follows_noise=_SGRAF_NOISY_MEANS),
    "vsrn_f30k": Case(
        "vsrn_f30k.npz",
        "vsrn",
        _sizes,
        vsrn_name,
        follows_noise=tuple(f"img_enc.Rs_GCN_{k}.W.1.running_mean" for k in range(1, 5)),
    ),
}


class Fixture:
    """The arrays of one .npz fixture, grouped by prefix."""

    def __init__(self, path: Path) -> None:
        with np.load(path) as data:
            self.arrays = {k: data[k] for k in data.files}
        self.meta = json.loads(str(self.arrays["meta"]))
        self.losses = self.arrays["losses"]

    def group(self, prefix: str) -> dict[str, np.ndarray]:
        return {k.split("/", 1)[1]: v for k, v in self.arrays.items() if k.startswith(prefix + "/")}

    def batch(self, k: int) -> dict[str, np.ndarray]:
        return self.group(f"batch{k}")


def _load(case: Case) -> tuple[Fixture, nn.Module]:
    path = FIXTURES / case.fixture
    if not path.exists():
        pytest.skip(f"no fixture {path.name}")
    fx = Fixture(path)
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
        loss_params=margin,
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
        relevance=None,
    ).to(DEVICE)


def _with_batch_masks(model: nn.Module, b: dict[str, np.ndarray]) -> None:
    """Make the model pool the fixture's drawn regions (VSE∞'s region drop) for this step."""
    if "keep" in b:
        keep = torch.from_numpy(b["keep"]).to(DEVICE)
        model.encode_images = partial(type(model).encode_images, model, keep=keep)


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
    _with_batch_masks(probe, first)
    batch = _train_batch(first, cfg)
    sims = probe(batch.images, batch.tokens, batch.lengths)
    loss = _loss(cfg, meta, 0).from_similarity(sims, image_ids=batch.image_ids)
    extra = probe.auxiliary_loss()  # the model's own term (VSRN: caption generation), logged apart
    (loss if extra is None else loss + extra).backward()
    official_grads = fx.group("grad1")
    scale = max(float(np.abs(g).max()) for g in official_grads.values())
    noise = {n for n, g in official_grads.items() if np.abs(g).max() < NOISE_GRADIENT * scale}
    grads = {k: p.grad for k, p in probe.named_parameters() if p.grad is not None}
    grad_diff = _max_diff(grads, official_grads, case, set())[0]
    diffs = {"loss 1": (abs(loss.item() - fx.losses[0]), abs(loss.item() - fx.losses[0]) / abs(fx.losses[0]))}
    diffs["grads 1"] = (grad_diff, grad_diff / scale)
    if extra is not None:
        expected = float(fx.arrays["caption_losses"][0])
        diffs["aux loss 1"] = (abs(extra.item() - expected), abs(extra.item() - expected) / abs(expected))
    optimizer, _ = build_optimizer(cfg, model)
    losses = []
    for step in range(5):
        b = fx.batch(step)
        _with_batch_masks(model, b)
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
        "vse_inf_bert.npz", "vse_inf", model_args, _vse_inf_bert_name, ("img_enc.mlp.bns.0.running_mean",)
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
