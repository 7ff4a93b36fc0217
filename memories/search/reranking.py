"""Steps after fusion (docs/design.md §5): recency decay, the query's time window, MMR diversity.

Each step multiplies a candidate's score by a factor in (0, 1], so scores stay in (0, 1] and
the breakdown can show what each step did.
"""

import math
from datetime import datetime

import numpy as np

# A memory whose similarity to an already chosen result is below this is not redundant at all;
# above it the discount grows linearly to the full λ at identical vectors. Related but distinct
# memories (two turns of one conversation, two facts about one project) usually sit below it.
REDUNDANCY_FLOOR = 0.8


def recency_factor(created_at: datetime, now: datetime, half_life_days: float, weight: float) -> float:
    """1 - weight + weight x 2^(-age / half-life): a new memory keeps its score, one a half-life
    old loses weight/2 of it, a very old one at most `weight`. Future dates count as new."""
    if half_life_days <= 0 or weight <= 0:
        return 1.0
    age_days = max((now - created_at).total_seconds() / 86_400, 0.0)
    return 1.0 - weight + weight * math.pow(0.5, age_days / half_life_days)


def redundancy(similarity: np.ndarray) -> np.ndarray:
    """0 below REDUNDANCY_FLOOR, rising to 1 for identical vectors."""
    return np.clip((similarity - REDUNDANCY_FLOOR) / (1.0 - REDUNDANCY_FLOOR), 0.0, 1.0)


def diversify(
    scores: list[float], vectors: list[np.ndarray | None], diversity: float, count: int
) -> list[tuple[int, float]]:
    """Maximal marginal relevance, greedily: (index, adjusted score) of up to `count` candidates,
    given best first.

    Each pick maximises score x (1 - diversity x redundancy to the closest pick so far), so
    diversity 0 is pure relevance and 1 pushes exact duplicates to the end. Candidates without a
    vector (not embedded yet) are never counted redundant.
    """
    dimension = next((len(vector) for vector in vectors if vector is not None), 1)
    matrix = np.stack([vector if vector is not None else np.zeros(dimension, np.float32) for vector in vectors])
    similarities = matrix @ matrix.T
    base = np.asarray(scores, dtype=np.float64)
    closest = np.zeros(len(scores))
    available = np.ones(len(scores), dtype=bool)
    chosen: list[tuple[int, float]] = []
    for _ in range(min(count, len(scores))):
        adjusted = np.where(available, base * (1.0 - diversity * redundancy(closest)), -1.0)
        index = int(np.argmax(adjusted))  # the first of equals: ties keep the relevance order
        chosen.append((index, float(adjusted[index])))
        available[index] = False
        closest = np.maximum(closest, similarities[index])
    return chosen
