"""The relevance-source table is the one list of sources: docs, configs and batches read it."""

from __future__ import annotations

from pathlib import Path

import pytest

from vse_ray.data.precompute.config import PrecomputeConfig
from vse_ray.relevance.sources import (
    CIDER_COLUMNS,
    RELEVANCE_SOURCES,
    SOURCES,
    TRAINING_SOURCES,
    docs_table,
)
from vse_ray.train.batches import train_columns
from vse_ray.train.gather import relevance_columns

DOCS = Path(__file__).resolve().parents[3] / "docs" / "relevance.md"


def test_the_docs_table_is_the_registry():
    assert docs_table() in DOCS.read_text()


def test_lists_derived_from_the_registry():
    assert RELEVANCE_SOURCES == ("sbert", "cider", "svd", "spice", "scene")
    assert TRAINING_SOURCES == ("sbert", "cider", "svd", "scene")
    assert PrecomputeConfig().resolved().relevance_sources == ("sbert", "cider", "svd", "scene")
    karpathy = PrecomputeConfig(dataset="karpathy", karpathy_json="j", image_root="r").resolved()
    assert karpathy.relevance_sources == ("sbert", "cider", "svd")
    assert [name for name, s in SOURCES.items() if s.shuffles] == ["sbert", "svd", "scene"]


@pytest.mark.parametrize(
    ("source", "batch", "relevance"),
    [
        (None, [], ["image_id"]),
        ("sbert", ["sbert"], ["image_id", "sbert"]),
        ("svd", ["svd"], ["image_id", "svd"]),
        ("scene", ["scene"], ["image_id", "scene"]),
        ("cider", list(CIDER_COLUMNS), ["image_id", "caption_id"]),
    ],
)
def test_batch_columns_of_each_source(source, batch, relevance):
    assert train_columns(source) == ["caption_id", "image_id", "tokens", "text", *batch]
    assert relevance_columns(source) == relevance
