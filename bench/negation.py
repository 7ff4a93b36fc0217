"""Negation and exclusion: questions that leave a topic out, over memories where that topic is the
nearest by meaning, written for this benchmark.

    .venv/bin/python bench/negation.py [--set train|heldout] [--json]

Sets: `train` (bench/data/negation_train.json), written with the query reader and read while
building it; `heldout` (bench/data/negation_heldout.json), written apart from the code, harder (the
left-out topic often named only by an alias or a related name), read once for the reader's
general fixes (a colon after the name, a head noun after it, "without counting X") and for none
of the exclusion rules.

Each question is searched four ways: as written with negation not read (search as before this
existed, GNOSEM_READ_NEGATION off), as written (the negation read from the query), its positive
part with `exclude` naming the topic, and its positive part alone (the baseline recall). Prints, per
way: the share of the top 5 results that are about the left-out topic, recall@5 of the memories the
question wants (of those that fit: wanted in the top 5 over min(5, wanted)), and the mean search
time; then the same per negation form (shares, then recalls), and whether the questions without negation ranked the same
with negation read as without. Memories go in through the product's write and indexing services
on the real database (var/bench, like bench/recall.py).
"""

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.environment import setup_django

setup_django("bench", tasks_immediate=True)

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import transaction  # noqa: E402
from django.test.utils import override_settings  # noqa: E402

from memories.search.pipeline import search_hybrid  # noqa: E402
from memories.services import memory_write  # noqa: E402

DATA_DIR = Path(__file__).resolve().parent / "data"
TOP = 5
WAYS = ("as before", "negation read", "exclude", "positive alone")


def load(memories: list[dict], username: str = "negation-bench") -> tuple[object, dict[int, str]]:
    """A fresh user holding the memories, indexed; (user, pk -> id)."""
    users = get_user_model()
    users.objects.filter(username=username).delete()
    user = users.objects.create_user(username=username)
    keys = {}
    with transaction.atomic():
        for memory in memories:
            written = memory_write(owner=user, content=memory["text"], tags=memory.get("tags") or None)
            keys[written.pk] = memory["id"]
    return user, keys


def search(user, keys: dict[int, str], way: str, question: dict) -> tuple[list[str], float]:
    """The ids of the top results searched `way`, and the seconds it took."""
    query = question["positive"] if way in ("exclude", "positive alone") else question["query"]
    exclude = question["exclude"] if way == "exclude" else None
    start = time.perf_counter()
    with override_settings(GNOSEM_READ_NEGATION=way != "as before"):
        hits = search_hybrid(owner=user, query=query, top_k=TOP, exclude=exclude, half_life_days=0)
    return [keys[hit.memory.pk] for hit in hits], time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="train", choices=["train", "heldout"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    call_command("migrate", interactive=False, verbosity=0)
    data = json.loads((DATA_DIR / f"negation_{args.set}.json").read_text())
    about = {memory["id"]: set(memory["about"]) for memory in data["memories"]}
    user, keys = load(data["memories"], f"negation-bench-{args.set}")
    negated = [question for question in data["questions"] if question.get("excluded_topic")]
    plain = [question for question in data["questions"] if not question.get("excluded_topic")]

    rows: dict[str, dict[str, list[float]]] = {way: defaultdict(list) for way in WAYS}
    by_form: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for question in negated:
        wanted, topic = set(question["wanted"]), question["excluded_topic"]
        for way in WAYS:
            found, seconds = search(user, keys, way, question)
            off_topic = sum(topic in about[key] for key in found)
            recall = len(wanted & set(found)) / min(TOP, len(wanted))
            row = rows[way]
            row["about left out"].append(off_topic)
            row["results"].append(len(found))
            row["recall"].append(recall)
            row["ms"].append(seconds * 1000)
            by_form[question["form"]][f"{way} share"].append(off_topic / max(len(found), 1))
            by_form[question["form"]][f"{way} recall"].append(recall)
    same = sum(search(user, keys, "as before", q)[0] == search(user, keys, "negation read", q)[0] for q in plain)

    report = {
        way: {
            "share about left out": round(sum(row["about left out"]) / max(sum(row["results"]), 1), 3),
            "recall@5": round(statistics.mean(row["recall"]), 3),
            "mean ms": round(statistics.mean(row["ms"]), 1),
        }
        for way, row in rows.items()
    }
    forms = {
        form: {name: round(statistics.mean(values), 3) for name, values in columns.items()}
        | {"n": len(columns["as before recall"])}
        for form, columns in sorted(by_form.items())
    }
    print(f"\n{len(data['memories'])} memories, {len(negated)} questions leaving a topic out\n")
    print(f"{'searched':16}{'share of top 5 about the left-out topic':>42}{'recall@5':>10}{'mean ms':>9}")
    for way, row in report.items():
        print(f"{way:16}{row['share about left out']:>42.3f}{row['recall@5']:>10.3f}{row['mean ms']:>9.1f}")
    print("\nper form: share of the top 5 about the left-out topic, and recall@5, searched each way")
    print(f"{'form':14}{'n':>3}" + "".join(f"{way:>16}" for way in WAYS) + "".join(f"{way:>16}" for way in WAYS))
    for form, row in forms.items():
        shares = "".join(f"{row[f'{way} share']:>16.3f}" for way in WAYS)
        recalls = "".join(f"{row[f'{way} recall']:>16.3f}" for way in WAYS)
        print(f"{form:14}{row['n']:>3}{shares}{recalls}")
    print(f"\nquestions without negation ranked the same with negation read: {same} of {len(plain)}")
    if args.json:
        print(json.dumps({"ways": report, "forms": forms, "unchanged without negation": [same, len(plain)]}))


if __name__ == "__main__":
    main()
