"""manage.py reindexmemories --failed [--user USER]: give memories and notes that failed to be
embedded another try.

A memory or note is marked failed after GNOSEM_INDEXING_MAX_ATTEMPTS failed attempts (it stays
findable by keyword). Once the cause is fixed (a model that could not load, a database that was
full), this queues them again with their attempts reset; the workers embed them. The dashboard's
"Retry failed" button does the same for one user.
"""

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from accounts.users import describe_account, user_for_command
from memories.indexing import lifecycle as indexing_lifecycle
from memories.indexing.lifecycle import MEMORIES, NOTES


class Command(BaseCommand):
    help = (
        "Queue memories and notes that failed to be embedded (after GNOSEM_INDEXING_MAX_ATTEMPTS attempts) to be "
        "embedded again, with their attempts reset: everyone's, or one user's with --user."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--failed",
            action="store_true",
            help="Retry the memories and notes marked failed (required: it is what this command does).",
        )
        parser.add_argument(
            "--user", help="only the memories and notes of the spaces this user belongs to (username, e-mail or #ID)"
        )

    def handle(self, *args: Any, failed: bool, user: str | None, **options: Any) -> None:
        if not failed:
            raise CommandError(
                "Say what to re-index: --failed queues the memories and notes that failed to be embedded again "
                "(add --user USER for one user's)."
            )
        owner = user_for_command(user) if user else None
        whose = describe_account(owner) if owner else "all accounts"
        if owner:
            self.stderr.write(f"Only the memories and notes of the spaces of {whose}.")
        total = sum(indexing_lifecycle.failed_count(kind, owner=owner) for kind in (MEMORIES, NOTES))
        with tqdm(total=total, unit="item", desc="queueing", file=sys.stderr, disable=None) as bar:
            retried = indexing_lifecycle.failed_retry(owner=owner, progress=bar.update)
        if retried.memories or retried.notes:
            self.stdout.write(
                f"{retried.described('failed')} of {whose} queued to be embedded again; "
                "the workers embed them (`manage.py serve`, or `run_huey`)."
            )
        else:
            self.stdout.write(f"No failed memories or notes in {whose}: nothing to retry.")
