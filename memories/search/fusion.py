"""Fusion of the signals' rankings into one score per memory, with neighbouring context.

Both signals' candidates are described by a few features (FEATURES: their normalised scores, how
much of the query's words a memory holds, how clearly one memory stands out by meaning, the same
for the memories written just before and after it in its sequence, so that an answer ("Yes, last
Saturday!") is found through the question it answers, and two priors of the memory itself: its
length and whether it is a question). A linear combination of them, learned per embedding model
by bench/fusion_fit.py on LoCoMo conversations 0-4 and recall sets of paraphrased and identifier
questions, scores each candidate, so that a question worded like its memory and a paraphrased one
both find it (docs/benchmarks.md, "Learned fusion"). Like the weighted score fusion it replaced, and unlike
reciprocal rank fusion, it keeps how much better one candidate is than the next.
"""

from dataclasses import dataclass, field

import numpy as np

from memories.indexing.embedding import DEFAULT_MODEL_NAME
from memories.indexing.model_packages import MPNET_NAME
from memories.search.signals import Ranked

# The fused score of the weakest candidate (the best scores 1): it was found.
FUSED_FLOOR = 0.05
# How far (in cosine) the best vector candidate stands above the tenth: below the low mark the
# vector signal is as flat as it usually is on conversational memories; from the high mark on, one
# memory clearly means what the question asks (all-MiniLM-L6-v2's similarity scale).
VECTOR_GAP_FLAT = 0.15
VECTOR_GAP_CLEAR = 0.30
VECTOR_GAP_RANK = 10
# Below this share of the query's terms (by IDF) a keyword match counts proportionally less in the
# "keyword_discounted" feature.
KEYWORD_FULL_COVERAGE = 0.4
# Memories up to this many search terms long count as shorter by the length prior; longer ones all
# count as long (a long memory holds more, but does not answer a question better for its length).
LENGTH_CAP = 16

# Each feature, and the signal whose weight setting scales it (None: both signals together).
FEATURES = {
    "vector": "vector",  # cosine, min-max over the candidates (0 when only words found it)
    "vector_z": "vector",  # cosine in standard deviations from the candidates' mean
    "vector_x_confident": "vector",  # "vector" x vector_confidence x (1 - best coverage)
    "vector_x_doubt": "vector",  # "vector" x (1 - best coverage): no memory holds all the words
    "keyword": "keyword",  # BM25 by the best match
    "keyword_discounted": "keyword",  # "keyword" x coverage / KEYWORD_FULL_COVERAGE, at most 1
    "keyword_x_coverage": "keyword",  # "keyword" x coverage
    "coverage": "keyword",  # the share of the query's terms (by IDF) the memory holds
    "keyword_x_whole": "keyword",  # "keyword" x the best coverage of any candidate
    "both": None,  # found by both signals
    "length": None,  # the memory's length in search terms up to LENGTH_CAP, over LENGTH_CAP
    "length_x_flat": None,  # "length" x (1 - vector_confidence)
    "question": None,  # the memory ends with a question mark
    "neighbour_keyword": "keyword",  # the best "keyword_discounted" of its sequence neighbours
    "neighbour_vector": "vector",  # the best "vector" of its sequence neighbours
}
_KEYWORD_DISCOUNTED, _VECTOR = list(FEATURES).index("keyword_discounted"), list(FEATURES).index("vector")
# Per embedding model, as printed by bench/fusion_fit.py (see its docstring for the data and the
# fit; docs/benchmarks.md, "Learned fusion"): the models' similarity scales differ. A model fitted
# for none (behind an endpoint, in a local folder) uses the default model's.
FUSION_WEIGHTS = {
    DEFAULT_MODEL_NAME: {
        "vector": 0.5220,
        "vector_z": 0.1723,
        "vector_x_confident": 6.1084,
        "vector_x_doubt": 3.1895,
        "keyword": -0.9202,
        "keyword_discounted": 1.6976,
        "keyword_x_coverage": 2.3300,
        "coverage": 1.7274,
        "keyword_x_whole": 0.4588,
        "both": -0.3530,
        "length": 0.8459,
        "length_x_flat": 1.7941,
        "question": -1.1303,
        "neighbour_keyword": 1.6202,
        "neighbour_vector": 0.4109,
    },
    MPNET_NAME: {
        "vector": 0.0554,
        "vector_z": 0.4101,
        "vector_x_confident": 7.1188,
        "vector_x_doubt": 2.4983,
        "keyword": -0.4461,
        "keyword_discounted": 1.1880,
        "keyword_x_coverage": 2.5390,
        "coverage": 1.5670,
        "keyword_x_whole": 0.3013,
        "both": -0.1299,
        "length": 1.1110,
        "length_x_flat": 1.1518,
        "question": -1.2562,
        "neighbour_keyword": 1.5223,
        "neighbour_vector": 0.4207,
    },
}


@dataclass
class Fused:
    memory_id: int
    score: float
    signals: dict[str, dict] = field(default_factory=dict)


def vector_confidence(ranking: list[Ranked]) -> float:
    """0 to 1: how clearly the best vector candidate stands out from the tenth (from the last in a
    store of fewer), counting each reading once (a lent score repeats its successor's)."""
    readings = [item.score for item in ranking if not item.lent]
    if len(readings) < 2:
        return 0.0
    gap = readings[0] - readings[min(VECTOR_GAP_RANK, len(readings)) - 1]
    return min(max((gap - VECTOR_GAP_FLAT) / (VECTOR_GAP_CLEAR - VECTOR_GAP_FLAT), 0.0), 1.0)


def candidate_features(
    rankings: dict[str, list[Ranked]], neighbours: dict[int, tuple[int | None, int | None]]
) -> dict[int, np.ndarray]:
    """Per candidate of either signal, its FEATURES in their order; `neighbours` holds the
    candidates' (previous, next) memories in their sequences."""
    vector = rankings.get("vector", [])
    keyword = rankings.get("keyword", [])
    cosines = {item.memory_id: item.score for item in vector}
    readings = np.array([item.score for item in vector if not item.lent] or [0.0])
    mean, spread = float(readings.mean()), float(readings.std()) or 1.0
    high, low = (max(cosines.values()), min(cosines.values())) if cosines else (0.0, 0.0)
    confidence = vector_confidence(vector)
    bm25 = {item.memory_id: item.score for item in keyword}
    coverage = {item.memory_id: item.coverage for item in keyword}
    best_bm25 = max(bm25.values(), default=1.0) or 1.0
    whole = max(coverage.values(), default=0.0)
    lengths = {item.memory_id: min(item.search_length, LENGTH_CAP) / LENGTH_CAP for item in [*keyword, *vector]}
    questions = {item.memory_id: float(item.is_question) for item in [*keyword, *vector]}
    features = {}
    for memory_id in [*cosines, *(memory_id for memory_id in bm25 if memory_id not in cosines)]:
        cosine = cosines.get(memory_id, low)
        v = (cosine - low) / (high - low) if high > low else float(memory_id in cosines)
        z = (cosine - mean) / spread
        k = bm25.get(memory_id, 0.0) / best_bm25
        c = coverage.get(memory_id, 0.0)
        features[memory_id] = np.array(
            [
                v,
                z,
                v * confidence * (1 - whole),
                v * (1 - whole),
                k,
                k * min(c / KEYWORD_FULL_COVERAGE, 1.0),
                k * c,
                c,
                k * whole,
                float(memory_id in cosines and memory_id in bm25),
                lengths[memory_id],
                lengths[memory_id] * (1 - confidence),
                questions[memory_id],
            ]
        )
    return {
        memory_id: np.append(row, _neighbour_features(features, neighbours.get(memory_id, (None, None))))
        for memory_id, row in features.items()
    }


def _neighbour_features(features: dict[int, np.ndarray], pair: tuple[int | None, int | None]) -> list[float]:
    """The best "keyword_discounted" and the best "vector" of the candidates among `pair`."""
    rows = [features[other] for other in pair if other in features]
    return [max((row[index] for row in rows), default=0.0) for index in (_KEYWORD_DISCOUNTED, _VECTOR)]


def _sequence_pairs(rankings: dict[str, list[Ranked]]) -> dict[int, tuple[int | None, int | None]]:
    """Each candidate's (previous, next) memories in its sequence, as its signals read them."""
    return {item.memory_id: item.neighbours for ranking in rankings.values() for item in ranking}


def fuse(rankings: dict[str, list[Ranked]], weights: dict[str, float], model: str) -> dict[int, Fused]:
    """One score per candidate, from FUSED_FLOOR for the weakest to 1.0 for the best.

    With a query vector and the keyword signal on: the combination of the candidates' features
    learned for the query vector's `model`, each signal's part times its weight (the vector signal
    takes part alone when no memory shares a word with the query: the fit saw such questions too).
    With one signal only (the other's weight 0, or no query vector): that signal's score. A signal
    of weight 0 is left out."""
    rankings = {name: ranking for name, ranking in rankings.items() if weights[name] > 0}
    fused: dict[int, Fused] = {}
    for name, ranking in rankings.items():
        for rank, item in enumerate(ranking, start=1):
            entry = fused.setdefault(item.memory_id, Fused(item.memory_id, 0.0))
            entry.signals[name] = {"rank": rank, "score": round(item.score, 6)}
    if rankings.get("vector") and "keyword" in rankings:
        fitted = FUSION_WEIGHTS.get(model, FUSION_WEIGHTS[DEFAULT_MODEL_NAME])
        theta = np.array(
            [fitted[name] * (weights.get(signal, 1.0) if signal else 1.0) for name, signal in FEATURES.items()]
        )
        scores = {
            memory_id: float(row @ theta)
            for memory_id, row in candidate_features(rankings, _sequence_pairs(rankings)).items()
        }
    else:
        scores = {item.memory_id: item.score for ranking in rankings.values() for item in ranking}
    high, low = max(scores.values(), default=0.0), min(scores.values(), default=0.0)
    for memory_id, score in scores.items():
        # The share first: the best is then exactly 1.0 (0.95 * x / x need not be 0.95).
        share = (score - low) / (high - low) if high > low else 1.0
        fused[memory_id].score = FUSED_FLOOR + (1 - FUSED_FLOOR) * share
    return fused


def expand(fused: dict[int, Fused], graph: list[Ranked], weight: float) -> None:
    """Add graph expansion to the fused scores: each memory it reached gains `weight` times its
    graph score over the best one's (a memory neither signal found enters with that alone), and
    its rank, score and the entities it was reached through in `signals["graph"]`. The scores are
    then scaled so that the best is 1.0 again."""
    best = max((item.score for item in graph), default=0.0)
    if best <= 0:
        return
    for rank, item in enumerate(graph, start=1):
        entry = fused.setdefault(item.memory_id, Fused(item.memory_id, 0.0))
        entry.score += weight * item.score / best
        entry.signals["graph"] = {"rank": rank, "score": round(item.score, 6), "via": list(item.via)}
    top = max((entry.score for entry in fused.values()), default=1.0)
    if top > 1.0:
        for entry in fused.values():
            entry.score /= top
