"""search_hybrid: the search pipeline of DESIGN.md §5 (vector + BM25, fused with weighted RRF).

Temporal decay, MMR diversity and graph expansion come with later issues and slot in after
fusion.
"""

import logging
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np
from django.conf import settings

from memories import embedding
from memories.models import Memory
from memories.search.fusion import reciprocal_rank_fusion
from memories.search.signals import keyword_ranking, vector_ranking
from memories.selectors import MemoryFilters, memories_of
from memories.validation import clean_query, clean_top_k

logger = logging.getLogger(__name__)

# Each signal contributes this many candidates per requested result.
CANDIDATES_PER_RESULT = 4


@dataclass(frozen=True)
class SearchHit:
    memory: Memory
    score: float
    signals: dict[str, dict]


def search_hybrid(
    *, owner, query: object, top_k: object = None, filters: MemoryFilters | None = None
) -> list[SearchHit]:
    """The owner's memories best matching `query` by meaning and by exact words."""
    query = clean_query(query)
    filters = filters or MemoryFilters()
    top_k = clean_top_k(top_k)
    candidates = top_k * CANDIDATES_PER_RESULT
    # The query is embedded on the inference thread while this one runs the keyword query.
    embedder, pending_vector = _start_query_embedding(query)
    rankings = {"keyword": keyword_ranking(owner_id=owner.pk, query=query, filters=filters, limit=candidates)}
    model_name, query_vector = _finish_query_embedding(embedder, pending_vector)
    if query_vector is not None:
        rankings["vector"] = vector_ranking(
            owner_id=owner.pk, query_vector=query_vector, model=model_name, filters=filters, limit=candidates
        )
    weights = {"vector": settings.GNOSEM_WEIGHT_VECTOR, "keyword": settings.GNOSEM_WEIGHT_KEYWORD}
    fused = reciprocal_rank_fusion(rankings, weights, settings.GNOSEM_RRF_K)[:top_k]
    memories = memories_of(owner).in_bulk([entry.memory_id for entry in fused])
    return [
        SearchHit(memory=memories[entry.memory_id], score=entry.score, signals=entry.signals)
        for entry in fused
        if entry.memory_id in memories  # deleted between ranking and loading
    ]


def _start_query_embedding(query: str) -> tuple[embedding.Embedder | None, Future | None]:
    try:
        embedder = embedding.get_embedder()
        return embedder, embedder.embed_query(query)
    except Exception:
        logger.exception("the embedding model failed to load; answering from keyword search alone")
        return None, None


def _finish_query_embedding(
    embedder: embedding.Embedder | None, pending: Future | None
) -> tuple[str, np.ndarray | None]:
    """(model name, query vector); no vector when the model fails, so keyword results still answer."""
    if embedder is None or pending is None:
        return "", None
    try:
        return embedder.name, pending.result()
    except Exception:
        logger.exception("query embedding failed; answering from keyword search alone")
        return "", None
