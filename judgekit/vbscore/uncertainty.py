"""Uncertainty measures of the case study: response diversity across replicas."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def response_diversity(texts: Sequence[str]) -> float | None:
    """Mean pairwise cosine distance of response embeddings across replicas.

    Embeddings are TF-IDF vectors (scikit-learn): deterministic, offline and
    dependency-light. A sentence-embedding model would capture paraphrases better.
    """
    texts = [t for t in texts if t and t.strip()]
    if len(texts) < 2:
        return None
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    try:
        vecs = TfidfVectorizer().fit_transform(texts)
    except ValueError:  # only stop words / empty vocabulary
        return None
    sims = cosine_similarity(vecs)
    iu = np.triu_indices(len(texts), k=1)
    return float(np.mean(1.0 - sims[iu]))
