"""Calibration of memory_count's relevance threshold: which memories are "about" a query.

    .venv/bin/python bench/count.py [--conversations 0,3] [--sets train,heldout,heldout2] [--json]

For every question of LoCoMo (its evidence turns are what it is about; conversations written
through the product as bench/locomo.py does) and of bench/recall.py's sets (its one relevant
memory), the memories `memories.search.about` would count are compared with those: a memory is
about the query when an own chunk's cosine similarity reaches the threshold, or (the `+ words`
rows) when it holds every word of the query. Prints precision, recall and F1 (summed over the
questions of each benchmark) for each threshold, and the threshold whose F1, averaged over the two
benchmarks, is best. Runs on the embedded PostgreSQL under var/bench, like bench/locomo.py.
"""

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.environment import setup_django

setup_django("bench", tasks_immediate=True)

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from pgvector import Vector  # noqa: E402

from accounts.spaces import personal_space_of  # noqa: E402
from bench import locomo, recall  # noqa: E402
from memories.models import Memory  # noqa: E402
from memories.search.about import ABOUT_MIN_SIMILARITY, holding_every_word  # noqa: E402
from memories.search.pipeline import query_embedding  # noqa: E402

THRESHOLDS = [round(0.20 + 0.05 * step, 2) for step in range(13)]  # 0.20 .. 0.80

# Each memory's best own chunk (not its in-context reading), as memories.search.about reads them.
_SIMILARITIES_SQL = """
    SELECT c.memory_id, max(1 - (c.embedding <=> %s::halfvec))
    FROM memories_chunk c
    WHERE c.space_id = %s AND c.model = %s AND NOT (c.position > 0 AND c.start = 0)
    GROUP BY c.memory_id
"""


@dataclass
class Tally:
    true_positive: int = 0
    false_positive: int = 0
    false_negative: int = 0

    def add(self, predicted: set[int], relevant: set[int]) -> None:
        self.true_positive += len(predicted & relevant)
        self.false_positive += len(predicted - relevant)
        self.false_negative += len(relevant - predicted)

    @property
    def precision(self) -> float:
        found = self.true_positive + self.false_positive
        return self.true_positive / found if found else 0.0

    @property
    def recall(self) -> float:
        wanted = self.true_positive + self.false_negative
        return self.true_positive / wanted if wanted else 0.0

    @property
    def f1(self) -> float:
        both = self.precision + self.recall
        return 2 * self.precision * self.recall / both if both else 0.0


def rules() -> list[tuple[float, bool]]:
    return [(threshold, words) for threshold in THRESHOLDS for words in (False, True)]


def score_questions(space_id: int, questions: list[tuple[str, set[int]]], tallies: dict) -> None:
    """Add each question's predicted and relevant memories to the tally of every rule."""
    for question, relevant in questions:
        model_name, vector = query_embedding(question)
        with connection.cursor() as cursor:
            cursor.execute(_SIMILARITIES_SQL, [Vector(vector).to_text(), space_id, model_name])
            similarities = cursor.fetchall()
        holding = holding_every_word(space_ids=[space_id], topic=question)
        by_words = set(Memory.objects.filter(holding).values_list("id", flat=True))
        for threshold, words in rules():
            predicted = {memory_id for memory_id, similarity in similarities if similarity >= threshold}
            tallies[(threshold, words)].add(predicted | by_words if words else predicted, relevant)


def locomo_tallies(conversations: list[int]) -> tuple[dict, int]:
    samples = json.loads(locomo.DATA.read_text())
    tallies = {rule: Tally() for rule in rules()}
    asked = 0
    for index in conversations:
        user, ids, _ = locomo.load_conversation(index, samples[index])
        questions = [
            (question["question"], locomo.evidence_ids(question, ids))
            for question in samples[index]["qa"]
            if question["category"] in locomo.ANSWERABLE
        ]
        questions = [(text, relevant) for text, relevant in questions if relevant]
        score_questions(personal_space_of(user).pk, questions, tallies)
        asked += len(questions)
    return tallies, asked


def recall_tallies(set_names: list[str]) -> tuple[dict, int]:
    tallies = {rule: Tally() for rule in rules()}
    asked = 0
    for name in set_names:
        question_set = recall.question_set(name)
        user, keys = recall.load(question_set.memories, username=f"count-{name}")
        ids = {key: pk for pk, key in keys.items()}
        questions = [
            (question, {ids[key]}) for regime in question_set.regimes.values() for question, key in regime.items()
        ]
        score_questions(personal_space_of(user).pk, questions, tallies)
        asked += len(questions)
    return tallies, asked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", help="comma-separated LoCoMo indexes (0-9); default all")
    parser.add_argument("--sets", default="train,heldout,heldout2", help="bench/recall.py's sets")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on the last line")
    args = parser.parse_args()
    conversations = [int(i) for i in args.conversations.split(",")] if args.conversations else list(range(10))
    call_command("migrate", interactive=False, verbosity=0)
    benchmarks = {
        "locomo": locomo_tallies(conversations),
        "recall": recall_tallies(args.sets.split(",")),
    }
    print(f"{'rule':<14}" + "".join(f"{name + ' P/R/F1':>26}" for name in benchmarks) + f"{'mean F1':>10}")
    report = {}
    for threshold, words in rules():
        row = {name: tallies[(threshold, words)] for name, (tallies, _) in benchmarks.items()}
        mean_f1 = sum(tally.f1 for tally in row.values()) / len(row)
        label = f">= {threshold:.2f}" + (" + words" if words else "")
        cells = "".join(f"{t.precision:>10.3f}{t.recall:>8.3f}{t.f1:>8.3f}" for t in row.values())
        print(f"{label:<14}{cells}{mean_f1:>10.3f}")
        report[label] = {name: [t.precision, t.recall, t.f1] for name, t in row.items()} | {"mean_f1": mean_f1}
    best = max(report, key=lambda label: report[label]["mean_f1"])
    questions = ", ".join(f"{name}: {asked} questions" for name, (_, asked) in benchmarks.items())
    print(f"\nbest: {best} (mean F1 {report[best]['mean_f1']:.3f}); shipped: >= {ABOUT_MIN_SIMILARITY:.2f} + words")
    print(questions)
    if args.json:
        print(json.dumps({"rules": report, "best": best}))


if __name__ == "__main__":
    main()
