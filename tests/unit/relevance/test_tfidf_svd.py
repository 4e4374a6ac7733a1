from pathlib import Path

import numpy as np
import pytest
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import normalize

from vse_ray.relevance import TfidfSvd

from ._inputs import make_captions

FIXTURE = Path(__file__).parents[2] / "fixtures" / "official" / "lseh_svd_released.npz"


@pytest.fixture(scope="module")
def captions() -> list[str]:
    return make_captions(60, seed=6) + ["Two DOGS, playing!", "42 x y zz"]


def test_transform_equals_sklearn_tfidf_svd_pipeline(captions) -> None:
    model = TfidfSvd(k=8, seed=3).fit(captions)
    pipeline = make_pipeline(
        TfidfVectorizer(stop_words="english", token_pattern=r"(?u)\b[^\W\d_]{3,}\b"),
        TruncatedSVD(n_components=8, random_state=3),
    ).fit(captions)
    expected = normalize(pipeline.transform(captions[:10]))
    got = model.transform(captions[:10])
    assert got.dtype == np.float32 and got.shape == (10, 8) == (10, model.dim)
    np.testing.assert_allclose(got, expected, atol=1e-6)


def test_preprocessing_drops_stop_words_short_words_and_digits(captions) -> None:
    model = TfidfSvd(k=4).fit(captions)
    vocabulary = set(model.vocabulary.tolist())
    assert {"dogs", "playing", "bike"} <= vocabulary
    assert not {"a", "the", "on", "42", "x", "zz"} & vocabulary


def test_k_is_capped_by_vocabulary_minus_one() -> None:
    texts = ["red bike", "blue horse", "green fence", "red horse", "blue bike"]  # 6 terms
    model = TfidfSvd(k=400).fit(texts)
    assert model.dim == 5
    assert model.transform(texts).shape == (5, 5)


def test_rows_are_unit_norm_and_unknown_words_give_zero_rows(captions) -> None:
    model = TfidfSvd(k=6).fit(captions)
    vectors = model.transform(captions[:5] + ["zebra xylophone"])
    np.testing.assert_allclose(np.linalg.norm(vectors[:5], axis=1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(vectors[5], 0.0)


def test_npz_round_trip_holds_arrays_only(captions, tmp_path) -> None:
    model = TfidfSvd(k=5, seed=1).fit(captions)
    model.save(tmp_path / "tfidf_svd.npz")
    with np.load(tmp_path / "tfidf_svd.npz", allow_pickle=False) as stored:  # no object arrays inside
        assert sorted(stored.files) == [
            "components",
            "idf",
            "k",
            "n_iter",
            "seed",
            "stem",
            "unit",
            "vocabulary",
        ]
        assert stored["components"].shape == (5, len(stored["vocabulary"])) == (5, len(stored["idf"]))
    restored = TfidfSvd.load(tmp_path / "tfidf_svd.npz")
    assert (restored.k, restored.seed, restored.dim) == (5, 1, 5)
    np.testing.assert_array_equal(restored.transform(captions), model.transform(captions))
    sklearn = TfidfVectorizer(stop_words="english", token_pattern=r"(?u)\b[^\W\d_]{3,}\b").fit(captions)
    np.testing.assert_allclose(restored.idf, sklearn.idf_)


def test_mismatched_arrays_name_the_file(captions, tmp_path) -> None:
    arrays = TfidfSvd(k=3).fit(captions).to_arrays()
    np.savez(tmp_path / "bad.npz", **{**arrays, "idf": arrays["idf"][:-1]})
    with pytest.raises(ValueError, match=r"bad.npz: .*do not agree"):
        TfidfSvd.load(tmp_path / "bad.npz")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: TfidfSvd(k=0), "k must be >= 1"),
        (lambda: TfidfSvd().transform(["a dog"]), "not fitted"),
        (lambda: TfidfSvd().to_arrays(), "not fitted"),
        (lambda: TfidfSvd().fit(["a an the", "of it"]), "no usable terms"),
        (lambda: TfidfSvd().fit(["horse", "horse horse"]), "vocabulary has 1 term"),
        (lambda: TfidfSvd().fit(["horse", None]), r"texts\[1\] must be a str"),
    ],
)
def test_bad_input_raises_value_error(call, message) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_released_svd_options_match_the_released_script() -> None:
    """Fixture: LSEH's SVDdescriptions.py on 60 captions (tests/fixtures/official/README.md): Porter stems,
    n_iter 100, seed 122, unnormalised vectors."""
    pytest.importorskip("nltk")
    data = np.load(FIXTURE, allow_pickle=False)
    texts = [str(t) for t in data["texts"]]
    model = TfidfSvd(
        k=int(data["k"]), seed=int(data["seed"]), n_iter=int(data["n_iter"]), stem=True, unit=False
    )
    vectors = model.fit(texts).transform(texts)
    np.testing.assert_allclose(vectors, data["svd"], rtol=0, atol=1e-6)
    assert TfidfSvd.from_arrays(model.to_arrays()).transform(texts[:3]).tolist() == vectors[:3].tolist()


def test_options_default_for_files_written_without_them(captions) -> None:
    arrays = TfidfSvd(k=3).fit(captions).to_arrays()
    old = {k: v for k, v in arrays.items() if k not in ("n_iter", "stem", "unit")}
    restored = TfidfSvd.from_arrays(old)
    assert (restored.n_iter, restored.stem, restored.unit) == (5, False, True)
    np.testing.assert_array_equal(
        restored.transform(captions), TfidfSvd.from_arrays(arrays).transform(captions)
    )
