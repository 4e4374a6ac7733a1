"""VSE∞ (Chen, Hu, Song, Dai, Tian, "Learning the Best Pooling Strategy for Visual Semantic Embedding",
CVPR 2021): an embedding model whose two sides pool sets of features with GPO (:mod:`vse_ray.models.gpo`).

- Image side (Sec. 4, region features): each of the R regions φ_r (D wide) is mapped by a linear layer
  plus a two-layer MLP residual, v_r = W φ_r + b + MLP(φ_r), with MLP = Linear(D, E/2) → BatchNorm → ReLU →
  Linear(E/2, E); the set {v_r} is pooled by GPO and L2-normalised.
- Text side (``text_encoder="bigru"``): word embeddings → bidirectional GRU of hidden size E whose two
  directions are averaged per word → GPO over the words → L2 normalisation. ``text_encoder="bert"``: the
  caption's wordpieces through BERT-base, Linear(768, E), GPO, L2 normalisation
  (:mod:`vse_ray.models.bert_text`); the model then reads the caption texts, not the stored vocabulary ids.
- s(i, c) = f(i) · g(c).

Training drops each region with probability `region_drop` (0.2 in the reference implementation's region
setting, its "size augmentation"); the pooled set is then the kept regions. The data path draws which regions
each training image keeps (`vse_ray.train.region_drop`), as the reference dataset does, and the training step
passes them to `forward`. As in the reference implementation, the kept regions of each image move to the
front (in their order) and are padded with zero rows to the longest kept set of the batch before the FC and
MLP, so the MLP's BatchNorm statistics are taken over the kept regions and those zero rows, never over the
dropped regions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from vse_ray.models.base import AugmentIds, CaptionSpace, RetrievalModel
from vse_ray.models.bert_text import BertTextEncoder, bert_folder
from vse_ray.models.gpo import GPO
from vse_ray.models.initial_weights import xavier_fill_
from vse_ray.models.normalize import l2_normalize


class RegionEncoder(nn.Module):
    """(B, R, D) regions (optionally a (B, R) keep mask) → (B, E): FC + MLP residual, GPO, L2 norm."""

    def __init__(self, feature_dim: int, embed_dim: int):
        super().__init__()
        self.fc = nn.Linear(feature_dim, embed_dim)
        self.mlp = nn.Sequential(
            nn.Linear(feature_dim, embed_dim // 2),
            nn.BatchNorm1d(embed_dim // 2),
            nn.ReLU(),
            nn.Linear(embed_dim // 2, embed_dim),
        )
        self.gpo = GPO()
        # The Xavier-uniform FC drawn last, as the reference draws it: after the same torch seed both codes
        # start from the same weights (tests/parity/test_vse_inf_init.py).
        xavier_fill_(self.fc)

    def forward(self, regions: Tensor, keep: Tensor | None = None) -> Tensor:
        if keep is None:
            lengths = torch.full(regions.shape[:1], regions.shape[1], device=regions.device)
        else:
            regions, lengths = compact_regions(regions, keep)
        b, r, d = regions.shape
        flat = regions.reshape(b * r, d)
        features = (self.fc(flat) + self.mlp(flat)).reshape(b, r, -1)
        return l2_normalize(self.gpo(features, lengths))


def compact_regions(regions: Tensor, keep: Tensor) -> tuple[Tensor, Tensor]:
    """(B, R, D) regions and a (B, R) keep mask → (B, N, D) with each image's kept regions first (in their
    order) and zero rows after them, N = the most regions any image keeps; and the (B,) kept counts."""
    lengths = keep.sum(dim=1)
    width = int(lengths.max())
    order = torch.sort((~keep).to(torch.uint8), dim=1, stable=True).indices[:, :width]
    kept = regions.gather(1, order[..., None].expand(-1, -1, regions.shape[-1]))
    valid = torch.arange(width, device=regions.device)[None, :] < lengths[:, None]
    return kept * valid[..., None], lengths


class BiGRUTextEncoder(nn.Module):
    """Token ids → word embeddings → BiGRU (directions averaged) → GPO over words → L2 norm: (B, E)."""

    def __init__(self, vocab_size: int, word_dim: int, embed_dim: int, num_layers: int = 1):
        super().__init__()
        if vocab_size < 2:
            raise ValueError(f"vocab_size must be >= 2, got {vocab_size}")
        # No padding_idx, as in the reference encoders: padded positions never reach the GRU (packed), and a
        # caption augmentation's replacement that draws id 0 trains row 0 like any other word.
        # Drawn in the reference's order (embedding, GPO, GRU, then the uniform embedding), registered in
        # this one (the parameters' order, which gradient clipping sums in, is the module's own).
        self.embed = nn.Embedding(vocab_size, word_dim)
        gpo = GPO()
        self.rnn = nn.GRU(word_dim, embed_dim, num_layers, batch_first=True, bidirectional=True)
        self.gpo = gpo
        nn.init.uniform_(self.embed.weight, -0.1, 0.1)

    def forward(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        lengths = lengths.clamp(min=1)
        packed = pack_padded_sequence(
            self.embed(tokens), lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        words, _ = pad_packed_sequence(self.rnn(packed)[0], batch_first=True)
        half = words.shape[-1] // 2
        return l2_normalize(self.gpo((words[..., :half] + words[..., half:]) / 2, lengths.to(words.device)))


TEXT_ENCODERS = ("bigru", "bert")


class VSEInfModel(RetrievalModel):
    """VSE∞ on region features (model name "vse_inf"; see the module docstring for the equations).

    Args:
        vocab_size: Caption vocabulary size.
        feature_dim: Width D of each region feature (2048 for bottom-up regions).
        word_dim: Word embedding size (300).
        embed_dim: Joint embedding size E (1024).
        num_layers: GRU layers (1).
        region_drop: Probability of dropping each region of a training image (0.2; 0 disables).
        text_encoder: "bigru" or "bert" (then `vocab_size`, `word_dim` and `num_layers` are unused).
        bert_path: Folder of the pretrained BERT ("" = bert-base-uncased from the Hugging Face cache).

    The BERT parameters are those named ``text_encoder.bert.*`` (the prefix of a learning-rate group).
    """

    kind = "embedding"
    feature_layout = "regions"
    # The released train.py adds `<mask>` to the vocabulary whatever the augmentation: its row is drawn, so
    # a seed draws the released text side with or without augmentation (never read without it).
    mask_row = "text_encoder.embed.weight"

    def __init__(
        self,
        vocab_size: int,
        feature_dim: int,
        word_dim: int = 300,
        embed_dim: int = 1024,
        num_layers: int = 1,
        region_drop: float = 0.2,
        text_encoder: str = "bigru",
        bert_path: str = "",
    ):
        super().__init__()
        self.check_options(region_drop=region_drop, text_encoder=text_encoder)
        self.region_drop = region_drop
        self.image_encoder = RegionEncoder(feature_dim, embed_dim)
        self.text_encoder: BiGRUTextEncoder | BertTextEncoder = (
            BertTextEncoder(embed_dim, bert_path)
            if text_encoder == "bert"
            else BiGRUTextEncoder(vocab_size, word_dim, embed_dim, num_layers)
        )

    @staticmethod
    def check_options(region_drop: float = 0.2, text_encoder: str = "bigru", **_: object) -> None:
        """ValueError naming the first invalid option."""
        if not 0.0 <= region_drop < 1.0:
            raise ValueError(f"region_drop must be in [0, 1), got {region_drop}")
        if text_encoder not in TEXT_ENCODERS:
            raise ValueError(f"text_encoder must be one of {TEXT_ENCODERS}, got {text_encoder!r}")

    @staticmethod
    def check_pretrained(text_encoder: str = "bigru", bert_path: str = "", **_: object) -> None:
        """FileNotFoundError (one line saying how to provide them) when the BERT weights are not here."""
        if text_encoder == "bert":
            bert_folder(bert_path)

    def caption_ids(
        self,
        tokens: Sequence[np.ndarray],
        texts: Sequence[str],
        augment: AugmentIds | None = None,
    ) -> list[np.ndarray]:
        """BiGRU: the stored vocabulary ids; BERT: ``[CLS] wordpieces [SEP]`` of the texts, `augment`
        changing the wordpieces only."""
        if isinstance(self.text_encoder, BertTextEncoder):
            return self.text_encoder.wordpieces.encode(texts, augment)
        return super().caption_ids(tokens, texts, augment)

    @property
    def caption_space(self) -> CaptionSpace | None:
        """BERT: the wordpieces (augmented word by word, inside [CLS] ... [SEP]); BiGRU: None (stored ids)."""
        if isinstance(self.text_encoder, BertTextEncoder):
            pieces = self.text_encoder.wordpieces
            return CaptionSpace(pieces.vocab_size, pieces.mask_id, pieces.continues, wrapped=True)
        return None

    def encode_images(self, images: Tensor) -> Tensor:
        """(B, R, D) region features → (B, E) unit vectors, pooling every region."""
        _check_regions(images)
        return self.image_encoder(images)

    def encode_kept_regions(self, images: Tensor, keep: Tensor) -> Tensor:
        """(B, R, D) region features → (B, E) unit vectors, pooling the regions `keep` (B, R) marks."""
        _check_regions(images)
        return self.image_encoder(images, keep)

    def encode_captions(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """(B, L) ids from `caption_ids` + (B,) lengths → (B, E) unit vectors."""
        return self.text_encoder(tokens, lengths)


def _check_regions(images: Tensor) -> None:
    if images.dim() != 3:
        raise ValueError(f"vse_inf needs region features (B, R, D), got shape {tuple(images.shape)}")
