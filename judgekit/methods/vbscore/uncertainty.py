"""Uncertainty measures of the case study: response diversity across replicas."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

_TOKEN = re.compile(r"(?u)\b\w\w+\b")  # scikit-learn's default token pattern


def response_diversity(texts: Sequence[str]) -> float | None:
    """Mean pairwise cosine distance of a query's responses across replicas.

    Embeddings are TF-IDF vectors with the IDF of the query's own responses, exactly
    as scikit-learn's default ``TfidfVectorizer`` (lowercase, words of 2+ characters,
    smooth IDF ln((1+n)/(1+df)) + 1, l2 norm), computed directly: refitting a
    vectoriser per query cost 18 s of an 80 s cached rerun at full size.
    Deterministic and offline; a sentence-embedding model would capture paraphrases
    better.
    """
    texts = [t for t in texts if t and t.strip()]
    if len(texts) < 2:
        return None
    counts = [Counter(_TOKEN.findall(t.lower())) for t in texts]
    df = Counter(term for c in counts for term in c)
    if not df:  # no word of two or more characters anywhere
        return None
    n = len(texts)
    idf = {term: math.log((1 + n) / (1 + d)) + 1.0 for term, d in df.items()}
    vecs = []
    for c in counts:
        v = {term: tf * idf[term] for term, tf in c.items()}
        norm = math.sqrt(sum(x * x for x in v.values()))
        vecs.append({k: x / norm for k, x in v.items()} if norm > 0 else {})
    total, pairs = 0.0, 0
    for i in range(n):
        for j in range(i + 1, n):
            a, b = (vecs[i], vecs[j]) if len(vecs[i]) <= len(vecs[j]) else (vecs[j], vecs[i])
            total += 1.0 - sum(x * b.get(k, 0.0) for k, x in a.items())
            pairs += 1
    return total / pairs
