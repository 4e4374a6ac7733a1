"""VSE∞'s BERT caption encoder (Chen et al., CVPR 2021, Sec. 4 "BERT-base"; the official code's BERT
branch): the wordpieces ``[CLS] w_1 ... w_n [SEP]`` of a caption → BERT-base's last hidden states (n + 2, 768)
→ Linear(768, E) per wordpiece → GPO over all n + 2 of them → L2 normalisation.

The pretrained ``bert-base-uncased`` is read from a local folder (``model_params.bert_path``) or the Hugging
Face cache, never downloaded. Its pooler is not built: the reference never uses its output, so it gets no
gradient and no update.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from torch import Tensor, nn

from vse_ray.models.base import AugmentIds
from vse_ray.models.gpo import GPO
from vse_ray.models.normalize import l2_normalize

BERT_NAME = "bert-base-uncased"
BERT_FILES = ("config.json", "vocab.txt")


def bert_folder(bert_path: str = "") -> Path:
    """The folder of the pretrained BERT: `bert_path`, or bert-base-uncased's snapshot in the Hugging Face
    cache; FileNotFoundError in one line saying how to provide the weights."""
    how = (
        f"download them once with `hf download {BERT_NAME}` (into the Hugging Face cache), or set "
        "model_params.bert_path to a folder with its config.json, vocab.txt and weights"
    )
    if bert_path:
        folder = Path(bert_path).expanduser()
        missing = [name for name in BERT_FILES if not (folder / name).is_file()]
        if missing:
            raise FileNotFoundError(f"model_params.bert_path {folder}: no {missing[0]}; {how}")
        return folder
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(BERT_NAME, local_files_only=True))
    except LocalEntryNotFoundError:
        raise FileNotFoundError(
            f"BERT weights: no {BERT_NAME} in the Hugging Face cache {constants.HF_HUB_CACHE}; {how}"
        ) from None


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """Loading without transformers' progress bars and load report (the unused pooler weights)."""
    from transformers.utils import logging

    verbosity, bars = logging.get_verbosity(), logging.is_progress_bar_enabled()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        logging.set_verbosity(verbosity)
        if bars:
            logging.enable_progress_bar()


class Wordpieces:
    """The BERT tokenizer of a folder, as the captions reach the model: ids of wordpieces, then [CLS]/[SEP].

    Attributes:
        vocab_size: Number of wordpiece ids.
        mask_id, cls_id, sep_id: Ids of [MASK], [CLS], [SEP].
        continues: Boolean per id: the wordpiece continues the previous one's word (``##...``).
    """

    def __init__(self, folder: Path):
        from transformers import BertTokenizer

        self.tokenizer = BertTokenizer.from_pretrained(str(folder), local_files_only=True)
        if self.tokenizer.pad_token_id != 0:
            raise ValueError(f"{folder / 'vocab.txt'}: [PAD] must be id 0, got {self.tokenizer.pad_token_id}")
        self.vocab_size = int(self.tokenizer.vocab_size)
        self.mask_id = int(self.tokenizer.mask_token_id)
        self.cls_id, self.sep_id = int(self.tokenizer.cls_token_id), int(self.tokenizer.sep_token_id)
        pieces = self.tokenizer.convert_ids_to_tokens(list(range(self.vocab_size)))
        self.continues = np.array([piece.startswith("##") for piece in pieces])

    def pieces(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Wordpiece ids of each text (lower-cased, split at spaces and punctuation), no special tokens."""
        encoded = self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]
        return [np.asarray(ids, dtype=np.int64) for ids in encoded]

    def encode(
        self,
        texts: Sequence[str],
        augment: AugmentIds | None = None,
    ) -> list[np.ndarray]:
        """``[CLS] pieces [SEP]`` of each text; `augment` (training) changes the pieces before the specials
        are added, as the reference does."""
        pieces = self.pieces(texts)
        if augment is not None:
            pieces = augment(pieces)
        return [np.concatenate([[self.cls_id], p, [self.sep_id]]).astype(np.int64) for p in pieces]


class BertTextEncoder(nn.Module):
    """(B, L) wordpiece ids + (B,) lengths → BERT → Linear(hidden, E) → GPO → L2 norm: (B, E).

    Args:
        embed_dim: Joint embedding size E.
        bert_path: Folder of the pretrained BERT ("" = bert-base-uncased from the Hugging Face cache).
    """

    def __init__(self, embed_dim: int, bert_path: str = ""):
        super().__init__()
        from transformers import BertModel

        folder = bert_folder(bert_path)
        self.wordpieces = Wordpieces(folder)
        with quiet_transformers():
            self.bert = BertModel.from_pretrained(str(folder), add_pooling_layer=False, local_files_only=True)
        self.linear = nn.Linear(self.bert.config.hidden_size, embed_dim)
        self.gpo = GPO()

    def forward(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        # As the reference, attention skips every id 0 ([PAD]), also one drawn by caption replacement,
        # while GPO pools the first `lengths` positions.
        hidden = self.bert(input_ids=tokens, attention_mask=(tokens != 0).long()).last_hidden_state
        return l2_normalize(self.gpo(self.linear(hidden), lengths.clamp(min=1).to(hidden.device)))
