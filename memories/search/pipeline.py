"""search_hybrid: the search pipeline of docs/design.md §5.

Vector and BM25 rankings of the (filtered) memories of the spaces the caller reaches are fused (a learned combination of
the candidates' features and their sequence neighbours', memories.search.fusion); the fused score is
then multiplied by a recency factor, by a factor for memories outside a time window the query
names ("last Thursday"), and by MMR's redundancy discount. Graph expansion adds to the fused scores
of the memories sharing entities with the best candidates (memories.graph.linking), before those factors.
What the search leaves out (`exclude`, or a negation read in the query: memories.search.negation)
is judged on the candidates before MMR (memories.search.exclusion).
"""

import logging
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from django.conf import settings
from django.utils import timezone

from accounts.reach import Actor, Reach, reach_of
from memories.indexing import embedding
from memories.indexing.vectors import serving_model_name
from memories.models import Memory
from memories.search.exclusion import Excluded, judge_memory
from memories.search.fusion import Fused, expand, fuse
from memories.search.negation import read_query
from memories.search.reranking import diversify, recency_factor
from memories.search.signals import Ranked, graph_ranking, keyword_ranking, memory_vectors, vector_ranking
from memories.search.time_expressions import TimeWindow, parse_time_window
from memories.selectors import MemoryFilters, memories_by_id, memories_of
from memories.validation import clean_exclude, clean_fraction, clean_half_life_days, clean_top_k

logger = logging.getLogger(__name__)

# Each signal contributes this many candidates per requested result.
CANDIDATES_PER_RESULT = 4
# MMR picks the results among this many of the best candidates per requested result.
DIVERSITY_POOL_PER_RESULT = 2
# Graph expansion starts from this many of the best fused candidates.
GRAPH_SEEDS = 5
# A search that leaves things out gathers this many times the candidates: the left-out ones go
# (twice measured best of 1-3 on bench/negation.py).
EXCLUSION_POOL = 2


@dataclass(frozen=True)
class SearchHit:
    memory: Memory
    score: float
    # Per signal: {"rank", "score"} of the signals that found the memory.
    signals: dict[str, dict]
    # How the score came about: the signals, their fused score, each factor applied after fusion.
    explanation: dict
    # Its near-duplicates (or its original and the original's other near-duplicates): shown once, as this hit.
    duplicates: list[Memory] = field(default_factory=list)


def search_hybrid(
    *,
    owner: Actor,
    query: object,
    top_k: object = None,
    filters: MemoryFilters | None = None,
    half_life_days: object = None,
    diversity: object = None,
    min_score: object = None,
    exclude: object = None,
    now: datetime | None = None,
) -> list[SearchHit]:
    """The memories of the spaces the caller reaches best matching `query` by meaning and by exact words.

    `exclude` (words, identifiers, tags or names) and the negations read in the query ("not
    Postgres") leave out the memories about those things (memories.search.exclusion); the rest of
    the query is searched. `half_life_days` (default GNOSEM_HALF_LIFE_DAYS, 0 = no decay) sets how fast older memories
    lose their recency boost; `diversity` (MMR's λ, default GNOSEM_DIVERSITY, 0 = pure relevance)
    how strongly near-duplicates of better results are pushed down; `min_score` drops weaker
    results. `now` is the reference time for decay and time expressions (default: now).
    """
    reading = read_query(query, clean_exclude(exclude))
    query = reading.searched
    reach = reach_of(owner)
    filters = filters or MemoryFilters()
    top_k = clean_top_k(top_k)
    half_life_days = clean_half_life_days(half_life_days, default=settings.GNOSEM_HALF_LIFE_DAYS)
    diversity = clean_fraction("diversity", diversity, default=settings.GNOSEM_DIVERSITY)
    min_score = clean_fraction("min_score", min_score, default=0.0)
    now = now or timezone.now()
    weights = {
        "vector": settings.GNOSEM_WEIGHT_VECTOR,
        "keyword": settings.GNOSEM_WEIGHT_KEYWORD,
        "graph": settings.GNOSEM_WEIGHT_GRAPH,
    }
    per_signal = top_k * CANDIDATES_PER_RESULT * (EXCLUSION_POOL if reading.excluded else 1)

    # The query (and each left-out thing) is embedded on the inference threads while this one runs
    # the keyword query.
    embedder, pending_vector = _start_query_embedding(query) if weights["vector"] > 0 else (None, None)
    pending_things = {thing: _start_query_embedding(thing) for thing in reading.excluded} if embedder else {}
    rankings = {}
    if weights["keyword"] > 0:
        rankings["keyword"] = keyword_ranking(space_ids=reach.space_ids, query=query, filters=filters, limit=per_signal)
    model_name, query_vector = _finish_query_embedding(embedder, pending_vector)
    if query_vector is not None:
        rankings["vector"] = vector_ranking(
            space_ids=reach.space_ids, query_vector=query_vector, model=model_name, filters=filters, limit=per_signal
        )
    by_memory = fuse(rankings, weights, model_name)
    if weights["graph"] > 0 and by_memory:
        rankings["graph"] = _graph_expansion(reach, by_memory, filters, per_signal)
        expand(by_memory, rankings["graph"], weights["graph"])
    created = {item.memory_id: item.created_at for ranking in rankings.values() for item in ranking}
    groups = {item.memory_id: item.group for ranking in rankings.values() for item in ranking if item.group}
    window = parse_time_window(query, now)
    candidates = [
        _weighed(entry, created[entry.memory_id], window, now, half_life_days)
        for entry in sorted(by_memory.values(), key=lambda entry: (-entry.score, -entry.memory_id))
    ]
    candidates.sort(key=lambda candidate: -candidate.score)
    candidates = _one_per_group(candidates, groups)
    if reading.excluded:
        thing_vectors = {thing: _finish_query_embedding(*pending)[1] for thing, pending in pending_things.items()}
        candidates = _without_excluded(reach, candidates, reading.excluded, model_name, query_vector, thing_vectors)
    if diversity > 0 and len(candidates) > 1:
        candidates = _diversified(reach, candidates[: top_k * DIVERSITY_POOL_PER_RESULT], model_name, diversity, top_k)
    chosen = [candidate for candidate in candidates[:top_k] if candidate.score >= min_score]
    memories, duplicates = _load_with_groups(
        reach,
        [candidate.memory_id for candidate in chosen],
        [groups[candidate.memory_id] for candidate in chosen if candidate.memory_id in groups],
    )
    return [
        SearchHit(
            memory=memories[candidate.memory_id],
            score=candidate.score,
            signals=candidate.explanation["signals"],
            explanation={**candidate.explanation, "score": round(candidate.score, 6)},
            duplicates=[
                member
                for member in (duplicates.get(groups[candidate.memory_id], []) if candidate.memory_id in groups else [])
                if member.pk != candidate.memory_id
            ],
        )
        for candidate in chosen
        if candidate.memory_id in memories  # deleted between ranking and loading
    ]


def _graph_expansion(reach: Reach, fused: dict[int, Fused], filters: MemoryFilters, limit: int) -> list[Ranked]:
    """The graph signal's ranking from the best GRAPH_SEEDS fused candidates."""
    seeds = sorted(fused.values(), key=lambda entry: (-entry.score, -entry.memory_id))[:GRAPH_SEEDS]
    return graph_ranking(
        space_ids=reach.space_ids, seeds={entry.memory_id: entry.score for entry in seeds}, filters=filters, limit=limit
    )


@dataclass
class _Candidate:
    memory_id: int
    score: float
    explanation: dict


def _one_per_group(candidates: list[_Candidate], groups: dict[int, int]) -> list[_Candidate]:
    """The candidates with only the best of each group of near-duplicates (memories.hygiene.near_duplicates)."""
    seen: set[int] = set()
    kept = []
    for candidate in candidates:
        group = groups.get(candidate.memory_id)
        if group not in seen:
            kept.append(candidate)
        if group is not None:
            seen.add(group)
    return kept


def _load_with_groups(
    reach: Reach, memory_ids: list[int], originals: list[int]
) -> tuple[dict[int, Memory], dict[int, list[Memory]]]:
    """The chosen memories by id, and the current members of each of these groups of
    near-duplicates by the group's original, read in one query."""
    memories: dict[int, Memory] = {}
    members: dict[int, list[Memory]] = {}
    chosen, groups = set(memory_ids), set(originals)
    for memory in memories_by_id(reach, [*memory_ids, *originals], groups=originals).values():
        if memory.pk in chosen:
            memories[memory.pk] = memory
        group = memory.duplicate_of_id or memory.pk
        if group in groups and memory.superseded_by_id is None:
            members.setdefault(group, []).append(memory)
    return memories, members


def _weighed(
    entry: Fused, created_at: datetime, window: TimeWindow | None, now: datetime, half_life_days: float
) -> _Candidate:
    """The fused score times the recency factor and the time-window factor."""
    explanation: dict = {"fused": round(entry.score, 6), "signals": entry.signals}
    score = entry.score
    if half_life_days:
        factor = recency_factor(created_at, now, half_life_days, settings.GNOSEM_RECENCY_WEIGHT)
        explanation["recency"] = round(factor, 6)
        score *= factor
    if window and settings.GNOSEM_OUTSIDE_TIME_WINDOW < 1:
        factor = 1.0 if window.contains(created_at) else settings.GNOSEM_OUTSIDE_TIME_WINDOW
        explanation["time_window"] = {"phrase": window.phrase, "factor": factor}
        score *= factor
    return _Candidate(entry.memory_id, score, explanation)


def _without_excluded(
    reach: Reach,
    candidates: list[_Candidate],
    things: tuple[str, ...],
    model_name: str,
    question: np.ndarray | None,
    thing_vectors: dict[str, np.ndarray | None],
) -> list[_Candidate]:
    """The candidates not about the left-out things, best first, those kept in passing or pushed
    down explained; `thing_vectors` are the things' embeddings (None where the model failed)."""
    excluded = [Excluded.of(thing) for thing in things]
    ids = [candidate.memory_id for candidate in candidates]
    judged = memories_of(reach).select_related(None).prefetch_related(None)
    memories = judged.only("id", "space_id", "public_id", "content", "content_optimized", "tags").in_bulk(ids)
    vectors = (
        memory_vectors(space_ids=reach.space_ids, memory_ids=ids, model=model_name) if question is not None else {}
    )
    embedded = {thing: vector for thing, vector in thing_vectors.items() if vector is not None}
    verdicts = {
        memory_id: judge_memory(
            memory,
            excluded,
            memory_vector=vectors.get(memory_id),
            thing_vectors=embedded,
            question_vector=question,
        )
        for memory_id, memory in memories.items()
    }
    kept = []
    for candidate in candidates:
        verdict = verdicts.get(candidate.memory_id)
        if verdict is None or verdict.left_out:
            continue
        if verdict.why:
            candidate.explanation["exclusion"] = {**verdict.why, "factor": verdict.factor}
        kept.append(_Candidate(candidate.memory_id, candidate.score * verdict.factor, candidate.explanation))
    kept.sort(key=lambda candidate: -candidate.score)
    return kept


def _diversified(
    reach: Reach, candidates: list[_Candidate], model_name: str, diversity: float, count: int
) -> list[_Candidate]:
    """MMR's picks, best first, each with its redundancy discount applied and explained."""
    ids = [candidate.memory_id for candidate in candidates]
    vectors = memory_vectors(space_ids=reach.space_ids, memory_ids=ids, model=model_name) if model_name else {}
    picks = diversify(
        [candidate.score for candidate in candidates],
        [vectors.get(candidate.memory_id) for candidate in candidates],
        diversity,
        count,
    )
    chosen = []
    for index, adjusted in picks:
        candidate = candidates[index]
        candidate.explanation["diversity"] = round(adjusted / candidate.score, 6) if candidate.score else 1.0
        chosen.append(_Candidate(candidate.memory_id, adjusted, candidate.explanation))
    return chosen


def query_embedding(query: str) -> tuple[str, np.ndarray | None]:
    """(model name, the query's vector); no vector when the model fails."""
    return _finish_query_embedding(*_start_query_embedding(query))


def _start_query_embedding(query: str) -> tuple[embedding.AnyEmbedder | None, Future | None]:
    model_name = serving_model_name()
    try:
        embedder = embedding.get_embedder(model_name)
        return embedder, embedder.embed_query(query)
    except Exception:
        logger.exception("the embedding model failed to load; answering from keyword search alone")
        return None, None


def _finish_query_embedding(
    embedder: embedding.AnyEmbedder | None, pending: Future | None
) -> tuple[str, np.ndarray | None]:
    """(model name, query vector); no vector when the model fails, so keyword results still answer."""
    if embedder is None or pending is None:
        return "", None
    try:
        return embedder.name, pending.result()
    except Exception:
        logger.exception("query embedding failed; answering from keyword search alone")
        return "", None
