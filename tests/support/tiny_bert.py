"""A tiny randomly initialised BERT folder (config, weights, vocab.txt) standing in for bert-base-uncased."""

from __future__ import annotations

from pathlib import Path

from tests.support.tiny_store import COLOURS, SHAPES, TEMPLATES

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def tiny_bert_words() -> list[str]:
    """The wordpiece vocabulary: the specials at 0-4 ([PAD] = 0, as bert-base-uncased), the tiny store's
    words, and continuation pieces (``box`` + ``##es``)."""
    words = sorted({w for t in TEMPLATES for w in t.split() if "{" not in w} | set(COLOURS) | set(SHAPES))
    return [*SPECIALS, *words, "##es", "##s", ".", ","]


def write_tiny_bert(folder: Path, hidden: int = 16, seed: int = 0) -> Path:
    """Write a one-layer BERT of width `hidden` with the tiny vocabulary under `folder`; return it."""
    import torch
    from transformers import BertConfig, BertModel

    folder.mkdir(parents=True, exist_ok=True)
    words = tiny_bert_words()
    (folder / "vocab.txt").write_text("\n".join(words) + "\n")
    config = BertConfig(
        vocab_size=len(words),
        hidden_size=hidden,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=2 * hidden,
        max_position_embeddings=64,
    )
    torch.manual_seed(seed)
    BertModel(config).save_pretrained(str(folder))
    return folder
