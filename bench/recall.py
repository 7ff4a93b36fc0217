"""Two retrieval regimes on memories written for this benchmark: paraphrased questions (meaning
must carry them) and exact identifiers (only the words do).

    .venv/bin/python bench/recall.py [--set tuning|train|heldout|heldout2] [--json]

Sets: `tuning` (below) and `train` (bench/data/recall_train.json), training data of the learned
fusion with LoCoMo conversations 0-4; `heldout` (bench/data/recall_heldout.json), held out for
the first fit and training data of the shipped one; `heldout2` (bench/data/recall_heldout2.json),
held out from the shipped fit (docs/benchmarks.md, "Learned fusion").
Memories go in through the product's write and indexing services, five at a time as one
client's session (minutes apart, so neighbouring context applies as it would in use), and are
searched with `search_hybrid` on the real database (var/bench, like bench/locomo.py). Every
memory has a look-alike: identifiers have near twins, paraphrase targets share a topic with a
distractor. Prints hit@1, hit@3 and MRR per regime for each signal alone and the full pipeline.
"""

import argparse
import json
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.environment import setup_django

setup_django("bench", tasks_immediate=True)

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import transaction  # noqa: E402
from django.test.utils import override_settings  # noqa: E402

from bench.locomo import CONFIGURATIONS  # noqa: E402
from memories.search.pipeline import search_hybrid  # noqa: E402
from memories.services import memory_write  # noqa: E402

# key: memory. Keys ending in _twin are the look-alikes.
MEMORIES = {
    "pricing": (
        "Pricing page redesign: we replaced the plan comparison table with a grid of cards, one card per plan, "
        "because people in usability tests were confused by the many plan columns."
    ),
    "onboarding": "The mobile app's onboarding flow was cut from five steps to three after drop-off at step four.",
    "sidebar": "The dashboard sidebar is collapsed by default on small screens so the charts get more room.",
    "vacation": "Maria is on vacation in Lisbon from August 3 to August 17.",
    "cat": "Ana's cat is called Miso and she is allergic to chicken-based food.",
    "coffee": "The user prefers oat milk flat whites and dislikes sugary drinks.",
    "deploy_days": "Production deploys need two approvals in GitHub and only happen Monday to Thursday.",
    "backups": "Postgres backups run nightly at 02:00 UTC and are kept for 30 days in the S3 bucket db-backups-eu.",
    "font": "The marketing site switched its body font from Inter to Source Sans: long articles were hard to read.",
    "allergy": "Tom cannot eat peanuts; order from the Thai place only if they confirm no peanut oil.",
    "standup": "Daily stand-up moved from 9:30 to 10:00 so the Singapore team can join.",
    "laptop": "New hires get a 14-inch MacBook Pro with 32 GB RAM; designers get the 16-inch model.",
    "refunds": "Customer support uses a Zendesk macro for refund requests over 100 EUR.",
    "oncall": "The on-call rotation changes every Wednesday at noon; handover notes go in the #oncall channel.",
    "cert_error": "Chrome shows ERR_CERT_DATE_INVALID on staging because the Let's Encrypt renewal cron stopped.",
    "cert_error_twin": "Firefox shows SEC_ERROR_UNKNOWN_ISSUER on the preview apps behind the corporate proxy.",
    "sha": "Commit 3f9c2ab reverted the retry loop in the payment worker that double-charged some cards.",
    "sha_twin": "Commit 3f9d2ab added idempotency keys to the payment worker's retry loop.",
    "version": "We pinned the HTTP client library to version 4.2.1 because 4.3.0 broke pagination.",
    "version_twin": "The HTTP client library was upgraded to version 4.12.0 in the search service.",
    "ticket": "Ticket OPS-4471 tracks the flaky payment webhook.",
    "ticket_twin": "Ticket OPS-4417 tracks the slow dashboard export.",
    "flight": "Priya flies to the Berlin offsite on LH 2417, landing at 14:05.",
    "flight_twin": "Chen flies to the Berlin offsite on LH 2471, landing at 16:40.",
    "colour": "The brand's primary button colour is #1F6FEB; hover is a darker #1158C7.",
    "colour_twin": "Error banners use #D1242F on a #FFEBE9 background.",
    "error_code": "The importer fails with E_CONN_RESET_42 when the upstream proxy times out.",
    "error_code_twin": "The importer fails with E_CONN_REFUSED_24 when the database is down.",
    "port": "The staging database listens on port 5433 because 5432 is taken by the legacy cluster.",
    "port_twin": "The analytics replica listens on port 6432 behind PgBouncer.",
}
PARAPHRASED = {
    "how was the checkout screen laid out?": "pricing",
    "how is the checkout page laid out?": "pricing",
    "who is away on holiday in Portugal?": "vacation",
    "what pet does Ana have?": "cat",
    "what should I get them from the coffee shop?": "coffee",
    "which days can we ship to prod?": "deploy_days",
    "where are database snapshots stored?": "backups",
    "why did the blog change its typeface?": "font",
    "can Tom have satay?": "allergy",
    "what time is the morning sync?": "standup",
    "what computer does a new designer receive?": "laptop",
    "how do we handle someone asking for their money back?": "refunds",
    "when does the pager duty switch to the next person?": "oncall",
    "why did we shorten the new-user tutorial?": "onboarding",
    "how do the charts get more space on a phone?": "sidebar",
}
IDENTIFIERS = {
    "ERR_CERT_DATE_INVALID": "cert_error",
    "what causes ERR_CERT_DATE_INVALID?": "cert_error",
    "3f9c2ab": "sha",
    "what did 3f9c2ab change?": "sha",
    "4.2.1": "version",
    "why are we on 4.2.1?": "version",
    "OPS-4471": "ticket",
    "status of OPS-4471": "ticket",
    "LH 2417": "flight",
    "who is on LH 2417?": "flight",
    "#1F6FEB": "colour",
    "where do we use #1F6FEB": "colour",
    "E_CONN_RESET_42": "error_code",
    "port 5433": "port",
    "what listens on 5433?": "port",
}
SESSION_SIZE = 5
START = datetime(2025, 1, 6, 9, tzinfo=UTC)


DATA_DIR = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class QuestionSet:
    memories: dict[str, str]
    # Per regime: question -> key of the memory that answers it.
    regimes: dict[str, dict[str, str]]


def question_set(name: str) -> QuestionSet:
    """The named set: `tuning` from this file, the others from bench/data/recall_<name>.json."""
    if name == "tuning":
        return QuestionSet(MEMORIES, {"paraphrased": PARAPHRASED, "identifiers": IDENTIFIERS})
    data = json.loads((DATA_DIR / f"recall_{name}.json").read_text())
    return QuestionSet(data["memories"], {regime: data[regime] for regime in ("paraphrased", "identifiers")})


def load(memories: dict[str, str], username: str = "recall-bench") -> tuple[object, dict[int, str]]:
    """A fresh user holding `memories`, indexed, as sessions of SESSION_SIZE; (user, pk -> key)."""
    User = get_user_model()
    User.objects.filter(username=username).delete()
    user = User.objects.create_user(username=username)
    keys = {}
    with transaction.atomic():
        for position, (key, content) in enumerate(memories.items()):
            session, turn = divmod(position, SESSION_SIZE)
            created_at = START + timedelta(days=session, minutes=2 * turn)
            keys[memory_write(owner=user, content=content, written_by="assistant", created_at=created_at).pk] = key
    return user, keys


def reference_time(memories: dict[str, str]) -> datetime:
    """A day after the last session."""
    return START + timedelta(days=len(memories) // SESSION_SIZE + 1)


def run(questions_set: QuestionSet) -> dict:
    user, keys = load(questions_set.memories)
    now = reference_time(questions_set.memories)
    report: dict = {}
    for name, (overrides, options) in CONFIGURATIONS.items():
        report[name] = {}
        for regime, questions in questions_set.regimes.items():
            ranks = []
            for question, expected in questions.items():
                with override_settings(**overrides):
                    hits = search_hybrid(owner=user, query=question, top_k=10, now=now, **options)
                found = [keys[hit.memory.pk] for hit in hits]
                ranks.append(found.index(expected) + 1 if expected in found else None)
            report[name][regime] = {
                "hit@1": round(sum(rank == 1 for rank in ranks) / len(ranks), 3),
                "hit@3": round(sum(rank is not None and rank <= 3 for rank in ranks) / len(ranks), 3),
                "mrr": round(sum(1 / rank for rank in ranks if rank) / len(ranks), 3),
                "n": len(ranks),
            }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="tuning", choices=["tuning", "train", "heldout", "heldout2"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    call_command("migrate", interactive=False, verbosity=0)
    report = run(question_set(args.set))
    print(f"\n{'configuration':13} {'regime':12} {'n':>3} {'hit@1':>6} {'hit@3':>6} {'MRR':>6}")
    for name, regimes in report.items():
        for regime, row in regimes.items():
            print(f"{name:13} {regime:12} {row['n']:>3} {row['hit@1']:6.3f} {row['hit@3']:6.3f} {row['mrr']:6.3f}")
    if args.json:
        print(json.dumps(report))


if __name__ == "__main__":
    main()
