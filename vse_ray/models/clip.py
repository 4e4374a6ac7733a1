"""CLIP-family dual encoders (Radford et al., "Learning Transferable Visual Models From Natural Language
Supervision", ICML 2021, Fig. 3; SigLIP: Zhai et al., ICCV 2023): s(i, c) = f(i) · g(c) with f and g the
L2-normalised outputs of the image and text towers, the cosine similarity both papers scale by a learned
temperature t (CLIP: logits = e^t · s; SigLIP: e^t · s + b).

The towers come from a local checkpoint of open_clip or Hugging Face transformers (model_params ``backend``,
``arch``, ``pretrained``; :mod:`vse_ray.models.clip_files`), with the checkpoint's own image preprocessing
(:mod:`vse_ray.models.clip_preprocess`) and tokenizer: the model reads stored uint8 pixels and derives its
caption ids from the caption texts. `logit_scale` (log e^t, as both libraries keep it) and `logit_bias`
(SigLIP's b; None for CLIP) are the checkpoint's parameters; `learned_logits` gives their values to a loss
that learns its own from them.

CUSA's fine-tuning (Huang et al. AAAI 2024, released ``unire/model.py``) adds, as options: a projection head
on each tower's output before the normalisation, a LayerNorm then a Linear layer of the embedding's size
whose weight starts from N(0, 0.02²) (``projection_head``), and ALBEF's caption cleaning before the tokenizer
(``caption_cleaning: albef``, :mod:`vse_ray.models.caption_cleaning`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from vse_ray.models.base import AugmentIds, RetrievalModel
from vse_ray.models.caption_cleaning import CLEANINGS, albef_clean
from vse_ray.models.clip_files import check_clip_source
from vse_ray.models.clip_layers import layer_groups
from vse_ray.models.clip_preprocess import PixelPreprocess
from vse_ray.models.clip_towers import load_towers
from vse_ray.models.normalize import l2_normalize
from vse_ray.models.training_output import TrainingOutput


class ClipModel(RetrievalModel):
    """A CLIP or SigLIP checkpoint as a retrieval model (model name "clip").

    Args:
        vocab_size, feature_dim, word_dim, embed_dim: Unused: the checkpoint fixes its sizes and tokenizer.
        backend: "open_clip" or "hf" (Hugging Face ``CLIPModel`` / ``SiglipModel``).
        arch: open_clip: an architecture name or a model config JSON (empty with a local-dir folder).
        pretrained: open_clip: a weights file, a local-dir folder, or empty (random towers of `arch`);
            hf: a ``save_pretrained`` folder. Never a hub tag: nothing is downloaded.
        projection_head: a trained LayerNorm + Linear head on each tower (CUSA's), started at random.
        caption_cleaning: "" (none) or "albef": ALBEF's ``pre_caption`` before the tokenizer (CUSA's).
    """

    kind = "embedding"
    feature_layout = "pixels"
    find_unused_parameters = True  # the logit scale and bias, unless the loss reads them

    def __init__(
        self,
        vocab_size: int = 0,
        feature_dim: int = 0,
        word_dim: int = 300,
        embed_dim: int = 1024,
        backend: str = "open_clip",
        arch: str = "",
        pretrained: str = "",
        projection_head: bool = False,
        caption_cleaning: str = "",
    ):
        super().__init__()
        _check_options(projection_head, caption_cleaning)
        self.towers = load_towers(check_clip_source(backend, arch, pretrained))
        self.preprocess = PixelPreprocess(self.towers.spec)
        self.caption_cleaning = caption_cleaning
        self.image_head: nn.Module = nn.Identity()
        self.text_head: nn.Module = nn.Identity()
        if projection_head:
            self.image_head, self.text_head = (projection(self._embed_dim()) for _ in range(2))

    def _embed_dim(self) -> int:
        """The towers' output size, read from one caption through the text tower."""
        ids = torch.from_numpy(np.stack(self.towers.tokenize(["a"])))
        with torch.no_grad():
            return int(self.towers.encode_text(ids, torch.tensor([ids.shape[1]])).shape[-1])

    @staticmethod
    def check_pretrained(
        backend: str = "open_clip",
        arch: str = "",
        pretrained: str = "",
        projection_head: bool = False,
        caption_cleaning: str = "",
        **_: object,
    ) -> None:
        """The checkpoint's files are here and its weights load into its architecture (the towers are
        built once to know: a few seconds for a published checkpoint)."""
        _check_options(projection_head, caption_cleaning)
        load_towers(check_clip_source(backend, arch, pretrained))

    @classmethod
    def layout_hint(cls, layout: str) -> str:
        return (
            "its image tower reads the stored images: precompute keeping them (--keep-images yes), best at "
            "the tower's input size (--resize SIZE --resize-mode shortest)"
        )

    def layer_groups(self) -> dict[str, list[list[str]]]:
        """Per tower ("image", "text"), its layer groups of parameter names, first to last
        (:mod:`vse_ray.models.clip_layers`)."""
        prefix = "towers.model."
        names = (name.removeprefix(prefix) for name, _ in self.named_parameters())
        return {
            tower: [[prefix + name for name in group] for group in groups]
            for tower, groups in layer_groups(names).items()
        }

    def set_grad_checkpointing(self) -> None:
        """Recompute the towers' blocks in backward instead of keeping their activations (open_clip's
        ``set_grad_checkpointing``, transformers' ``activation_checkpointing_enable``)."""
        self.towers.set_grad_checkpointing()

    @property
    def logit_scale(self) -> nn.Parameter:
        """The checkpoint's log temperature t (the logits are e^t times the cosine)."""
        return self.towers.logit_scale

    @property
    def logit_bias(self) -> nn.Parameter | None:
        """SigLIP's logit bias b; None for a CLIP checkpoint."""
        return self.towers.logit_bias

    @property
    def learned_logits(self) -> dict[str, float]:
        """The checkpoint's values a contrastive loss starts from: ``{"logit_scale": ln t}``, with
        ``"logit_bias": b`` for SigLIP (the keys of both libraries' checkpoints)."""
        values = {"logit_scale": float(self.logit_scale.detach())}
        bias = self.logit_bias
        return values if bias is None else {**values, "logit_bias": float(bias)}

    def caption_ids(
        self,
        tokens: Sequence[np.ndarray],
        texts: Sequence[str],
        augment: AugmentIds | None = None,
    ) -> list[np.ndarray]:
        """The checkpoint tokenizer's ids of the texts (the stored vocabulary ids are not read)."""
        if augment is not None:
            raise ValueError(
                "clip: caption augmentation is not supported (the tokenizer's ids are read as given)"
            )
        if self.caption_cleaning == "albef":
            texts = [albef_clean(text) for text in texts]
        return self.towers.tokenize(texts)

    def encode_images(self, images: Tensor) -> Tensor:
        """(B, H, W, 3) uint8 images → the checkpoint's preprocessing → image tower → (B, E) unit vectors;
        (B, E) rows are the tower's own output, cached (`vse_ray.evaluation.image_cache`), returned unit."""
        if images.dim() == 2:
            return l2_normalize(images.float())
        return l2_normalize(self.image_head(self.towers.encode_image(self.preprocess(images))))

    def encode_captions(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """(B, L) ids from `caption_ids` + (B,) lengths → text tower (→ head) → (B, E) unit vectors."""
        return l2_normalize(self.text_head(self.towers.encode_text(tokens, lengths)))

    def forward(
        self,
        images: Tensor,
        tokens: Tensor,
        lengths: Tensor,
        gather: Callable[[Tensor], Tensor] | None = None,
        region_keep: Tensor | None = None,
        local_gather: Callable[[Tensor], Tensor] | None = None,
    ) -> Tensor | TrainingOutput:
        """(B, B) similarities of a training batch (the base's), or with `local_gather` (`loss_span: local`)
        the (2, B, W·B) rows of this worker's queries: its images against every worker's captions, its
        captions against every worker's images, each side gathered with its gradient."""
        if local_gather is None:
            return super().forward(images, tokens, lengths, gather, region_keep)
        img, txt = self.encode_images(images), self.encode_captions(tokens, lengths)
        return torch.stack((img @ local_gather(txt).T, txt @ local_gather(img).T))


def projection(dim: int) -> nn.Sequential:
    """CUSA's head: LayerNorm(dim), then Linear(dim, dim) with its weight drawn from N(0, 0.02²) (its bias
    as torch starts it)."""
    linear = nn.Linear(dim, dim)
    nn.init.normal_(linear.weight, std=0.02)
    return nn.Sequential(nn.LayerNorm(dim), linear)


def _check_options(projection_head: object, caption_cleaning: object) -> None:
    if not isinstance(projection_head, bool):
        raise ValueError(f"model_params.projection_head: must be true or false, got {projection_head!r}")
    if caption_cleaning not in CLEANINGS:
        raise ValueError(
            f"model_params.caption_cleaning: must be one of {CLEANINGS}, got {caption_cleaning!r}"
        )
