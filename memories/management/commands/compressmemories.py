"""manage.py compressmemories: compress long memories now, in this process, with a progress bar.

For memories written while compression was off or whose compression failed; `--status` and
`--all` choose others (after changing the model, say). Same service as the worker's task.
"""

import time
from collections import Counter
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from accounts.users import describe_account, user_for_command
from memories.compression import llm
from memories.compression import services as compression
from memories.models import CompressionStatus

DEFAULT_STATUSES = [CompressionStatus.DISABLED, CompressionStatus.LLM_ERROR]
SELECTABLE_STATUSES = [status for status in CompressionStatus.values if status != CompressionStatus.SKIPPED_SHORT]
# The model looks down (every retry spent) this many memories in a row: stop rather than fail the rest.
MAX_FAILURES_IN_A_ROW = 3


class Command(BaseCommand):
    help = (
        "Compress long memories with the configured chat model: by default those written while "
        "compression was off (disabled) or whose compression failed (llm_error)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--user", help="Only the memories of the spaces this user belongs to (username, e-mail or #ID)."
        )
        parser.add_argument(
            "--status",
            action="append",
            choices=SELECTABLE_STATUSES,
            help="Only memories with this compression status; repeat for several (default: disabled, llm_error).",
        )
        parser.add_argument(
            "--all",
            action="store_true",
            dest="every_memory",
            help=(
                "Every memory over 400 characters, compressed ones included (e.g. after changing the model); "
                "each new outcome replaces the old one."
            ),
        )

    def handle(
        self, *args: Any, user: str | None, status: list[str] | None, every_memory: bool, **options: Any
    ) -> None:
        if not llm.llm_configured():
            raise CommandError(
                "Compression is off: set GNOSEM_LLM_BASE_URL and GNOSEM_LLM_MODEL (see docs/compression.md)."
            )
        if every_memory and status:
            raise CommandError("Give --all or --status, not both.")
        owner = None
        if user is not None:
            owner = user_for_command(user)
            self.stderr.write(f"Only the memories of the spaces of {describe_account(owner)}.")
        statuses = None if every_memory else (status or DEFAULT_STATUSES)
        memory_ids = list(compression.memories_to_compress(statuses=statuses, owner=owner).values_list("id", flat=True))
        outcomes: Counter[str] = Counter()
        failures_in_a_row = 0
        for memory_id in tqdm(memory_ids, desc="compressing", unit="memory"):
            run = _compress_with_retries(memory_id)
            outcomes[run.status if run else "changed or deleted meanwhile"] += 1
            failures_in_a_row = failures_in_a_row + 1 if run and run.status == CompressionStatus.LLM_ERROR else 0
            if run is not None and failures_in_a_row == MAX_FAILURES_IN_A_ROW:  # only failed runs count
                self.stdout.write(_summary(outcomes, len(memory_ids)))
                raise CommandError(
                    f"Stopped: the model failed on {MAX_FAILURES_IN_A_ROW} memories in a row (last: {run.reason}). "
                    "Memories done so far keep their outcome; fix the endpoint and run the command again."
                )
        self.stdout.write(_summary(outcomes, len(memory_ids)))


def _compress_with_retries(memory_id: int) -> compression.CompressionRun | None:
    """One memory, retried after transient errors with the worker's back-off."""
    attempt = 1
    while True:
        run = compression.memory_compress(memory_id=memory_id, attempt=attempt, only_pending=False)
        if run is None or run.retry_in is None:
            return run
        time.sleep(run.retry_in)
        attempt += 1


def _summary(outcomes: Counter[str], total: int) -> str:
    if not total:
        return "No memories to compress."
    counts = ", ".join(f"{status} {count}" for status, count in outcomes.most_common())
    return f"{sum(outcomes.values())} of {total} memories: {counts}."
