"""Fusion of the signals' rankings into one score per memory, with neighbouring context.

Each signal's scores are normalised to [0, 1] over its candidates (BM25 by the best match,
cosine similarity min-max) and summed with the signals' weights. Unlike reciprocal rank fusion,
which the first design named (docs/design.md §11), this keeps how much better one candidate is
than the next: on LoCoMo it finds more of the evidence (docs/benchmarks.md, "Search quality").

Then a candidate also gains `context_weight` of the fused score of the candidates written just
before and after it in the same sequence (same client, minutes apart): an answer ("Yes, last
Saturday!") is found through the question it answers. Scores stay in [0, 1].
"""

from dataclasses import dataclass, field

from memories.search.signals import Ranked

# The normalised vector score of the least similar candidate.
VECTOR_FLOOR = 0.05
# How far (in cosine) the best vector candidate stands above the tenth: below the low mark the
# vector signal is as flat as it usually is on conversational memories; from the high mark on, one
# memory clearly means what the question asks. Calibrated on all-MiniLM-L6-v2's similarity scale:
# few LoCoMo questions whose best vector match is wrong stand out that far, while right answers to
# short self-contained facts asked in other words usually do.
VECTOR_GAP_FLAT = 0.15
VECTOR_GAP_CLEAR = 0.30
VECTOR_GAP_RANK = 10
# A memory lifted by context stays below this share of the neighbour that lifted it.
CONTEXT_CEILING = 0.9


@dataclass
class Fused:
    memory_id: int
    score: float
    signals: dict[str, dict] = field(default_factory=dict)
    # Score gained from neighbouring memories, already part of `score`.
    context: float = 0.0


def _normalised(name: str, ranking: list[Ranked], full_coverage: float) -> list[float]:
    scores = [item.score for item in ranking]
    if name == "keyword":
        # By the best match, and scaled down for a memory holding less than `full_coverage` of
        # the query's terms (by IDF): sharing one word with a question is weak evidence.
        best = scores[0] or 1.0
        return [
            item.score / best * (min(item.coverage / full_coverage, 1.0) if full_coverage else 1.0) for item in ranking
        ]
    # Min-max, lifted so that the last candidate still counts for something: it was found.
    high, low = max(scores), min(scores)
    return [VECTOR_FLOOR + (1 - VECTOR_FLOOR) * (score - low) / (high - low) if high > low else 1.0 for score in scores]


def vector_confidence(ranking: list[Ranked]) -> float:
    """0 to 1: how clearly the best vector candidate stands out from the tenth, counting each
    reading once (a lent score repeats its successor's) and nothing in a store under ten."""
    readings = [item.score for item in ranking if not item.lent]
    if len(ranking) < VECTOR_GAP_RANK or not readings:
        return 0.0
    gap = readings[0] - readings[min(VECTOR_GAP_RANK, len(readings)) - 1]
    return min(max((gap - VECTOR_GAP_FLAT) / (VECTOR_GAP_CLEAR - VECTOR_GAP_FLAT), 0.0), 1.0)


def query_weights(rankings: dict[str, list[Ranked]], weights: dict[str, float], boost: float) -> dict[str, float]:
    """The signals' weights for this query: the vector weight grows up to (1 + boost) times when
    one memory clearly stands out by meaning and no memory holds all of the query's words. A weak
    keyword match (one shared word in a small store) then no longer outweighs it; an exact match
    (an error code, a ticket number) keeps its full say, and flat similarities change nothing."""
    keyword = rankings.get("keyword", [])
    keyword_doubt = 1.0 - max((item.coverage for item in keyword), default=0.0)
    confidence = vector_confidence(rankings.get("vector", [])) * keyword_doubt
    return {**weights, "vector": weights["vector"] * (1 + boost * confidence)}


def fuse(rankings: dict[str, list[Ranked]], weights: dict[str, float], full_coverage: float) -> dict[int, Fused]:
    """Σ weight x normalised score over the signals, divided by the weights' sum, so first place
    in every weighted signal scores 1.0. A signal of weight 0 is left out."""
    rankings = {name: ranking for name, ranking in rankings.items() if weights[name] > 0 and ranking}
    total_weight = sum(weights[name] for name in rankings) or 1.0
    fused: dict[int, Fused] = {}
    for name, ranking in rankings.items():
        for rank, (item, normalised) in enumerate(
            zip(ranking, _normalised(name, ranking, full_coverage), strict=True), start=1
        ):
            entry = fused.setdefault(item.memory_id, Fused(item.memory_id, 0.0))
            entry.score += weights[name] * normalised / total_weight
            entry.signals[name] = {"rank": rank, "score": round(item.score, 6)}
    return fused


def add_context(fused: dict[int, Fused], neighbours: dict[int, tuple[int | None, int | None]], weight: float) -> None:
    """Give each candidate `weight` x the fused score of its candidate sequence neighbours, but
    never lift it past
    CONTEXT_CEILING x its best neighbour's score: a memory found on its own merits stays above
    the unrelated memory written after it."""
    gains: dict[int, float] = {}
    ceilings: dict[int, float] = {}
    for memory_id, pair in neighbours.items():
        source = fused.get(memory_id)
        if source is None:
            continue
        for neighbour in pair:
            if neighbour in fused:
                gains[neighbour] = gains.get(neighbour, 0.0) + weight * source.score
                ceilings[neighbour] = max(ceilings.get(neighbour, 0.0), CONTEXT_CEILING * source.score)
    for memory_id, gain in gains.items():
        entry = fused[memory_id]
        lifted = max(entry.score, min(entry.score + gain, ceilings[memory_id]))
        entry.context = lifted - entry.score
    for entry in fused.values():
        entry.score += entry.context
