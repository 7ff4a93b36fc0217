"""Memory hygiene: the same text is stored once, and a corrected fact answers before the one it
corrects.

    .venv/bin/python bench/hygiene.py [--json]

Data: bench/data/hygiene.json (written for this benchmark): 30 corrections (an old fact, the new
fact that replaces it, two paraphrased questions whose answer is the new fact), 25 memories each
with two exact variants (the same text in other case and spacing) and two near variants
(restatements in other words), and 60 unrelated memories. Everything goes in through
`memory_write` and the indexing service, as one client's sessions, on the real database (its own
embedded PostgreSQL under var/bench, like bench/locomo.py).

- Exact duplicates: every text and variant is written once; a write answered with the memory
  already stored is a detected duplicate. Precision and recall of that against the planted exact
  variants (near variants must be stored).
- Near-duplicates: one user holds every text, its near variants (written later), both facts of
  every correction (without `supersedes`) and the unrelated memories; after indexing, the links the
  worker made are judged (a link is right when both memories belong to the same planted text), and
  the linking is redone with other thresholds of similarity and word overlap
  (`memories.hygiene.near_duplicates`) for the sweep: precision and recall of the links, and how many
  corrections were taken for restatements.
- Corrections: two users hold the same memories; one wrote each new fact with `supersedes` naming
  the old, the other did not (what an assistant without corrections leaves behind). For each
  question, whether the new fact ranks above the old in `search_hybrid`'s top 10 (the old absent
  counts as above), and how often the old fact is still among the results.
"""

import argparse
import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.environment import BASE_DIR, setup_django

setup_django("bench", tasks_immediate=True)

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import transaction  # noqa: E402

from memories.hygiene import near_duplicates as linking  # noqa: E402
from memories.models import Memory  # noqa: E402
from memories.search.pipeline import search_hybrid  # noqa: E402
from memories.services import memory_write  # noqa: E402

DATA = BASE_DIR / "bench" / "data" / "hygiene.json"
START = datetime(2025, 1, 6, 9, tzinfo=UTC)
TOP_K = 10
SHIPPED_RULE = (linking.NEAR_DUPLICATE_MIN_SIMILARITY, linking.NEAR_DUPLICATE_MIN_WORD_OVERLAP)


def fresh_user(username: str) -> object:
    User = get_user_model()
    User.objects.filter(username=username).delete()
    return User.objects.create_user(username=username)


def duplicates(data: dict) -> dict:
    """Write every text and variant; count which writes came back as duplicates."""
    user = fresh_user("hygiene-duplicates")
    planted = detected_exact = detected_near = false_alarms = near_total = 0
    with transaction.atomic():
        for number, item in enumerate(data["duplicates"]):
            at = START + timedelta(days=number)
            false_alarms += memory_write(owner=user, content=item["text"], created_at=at).written_again
            for variant in item["exact_variants"]:
                planted += 1
                detected_exact += memory_write(owner=user, content=variant, created_at=at).written_again
            for variant in item["near_variants"]:
                near_total += 1
                detected_near += memory_write(owner=user, content=variant, created_at=at).written_again
        for number, text in enumerate(data["distractors"]):
            false_alarms += memory_write(
                owner=user, content=text, created_at=START + timedelta(hours=number)
            ).written_again
    detected = detected_exact + detected_near + false_alarms
    return {
        "exact_planted": planted,
        "exact_detected": detected_exact,
        "precision": detected_exact / detected if detected else 1.0,
        "recall": detected_exact / planted,
        "near_planted": near_total,
        "near_detected": detected_near,
        "memories_stored": Memory.objects.filter(space__personal_of=user).count(),
    }


# (similarity, word overlap) of the sweep.
SWEEP = tuple((similarity, overlap) for overlap in (0.0, 0.5) for similarity in (0.75, 0.80, 0.82, 0.85, 0.88, 0.90))


def near_duplicates(data: dict) -> dict:
    """Links between restatements, judged at the shipped threshold (made by the worker) and others."""
    user = fresh_user("hygiene-near-duplicates")
    group: dict[int, int] = {}  # memory pk -> planted text it restates
    corrections_of: dict[int, int] = {}  # memory pk -> correction it belongs to
    with transaction.atomic():
        for number, text in enumerate(data["distractors"]):
            memory_write(owner=user, content=text, written_by="assistant", created_at=START + timedelta(hours=number))
        for number, item in enumerate(data["corrections"]):
            for offset, text in ((0, item["old"]), (40, item["new"])):
                memory = memory_write(
                    owner=user, content=text, written_by="assistant", created_at=START + timedelta(days=offset + number)
                )
                corrections_of[memory.pk] = number
        for number, item in enumerate(data["duplicates"]):
            at = START + timedelta(days=number)
            group[memory_write(owner=user, content=item["text"], written_by="assistant", created_at=at).pk] = number
            for offset, variant in enumerate(item["near_variants"], start=1):
                later = at + timedelta(days=60 + offset)
                group[memory_write(owner=user, content=variant, written_by="other", created_at=later).pk] = number
    ids = list(Memory.objects.filter(space__personal_of=user).order_by("created_at", "id").values_list("pk", flat=True))
    planted = len(group) - len(data["duplicates"])
    sweep = {}
    for rule in (None, *SWEEP):
        if rule is not None:
            linking.NEAR_DUPLICATE_MIN_SIMILARITY, linking.NEAR_DUPLICATE_MIN_WORD_OVERLAP = rule
            linking.near_duplicates_link(ids)
        links = dict(
            Memory.objects.filter(space__personal_of=user, duplicate_of__isnull=False).values_list(
                "pk", "duplicate_of_id"
            )
        )
        right = sum(
            group.get(memory) is not None and group.get(memory) == group.get(original)
            for memory, original in links.items()
        )
        taken_for_restatements = sum(
            memory in corrections_of and original in corrections_of for memory, original in links.items()
        )
        sweep["worker" if rule is None else f">= {rule[0]:.2f}, overlap >= {rule[1]:.1f}"] = {
            "links": len(links),
            "precision": right / len(links) if links else 1.0,
            "recall": right / planted,
            "corrections_linked": taken_for_restatements,
        }
    linking.NEAR_DUPLICATE_MIN_SIMILARITY, linking.NEAR_DUPLICATE_MIN_WORD_OVERLAP = SHIPPED_RULE
    return {"planted": planted, "sweep": sweep}


def corrections(data: dict, *, superseding: bool) -> dict:
    """The share of questions whose current fact ranks above the one it corrects."""
    user = fresh_user(f"hygiene-corrections-{'on' if superseding else 'off'}")
    pairs = []
    with transaction.atomic():
        for number, text in enumerate(data["distractors"]):
            memory_write(owner=user, content=text, written_by="assistant", created_at=START + timedelta(hours=number))
        for number, item in enumerate(data["corrections"]):
            old = memory_write(
                owner=user, content=item["old"], written_by="assistant", created_at=START + timedelta(days=number)
            )
            new = memory_write(
                owner=user,
                content=item["new"],
                written_by="assistant",
                created_at=START + timedelta(days=40 + number),
                supersedes=[str(old.public_id)] if superseding else None,
            )
            pairs.append((old.pk, new.pk, item["questions"]))
    now = START + timedelta(days=80)
    asked = current_first = old_shown = new_found = 0
    for old, new, questions in pairs:
        for question in questions:
            ranked = [hit.memory.pk for hit in search_hybrid(owner=user, query=question, top_k=TOP_K, now=now)]
            asked += 1
            new_found += new in ranked
            old_shown += old in ranked
            current_first += new in ranked and (old not in ranked or ranked.index(new) < ranked.index(old))
    return {
        "questions": asked,
        "current_first": current_first / asked,
        "current_found": new_found / asked,
        "outdated_shown": old_shown / asked,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on the last line")
    args = parser.parse_args()
    call_command("migrate", interactive=False, verbosity=0)
    data = json.loads(DATA.read_text())
    found = duplicates(data)
    near = near_duplicates(data)
    with_supersedes, without = corrections(data, superseding=True), corrections(data, superseding=False)
    print("\nexact duplicates (the same text in other case or spacing), written through memory_write")
    print(
        f"  planted {found['exact_planted']}, detected {found['exact_detected']}: precision {found['precision']:.3f},"
        f" recall {found['recall']:.3f}; near variants (other words) taken for the same text"
        f" {found['near_detected']} of {found['near_planted']}; memories stored {found['memories_stored']}"
    )
    print(
        f"\nnear-duplicates by meaning ({near['planted']} restatements planted; shipped: similarity >="
        f" {SHIPPED_RULE[0]}, word overlap >= {SHIPPED_RULE[1]})"
    )
    print(f"  {'rule':28} {'links':>6} {'precision':>10} {'recall':>8} {'corrections linked':>19}")
    for label, row in near["sweep"].items():
        figures = f"{row['links']:6} {row['precision']:10.3f} {row['recall']:8.3f} {row['corrections_linked']:19}"
        print(f"  {label:28} {figures}")
    print(f"\ncorrections ({with_supersedes['questions']} questions, top {TOP_K})")
    print(f"  {'':24} {'current first':>14} {'current found':>14} {'outdated shown':>15}")
    for label, figures in (("with supersedes", with_supersedes), ("without (both stored)", without)):
        print(
            f"  {label:24} {figures['current_first']:14.3f} {figures['current_found']:14.3f}"
            f" {figures['outdated_shown']:15.3f}"
        )
    if args.json:
        corrected = {"with": with_supersedes, "without": without}
        print(json.dumps({"duplicates": found, "near_duplicates": near, "corrections": corrected}))


if __name__ == "__main__":
    main()
