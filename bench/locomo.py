"""LoCoMo retrieval benchmark: turn-level recall of the evidence turns for each question.

    .venv/bin/python bench/locomo.py [--conversations 0,3] [--replay] [--json]

Each conversation is one user; each turn is one memory ("speaker: text", plus the shared photo's
caption when there is one) written through the product's write service with its session's date
as `created_at`, embedded by the product's indexing service, and searched through
`search_hybrid` on the real database (its own embedded PostgreSQL under var/bench;
GNOSEM_DATA_DIR overrides). The question is the query; its evidence turns are the relevant set;
the reference time (`now`) is the last session's date. Prints recall@5, recall@10, hit@10 and
MRR per category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop; 5 adversarial apart),
and for the answerable questions the search reads a negation in ("besides pottery", counted in
their categories too), for each signal alone and for the full pipeline, and search latency; `--json` adds the same
figures as one JSON object on the last line. `--replay` writes every turn a second time before
searching, as an assistant repeating itself would, and prints how many memories that added.
`--split turns` writes each conversation into two spaces of its user (even turns into a team space
the user owns, odd turns into the personal one), `--split sessions` alternates whole sessions
between them; search covers both, as it covers every space a user reaches.
"""

import argparse
import json
import re
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.environment import BASE_DIR, setup_django

setup_django("bench", tasks_immediate=True)

import numpy as np  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import transaction  # noqa: E402
from django.test.utils import override_settings  # noqa: E402

from accounts.models import Membership, Role, Space, SpaceKind  # noqa: E402
from accounts.reach import reach_of  # noqa: E402
from memories.models import IndexingStatus, Memory  # noqa: E402
from memories.search.negation import read_query  # noqa: E402
from memories.search.pipeline import search_hybrid  # noqa: E402
from memories.services import memory_write  # noqa: E402

DATA = BASE_DIR.parent / "shared" / "bench" / "locomo10.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ANSWERABLE = (1, 2, 3, 4)
TOP_K = 10
# Each signal alone: the other signal's weight 0 (so no fusion, and no neighbouring context: it is
# part of the learned fusion), no graph expansion, time window, decay or diversity. "graph" is the
# pipeline with graph expansion at GRAPH_WEIGHT (off by default), to measure it in the same run.
_ALONE = {"GNOSEM_OUTSIDE_TIME_WINDOW": 1.0, "GNOSEM_WEIGHT_GRAPH": 0.0}
GRAPH_WEIGHT = 0.05
CONFIGURATIONS = {
    "vector": ({"GNOSEM_WEIGHT_KEYWORD": 0.0, **_ALONE}, {"half_life_days": 0, "diversity": 0}),
    "keyword": ({"GNOSEM_WEIGHT_VECTOR": 0.0, **_ALONE}, {"half_life_days": 0, "diversity": 0}),
    "graph": ({"GNOSEM_WEIGHT_GRAPH": GRAPH_WEIGHT}, {}),
    "pipeline": ({}, {}),
}
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


def session_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' as a UTC datetime."""
    return datetime.strptime(text, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_text(turn: dict) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares {turn['blip_caption']}]"
    return text


def sessions(conversation: dict) -> list[tuple[datetime, list[dict]]]:
    numbers = sorted(
        int(key.split("_")[1]) for key in conversation if re.fullmatch(r"session_\d+", key) and conversation[key]
    )
    return [(session_date(conversation[f"session_{n}_date_time"]), conversation[f"session_{n}"]) for n in numbers]


SPLITS = ("turns", "sessions")
TEAM_SPACE = "Team"


def write_turns(user: object, sample: dict, split: str | None = None) -> dict[str, int]:
    """Write the conversation's turns as the user's memories (into two spaces with `split`);
    dia_id -> the memory's pk (a turn whose text an earlier turn already had is that memory)."""
    ids = {}
    turn_number = 0
    with transaction.atomic():  # on commit, the (immediate) indexing tasks embed in model batches
        for session_number, (date, turns) in enumerate(sessions(sample["conversation"])):
            for position, turn in enumerate(turns):
                halves = {"turns": turn_number, "sessions": session_number}
                in_team = split is not None and halves[split] % 2 == 0
                memory = memory_write(
                    owner=user,
                    content=turn_text(turn),
                    written_by="locomo",
                    created_at=date + timedelta(seconds=30 * position),  # turns in sequence
                    space=TEAM_SPACE if in_team else None,
                )
                ids[turn["dia_id"]] = memory.pk
                turn_number += 1
    return ids


def load_conversation(index: int, sample: dict, split: str | None = None) -> tuple[object, dict[str, int], datetime]:
    """A fresh user holding the conversation's turns (with `split`, in their personal space and a team
    space they own), indexed; (user, dia_id -> memory pk, last date)."""
    User = get_user_model()
    User.objects.filter(username=f"locomo-{index}").delete()
    Space.objects.filter(kind=SpaceKind.TEAM, memberships__isnull=True).delete()  # left by earlier runs
    user = User.objects.create_user(username=f"locomo-{index}")
    if split:
        team = Space.objects.create(name=TEAM_SPACE, kind=SpaceKind.TEAM)
        Membership.objects.create(space=team, user=user, role=Role.OWNER)
    ids = write_turns(user, sample, split)
    # Another process's worker may hold some of them for a moment.
    deadline = time.monotonic() + 300
    spaces = reach_of(user).space_ids
    while pending := Memory.objects.filter(space_id__in=spaces).exclude(indexing_status=IndexingStatus.INDEXED).count():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{pending} memories of conversation {index} were not indexed")
        time.sleep(0.5)
    return user, ids, sessions(sample["conversation"])[-1][0]


def evidence_ids(question: dict, ids: dict[str, int]) -> set[int]:
    found = {f"D{session}:{turn}" for session, turn in _EVIDENCE.findall(" ".join(question.get("evidence", [])))}
    return {ids[dia_id] for dia_id in found if dia_id in ids}


def score(ranked: list[int], relevant: set[int]) -> dict[str, float]:
    first = next((rank for rank, memory_id in enumerate(ranked, start=1) if memory_id in relevant), None)
    return {
        "recall@5": len(relevant & set(ranked[:5])) / len(relevant),
        "recall@10": len(relevant & set(ranked[:10])) / len(relevant),
        "hit@10": float(first is not None and first <= 10),
        "mrr": 1.0 / first if first else 0.0,
    }


def mean(rows: list[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    return {key: round(float(np.mean([row[key] for row in rows])), 4) for key in rows[0]} | {"n": len(rows)}


def reads_negation(question: str) -> bool:
    """Whether search reads a negation in the question, GNOSEM_READ_NEGATION on or off."""
    with override_settings(GNOSEM_READ_NEGATION=True):
        return bool(read_query(question).negations)


def replay(user: object, sample: dict, ids: dict[str, int], split: str | None) -> int:
    """Write every turn again; returns how many memories that added (none: each is a duplicate of
    the memory its first writing stored)."""
    spaces = reach_of(user).space_ids
    before = Memory.objects.filter(space_id__in=spaces).count()
    again = write_turns(user, sample, split)
    if again != ids:
        raise RuntimeError("a replayed turn did not come back as the memory its first writing stored")
    return Memory.objects.filter(space_id__in=spaces).count() - before


def run(conversation_indexes: list[int], *, replayed: bool = False, split: str | None = None) -> dict:
    samples = json.loads(DATA.read_text())
    results: dict[str, dict[int, list]] = {name: {c: [] for c in CATEGORIES} for name in CONFIGURATIONS}
    latencies: dict[str, list[float]] = {name: [] for name in CONFIGURATIONS}
    # The answerable questions whose reading holds a negation ("besides pottery"), apart.
    negated: dict[str, list] = {name: [] for name in CONFIGURATIONS}
    skipped = turns = added = 0
    load_seconds = 0.0
    for index in conversation_indexes:
        started = time.perf_counter()
        user, ids, last_date = load_conversation(index, samples[index], split)
        load_seconds += time.perf_counter() - started
        if replayed:
            added += replay(user, samples[index], ids, split)
            turns += len(ids)
        for question in samples[index]["qa"]:
            relevant = evidence_ids(question, ids)
            if not relevant:
                skipped += 1
                continue
            for name, (overrides, options) in CONFIGURATIONS.items():
                with override_settings(**overrides):
                    started = time.perf_counter()
                    hits = search_hybrid(owner=user, query=question["question"], top_k=TOP_K, now=last_date, **options)
                    latencies[name].append((time.perf_counter() - started) * 1000)
                row = score([hit.memory.pk for hit in hits], relevant)
                results[name][question["category"]].append(row)
                if question["category"] in ANSWERABLE and reads_negation(question["question"]):
                    negated[name].append(row)
    figures = {
        name: {
            **{CATEGORIES[c]: mean(rows) for c, rows in by_category.items()},
            "overall": mean([row for c in ANSWERABLE for row in by_category[c]]),
            "negation read": mean(negated[name]),
            "latency_ms": {
                "p50": round(float(np.percentile(latencies[name], 50)), 1),
                "p95": round(float(np.percentile(latencies[name], 95)), 1),
            },
        }
        for name, by_category in results.items()
    }
    owners = [f"locomo-{index}" for index in conversation_indexes]
    linked = Memory.objects.filter(space__memberships__user__username__in=owners, duplicate_of__isnull=False)
    return {
        "conversations": conversation_indexes,
        "split": split,
        "near_duplicate_links": linked.count(),
        "questions_without_evidence": skipped,
        "load_seconds": round(load_seconds, 1),
        "replay": {"turns": turns, "memories_added": added} if replayed else None,
        "signals": figures,
        "overall": figures["pipeline"]["overall"],
    }


def print_table(report: dict) -> None:
    split = f", split across two spaces by {report['split']}" if report["split"] else ""
    print(f"\nLoCoMo turn retrieval, conversations {report['conversations']}, top {TOP_K}{split}")
    print(f"{'configuration':10} {'category':13} {'n':>5} {'R@5':>7} {'R@10':>7} {'hit@10':>7} {'MRR':>7}")
    for name, figures in report["signals"].items():
        for category in [*(CATEGORIES[c] for c in ANSWERABLE), "overall", CATEGORIES[5], "negation read"]:
            row = figures.get(category)
            if row:
                print(
                    f"{name:10} {category:13} {row['n']:>5} {row['recall@5']:7.3f} {row['recall@10']:7.3f} "
                    f"{row['hit@10']:7.3f} {row['mrr']:7.3f}"
                )
        latency = figures["latency_ms"]
        print(f"{name:10} {'latency ms':13} p50 {latency['p50']:.1f}  p95 {latency['p95']:.1f}")
    print(
        f"(overall = categories 1-4; {report['questions_without_evidence']} questions without usable evidence "
        f"skipped; writing and indexing took {report['load_seconds']} s)"
    )
    print(f"turns linked as near-duplicates of an earlier turn: {report['near_duplicate_links']}")
    if report["replay"]:
        turns, added = report["replay"]["turns"], report["replay"]["memories_added"]
        print(f"replay: every turn written a second time ({turns:,} turns): {added} memories added")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", help="comma-separated indexes (0-9); default all")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on the last line")
    parser.add_argument("--replay", action="store_true", help="write every turn a second time before searching")
    parser.add_argument("--split", choices=SPLITS, help="write each conversation into two spaces of its user")
    args = parser.parse_args()
    call_command("migrate", interactive=False, verbosity=0)
    samples = json.loads(DATA.read_text())
    indexes = [int(i) for i in args.conversations.split(",")] if args.conversations else list(range(len(samples)))
    report = run(indexes, replayed=args.replay, split=args.split)
    print_table(report)
    if args.json:
        print(json.dumps(report))


if __name__ == "__main__":
    main()
