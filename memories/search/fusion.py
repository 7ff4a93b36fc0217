"""Weighted reciprocal rank fusion of the signals' rankings."""

from dataclasses import dataclass, field

from memories.search.signals import Ranked


@dataclass
class Fused:
    memory_id: int
    score: float
    signals: dict[str, dict] = field(default_factory=dict)


def reciprocal_rank_fusion(rankings: dict[str, list[Ranked]], weights: dict[str, float], k: int) -> list[Fused]:
    """Σ weight / (k + rank) over the signals, normalised so that first place in every weighted
    signal scores 1.0. Each result remembers its rank and raw score per signal; a signal of
    weight 0 is left out."""
    rankings = {name: ranking for name, ranking in rankings.items() if weights[name] > 0}
    best_possible = sum(weights[name] / (k + 1) for name in rankings) or 1.0
    fused: dict[int, Fused] = {}
    for name, ranking in rankings.items():
        weight = weights[name]
        for rank, item in enumerate(ranking, start=1):
            entry = fused.setdefault(item.memory_id, Fused(item.memory_id, 0.0))
            entry.score += weight / (k + rank) / best_possible
            entry.signals[name] = {"rank": rank, "score": round(item.score, 6)}
    return sorted(fused.values(), key=lambda entry: (-entry.score, -entry.memory_id))
