"""Relevance degrees between images and captions (CIDEr, SPICE, Sentence-BERT, TF-IDF+SVD).

Convention: ``R`` has shape (n_images, n_captions); ``R[i, j]`` is the relevance of caption j to image i.
"""

from vse_ray.relevance.batch import RELEVANCE_SOURCES, batch_relevance
from vse_ray.relevance.cider import cider_matrix
from vse_ray.relevance.cider_doc_freq import CiderDocFreq, cider_doc_freq
from vse_ray.relevance.sbert import DEFAULT_SENTENCE_MODEL, SentenceEncoder
from vse_ray.relevance.scene import scene_similarity
from vse_ray.relevance.spice import spice_matrix
from vse_ray.relevance.tfidf_svd import TfidfSvd
from vse_ray.relevance.tokenize import tokenize

__all__ = [
    "DEFAULT_SENTENCE_MODEL",
    "RELEVANCE_SOURCES",
    "CiderDocFreq",
    "SentenceEncoder",
    "TfidfSvd",
    "batch_relevance",
    "cider_doc_freq",
    "cider_matrix",
    "scene_similarity",
    "spice_matrix",
    "tokenize",
]
