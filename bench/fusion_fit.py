"""Fit the learned fusion (memories/search/fusion.py) on training data and print its weights.

    .venv/bin/python bench/fusion_fit.py [--conversations 0,1,2,3,4] [--sets tuning,train] [--collect]

Training data: LoCoMo conversations 0-4 (5-9 stay out, for reporting) and recall sets of
bench/recall.py (the shipped all-MiniLM-L6-v2 weights: `--sets tuning,train,heldout`;
all-mpnet-base-v2's: the default sets; `heldout2` stays out). For every question, both signals'
candidates are collected as the pipeline collects them (top 10 x CANDIDATES_PER_RESULT each, on
the real database of the model's benchmark folder) with their sequence neighbours and the
memories that answer it, and kept there in fusion-candidates.json (`--collect` collects them
again). The fit is a listwise one: per question, a softmax over its candidates' linear scores,
maximising the probability of the answering memories, the LoCoMo questions weighing 60 % in total
and the recall sets' questions 40 % (`--locomo-share`; with more for the recall sets, their hit@1
stays as it is while LoCoMo's recall falls). Prints the weights to paste into fusion.py and the
training recall@1/@5/@10 of the fused scores before the steps after fusion (the fit's own
figures; the benchmarks report the pipeline).
"""

import argparse
import json
import operator
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.environment import setup_django

setup_django("bench", tasks_immediate=True)

import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402

from accounts.spaces import personal_space_of  # noqa: E402
from bench import locomo, recall  # noqa: E402
from memories.indexing import embedding  # noqa: E402
from memories.indexing.sequences import sequence_neighbours  # noqa: E402
from memories.indexing.vectors import serving_model_name  # noqa: E402
from memories.search.fusion import FEATURES, candidate_features  # noqa: E402
from memories.search.pipeline import CANDIDATES_PER_RESULT  # noqa: E402
from memories.search.signals import Ranked, keyword_ranking, vector_ranking  # noqa: E402
from memories.selectors import MemoryFilters  # noqa: E402

# Per embedding model, like the benchmarks' data folders.
CANDIDATES = settings.GNOSEM_DATA_DIR / "fusion-candidates.json"
LIMIT = locomo.TOP_K * CANDIDATES_PER_RESULT


def rankings_of(user, query: str) -> dict[str, list[Ranked]]:
    model = serving_model_name()
    vector = embedding.get_embedder(model).embed_query(query).result()
    filters = MemoryFilters()
    space_ids = [personal_space_of(user).pk]
    return {
        "keyword": keyword_ranking(space_ids=space_ids, query=query, filters=filters, limit=LIMIT),
        "vector": vector_ranking(space_ids=space_ids, query_vector=vector, model=model, filters=filters, limit=LIMIT),
    }


_DETAILS = operator.attrgetter("coverage", "lent", "search_length", "is_question")


def question_row(regime: str, user, query: str, relevant: set[int]) -> dict:
    rankings = rankings_of(user, query)
    candidates = sorted({item.memory_id for ranking in rankings.values() for item in ranking})
    return {
        "neighbours": sequence_neighbours(personal_space_of(user).pk, candidates),
        "regime": regime,
        "query": query,
        "relevant": sorted(relevant),
        "rankings": {
            # In Ranked's order, created_at left out (not a feature).
            name: [[item.memory_id, item.score, *_DETAILS(item)] for item in ranking]
            for name, ranking in rankings.items()
        },
    }


def collect(conversations: list[int], sets: list[str]) -> list[dict]:
    rows = []
    samples = json.loads(locomo.DATA.read_text())
    for index in conversations:
        user, ids, _ = locomo.load_conversation(index, samples[index])
        for question in samples[index]["qa"]:
            relevant = locomo.evidence_ids(question, ids)
            if relevant and question["category"] in locomo.ANSWERABLE:
                rows.append(question_row("locomo", user, question["question"], relevant))
        print(f"conversation {index}: {len(rows)} questions so far", flush=True)
    for name in sets:
        questions = recall.question_set(name)
        user, keys = recall.load(questions.memories, username=f"fusion-fit-{name}")
        pks = {key: pk for pk, key in keys.items()}
        for regime, asked in questions.regimes.items():
            rows.extend(question_row(regime, user, query, {pks[key]}) for query, key in asked.items())
        get_user_model().objects.filter(pk=user.pk).delete()
    return rows


def as_rankings(row: dict) -> dict[str, list[Ranked]]:
    return {
        name: [Ranked(memory_id, score, None, *details) for memory_id, score, *details in ranking]
        for name, ranking in row["rankings"].items()
    }


def design_matrices(rows: list[dict]) -> list[tuple[np.ndarray, np.ndarray, list[int]]]:
    """Per question: (features per candidate, 1 for an answering candidate, candidate ids)."""
    matrices = []
    for row in rows:
        neighbours = {int(memory_id): tuple(pair) for memory_id, pair in row["neighbours"].items()}
        features = candidate_features(as_rankings(row), neighbours)
        ids = list(features)
        relevant = set(row["relevant"])
        labels = np.array([memory_id in relevant for memory_id in ids], dtype=float)
        matrices.append((np.array([features[memory_id] for memory_id in ids]), labels, ids))
    return matrices


def question_weights(rows: list[dict], locomo_share: float) -> np.ndarray:
    """LoCoMo's questions together weigh `locomo_share`, the recall sets' questions the rest."""
    locomo_count = sum(row["regime"] == "locomo" for row in rows)
    other_count = len(rows) - locomo_count
    return np.array(
        [locomo_share / locomo_count if row["regime"] == "locomo" else (1 - locomo_share) / other_count for row in rows]
    )


def fit(matrices, weights: np.ndarray, l2: float = 1e-3, steps: int = 2000) -> np.ndarray:
    """Listwise softmax weights by gradient descent with Adam; questions with no answering
    candidate teach nothing and are left out."""
    usable = [(x, y, w) for (x, y, _), w in zip(matrices, weights, strict=True) if y.any()]
    width = max(len(y) for _, y, _ in usable)
    x = np.zeros((len(usable), width, len(FEATURES)))
    target = np.zeros((len(usable), width))
    present = np.zeros((len(usable), width), dtype=bool)
    for row, (features, labels, _) in enumerate(usable):
        x[row, : len(labels)] = features
        target[row, : len(labels)] = labels / labels.sum()
        present[row, : len(labels)] = True
    question_weight = np.array([w for _, _, w in usable])[:, None]
    theta = np.zeros(len(FEATURES))
    moment, second = np.zeros_like(theta), np.zeros_like(theta)
    for step in range(1, steps + 1):
        scores = np.where(present, x @ theta, -np.inf)
        p = np.exp(scores - scores.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        gradient = np.einsum("qc,qcf->f", question_weight * (p - target), x) + l2 * theta
        moment = 0.9 * moment + 0.1 * gradient
        second = 0.999 * second + 0.001 * gradient**2
        theta -= 0.02 * (moment / (1 - 0.9**step)) / (np.sqrt(second / (1 - 0.999**step)) + 1e-9)
    return theta


def recall_at(matrices, theta: np.ndarray, rows: list[dict]) -> dict[str, dict[str, float]]:
    figures: dict[str, list] = {}
    for (x, y, _), row in zip(matrices, rows, strict=True):
        order = np.argsort(-(x @ theta), kind="stable")
        total = len(row["relevant"])
        found = y[order]
        figures.setdefault(row["regime"], []).append(
            (found[:1].sum() / total, found[:5].sum() / total, found[:10].sum() / total)
        )
    return {
        regime: dict(zip(("@1", "@5", "@10"), np.round(np.mean(values, axis=0), 3), strict=True))
        for regime, values in figures.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", default="0,1,2,3,4")
    parser.add_argument("--sets", default="tuning,train")
    parser.add_argument("--collect", action="store_true", help="collect the candidates again")
    parser.add_argument("--locomo-share", type=float, default=0.6, help="LoCoMo's share of the questions' weight")
    args = parser.parse_args()
    if args.collect or not CANDIDATES.exists():
        call_command("migrate", interactive=False, verbosity=0)
        rows = collect([int(i) for i in args.conversations.split(",")], args.sets.split(","))
        CANDIDATES.write_text(json.dumps(rows))
    rows = json.loads(CANDIDATES.read_text())
    matrices = design_matrices(rows)
    theta = fit(matrices, question_weights(rows, args.locomo_share))
    print("recall of the fused scores on the training questions:", recall_at(matrices, theta, rows))
    print(f"FUSION_WEIGHTS for {serving_model_name()}:\n{{")
    for name, value in zip(FEATURES, theta, strict=True):
        print(f'    "{name}": {value:.4f},')
    print("}")


if __name__ == "__main__":
    main()
