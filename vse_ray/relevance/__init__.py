"""Relevance degrees between images and captions (CIDEr, SPICE, Sentence-BERT, TF-IDF+SVD).

Convention: ``R`` has shape (n_images, n_captions); ``R[i, j]`` is the relevance of caption j to image i.
The sources are declared in :mod:`vse_ray.relevance.sources`. The modules that import torch or scikit-learn
load on first use, so that configs and command-line options read that table without them.
"""

from vse_ray.lazy_exports import lazy_exports
from vse_ray.relevance.cider import cider_matrix
from vse_ray.relevance.cider_doc_freq import CiderDocFreq, cider_doc_freq
from vse_ray.relevance.cider_vectors import CiderBatch, CiderReferences, CiderVectors
from vse_ray.relevance.sbert import DEFAULT_SENTENCE_MODEL, SentenceEncoder
from vse_ray.relevance.sources import RELEVANCE_SOURCES, SOURCES, TRAINING_SOURCES, RelevanceSource
from vse_ray.relevance.spice import spice_matrix
from vse_ray.relevance.tokenize import tokenize

_LAZY = {
    "TfidfSvd": "vse_ray.relevance.tfidf_svd",
    "batch_relevance": "vse_ray.relevance.batch",
    "scene_similarity": "vse_ray.relevance.scene",
}
__getattr__ = lazy_exports(__name__, _LAZY)[0]
__all__ = [
    "DEFAULT_SENTENCE_MODEL",
    "RELEVANCE_SOURCES",
    "CiderBatch",
    "CiderDocFreq",
    "CiderReferences",
    "CiderVectors",
    "RelevanceSource",
    "SOURCES",
    "TRAINING_SOURCES",
    "SentenceEncoder",
    "TfidfSvd",
    "batch_relevance",
    "cider_doc_freq",
    "cider_matrix",
    "scene_similarity",
    "spice_matrix",
    "tokenize",
]
