"""Relevance degrees between images and captions (CIDEr, SPICE, Sentence-BERT, TF-IDF+SVD).

Convention: ``R`` has shape (n_images, n_captions); ``R[i, j]`` is the relevance of caption j to image i.
The sources are the objects of :mod:`vse_ray.relevance.sources`. The exports that import torch or
scikit-learn load on first use, so that configs, command-line options and metric keys read that table
without them.
"""

from vse_ray.lazy_exports import lazy_exports

# Eager: these functions share their submodule's name, which would shadow a lazy export once imported.
from vse_ray.relevance.cider_doc_freq import cider_doc_freq
from vse_ray.relevance.tokenize import tokenize

_LAZY = {
    "DEFAULT_SENTENCE_MODEL": "vse_ray.relevance.sbert",
    "RELEVANCE_SOURCES": "vse_ray.relevance.sources",
    "SOURCES": "vse_ray.relevance.sources",
    "TRAINING_SOURCES": "vse_ray.relevance.sources",
    "CiderBatch": "vse_ray.relevance.cider_vectors",
    "CiderDocFreq": "vse_ray.relevance.cider_doc_freq",
    "CiderReferences": "vse_ray.relevance.cider_vectors",
    "CiderVectors": "vse_ray.relevance.cider_vectors",
    "RelevanceSource": "vse_ray.relevance.sources",
    "SentenceEncoder": "vse_ray.relevance.sbert",
    "TfidfSvd": "vse_ray.relevance.tfidf_svd",
    "batch_relevance": "vse_ray.relevance.batch",
    "cider_matrix": "vse_ray.relevance.cider",
    "scene_similarity": "vse_ray.relevance.scene",
    "spice_matrix": "vse_ray.relevance.spice",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
__all__ = [
    "CiderBatch",
    "CiderDocFreq",
    "CiderReferences",
    "CiderVectors",
    "DEFAULT_SENTENCE_MODEL",
    "RELEVANCE_SOURCES",
    "RelevanceSource",
    "SOURCES",
    "SentenceEncoder",
    "TRAINING_SOURCES",
    "TfidfSvd",
    "batch_relevance",
    "cider_doc_freq",
    "cider_matrix",
    "scene_similarity",
    "spice_matrix",
    "tokenize",
]
